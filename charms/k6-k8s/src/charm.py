#!/usr/bin/env python3
"""The k6 charm: runs loadgate's k6 scenarios as parameterised actions.

This module wires Juju events to the workload (workload.py), the peer coordination
(cluster.py, segments.py) and the relations (targets.py, remote_write.py, certificate transfer,
dashboards.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path

import ops
from charmlibs.interfaces.certificate_transfer import CertificateTransferRequires
from ops import pebble

import runs
from cluster import Cluster
from dashboards import DashboardProvider
from loadgate_contract.params import PARAMS
from loadgate_contract.scenarios import BY_NAME as SCENARIOS
from loadgate_contract.scenarios import OTLP_LOGS, without_filled_defaults
from loadgate_contract.spec import RUN_ID_RULE, RunSpec, SpecError, is_run_id
from peers import START_WINDOW_S, RunRequest, UnitReport
from remote_write import RemoteWriteRequirer
from report import RunReport, action_results, run_report, status_message
from runs import Outcome, RunRecord
from segments import participants, segment_of
from targets import NO_TARGET, default_target, no_target, otlp_http_base
from workload import K6Workload, WorkloadError, scripts_problem

logger = logging.getLogger(__name__)

CONTAINER = "k6"
# The scenario files, under src/ because charmcraft's uv plugin packs only src/ and lib/.
SCRIPTS = Path("src", "k6")
# The model's proxy settings (model-config juju-http-proxy …), as k6 (Go's net/http) reads them.
PROXY_ENV = {
    "JUJU_CHARM_HTTP_PROXY": "HTTP_PROXY",
    "JUJU_CHARM_HTTPS_PROXY": "HTTPS_PROXY",
    "JUJU_CHARM_NO_PROXY": "NO_PROXY",
}
LOST = (
    "this unit's run state was lost (the pod restarted during the run without its storage); "
    "its share of the load has no figures"
)


def proxy_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """k6's proxy variables from the model's proxy settings Juju gives the charm."""
    return {ours: environ[juju] for juju, ours in PROXY_ENV.items() if environ.get(juju)}


class K6Charm(ops.CharmBase):
    def __init__(self, framework: ops.Framework):
        super().__init__(framework)
        self.container = self.unit.get_container(CONTAINER)
        self.cluster = Cluster(self.model)
        self.ca_transfer = CertificateTransferRequires(self, "receive-ca-cert")
        self.remote_write = RemoteWriteRequirer(self, "send-remote-write")
        self.dashboards = DashboardProvider(self, "grafana-dashboard")
        observe = framework.observe
        observe(self.on[CONTAINER].pebble_ready, self._on_pebble_ready)
        observe(self.on[CONTAINER].pebble_check_failed, self._on_reconcile)
        observe(self.on.update_status, self._on_reconcile)
        observe(self.on[self.cluster.relation_name].relation_changed, self._on_reconcile)
        observe(self.on[self.cluster.relation_name].relation_departed, self._on_reconcile)
        observe(self.ca_transfer.on.certificate_set_updated, self._on_ca_changed)
        observe(self.ca_transfer.on.certificates_removed, self._on_ca_changed)
        observe(self.on.start_load_action, self._on_start_load)
        observe(self.on.stop_load_action, self._on_stop_load)
        observe(self.on.get_results_action, self._on_get_results)
        observe(self.on.collect_unit_status, self._on_collect_status)

    @property
    def workload(self) -> K6Workload:
        return K6Workload(self.container.pebble)

    @property
    def instance(self) -> str:
        return self.unit.name.replace("/", "-")

    @property
    def scripts_dir(self) -> Path:
        return self.charm_dir / SCRIPTS

    # ---- events ------------------------------------------------------------------------------
    def _on_pebble_ready(self, _: ops.PebbleReadyEvent) -> None:
        try:
            self.workload.push_scripts(self.scripts_dir)
        except WorkloadError as exc:
            logger.error("%s", exc)  # the status says Blocked; start-load fails with the reason
        self._write_ca()
        self._reconcile()

    def _on_ca_changed(self, _: ops.EventBase) -> None:
        if self.container.can_connect():
            self._write_ca()

    def _on_reconcile(self, _: ops.EventBase) -> None:
        self._reconcile()

    def _on_start_load(self, event: ops.ActionEvent) -> None:
        if not self.unit.is_leader():
            event.fail(f"start-load runs on the leader unit: juju run {self.app.name}/leader …")
            return
        if not self.container.can_connect():
            event.fail("the k6 container is not ready yet (Pebble unreachable); try again soon")
            return
        # Juju filled in the schema's defaults of otlp-logs' parameters whatever the scenario.
        defaults = {p.name: p.default for p in PARAMS}
        params = without_filled_defaults(dict(event.params), defaults)
        scenario = SCENARIOS.get(str(params.get("scenario") or OTLP_LOGS.name), OTLP_LOGS)
        if not params.get("target"):
            params["target"] = default_target(self, scenario)
        try:
            spec = RunSpec.from_params(params)
        except SpecError as exc:
            event.fail("invalid parameters: " + "; ".join(f"{p}: {m}" for p, m in exc.problems))
            return
        if not spec.target:
            event.fail(no_target(spec.kind))
            return
        busy = self._run_going_on()
        if busy:
            event.fail(f"run {busy} is going on; stop it with stop-load or wait for it to end")
            return
        units = participants(self.cluster.unit_names)
        try:
            self._start(spec, units)
        except WorkloadError as exc:
            event.fail(str(exc))
            return
        self.cluster.set_request(RunRequest(spec.run_id, spec.to_params(), units, time.time()))
        self._publish_report()
        event.set_results({"run-id": spec.run_id, "units": str(len(units)), "target": spec.target})

    def _on_stop_load(self, event: ops.ActionEvent) -> None:
        if not self.container.can_connect():
            event.fail("the k6 container is not ready yet (Pebble unreachable); try again soon")
            return
        stopped = self.workload.stop()
        request = self.cluster.request()
        everywhere = (
            self.unit.is_leader()
            and request is not None
            and not request.stopped
            and (stopped == request.run_id or self._peers_still_on(request))
        )
        if everywhere and request is not None:
            self.cluster.set_request(
                RunRequest(request.run_id, request.params, request.units, request.requested, True)
            )
        self._publish_report()
        run_id = stopped or (request.run_id if everywhere and request else None)
        if run_id is None:
            event.set_results({"message": "no run is going on"})
            return
        scope = "every unit" if everywhere else "this unit (stop-load on the leader stops all)"
        event.set_results({"run-id": run_id, "stopped": scope})

    def _on_get_results(self, event: ops.ActionEvent) -> None:
        if not self.container.can_connect():
            event.fail("the k6 container is not ready yet (Pebble unreachable); try again soon")
            return
        wanted = str(event.params.get("run-id") or "")
        if wanted and not is_run_id(wanted):
            event.fail(f"run-id: {RUN_ID_RULE}; got {wanted!r}")
            return
        run_id = wanted or self._last_run_id()
        if run_id is None:
            event.fail("no run on this unit yet; start one with start-load")
            return
        report = self._report(run_id, combine=self.unit.is_leader())
        if report is None:
            last = self._last_run_id()
            event.fail(f"run-id: no run {run_id!r} on this unit (the last run is {last})")
            return
        self._publish_report()
        event.set_results(action_results(report))

    def _on_collect_status(self, event: ops.CollectStatusEvent) -> None:
        try:
            if not self.container.can_connect():
                event.add_status(ops.WaitingStatus("waiting for the k6 container (Pebble)"))
                return
            problem = scripts_problem(self.scripts_dir)
            if problem:
                logger.error("%s", problem)
                event.add_status(ops.BlockedStatus("the charm lacks its k6 scenarios: repack it"))
            last = self._last_run_id()
            report = self._report(last, combine=True) if last else None
        except pebble.ConnectionError:
            event.add_status(ops.WaitingStatus("waiting for the k6 container (Pebble)"))
            return
        if report is None:
            if otlp_http_base(self) is None:
                event.add_status(ops.BlockedStatus(NO_TARGET))
            else:
                event.add_status(ops.ActiveStatus("idle"))
            return
        running = sum(1 for s in report.units.values() if s == runs.RUNNING)
        event.add_status(ops.ActiveStatus(status_message(report, running, len(report.units))))

    # ---- helpers -----------------------------------------------------------------------------
    def _write_ca(self) -> str | None:
        return self.workload.write_ca_bundle(self.ca_transfer.get_all_certificates())

    def _start(self, spec: RunSpec, units: list[str]) -> None:
        if spec.target is None:
            raise WorkloadError(NO_TARGET)
        workload = self.workload
        workload.push_scripts(self.scripts_dir)
        workload.start(
            spec,
            target=spec.target,
            instance=self.instance,
            segment=segment_of(self.unit.name, units),
            remote_write_url=self.remote_write.url,
            ca_file=self._write_ca(),
            extra_env=proxy_environment(os.environ),
        )

    def _run_going_on(self) -> str | None:
        """The id of a run that is still going on here or on a peer, else None.

        A peer's `running` report counts until its run's deadline: after it, the peer is
        named as missing, and it no longer holds up the next run.
        """
        workload = self.workload
        if workload.is_running():
            return workload.last_run_id()
        request = self.cluster.request()
        now = time.time()
        for report in self.cluster.reports().values():
            if report.status != runs.RUNNING:
                continue
            if request is None or (report.run_id == request.run_id and not request.overdue(now)):
                return report.run_id
        return None

    def _peers_still_on(self, request: RunRequest) -> bool:
        """Whether a peer of the request runs it, or has not reported on it yet."""
        reports = self.cluster.reports()
        for unit in request.units:
            if unit == self.unit.name or unit not in self.cluster.unit_names:
                continue
            report = reports.get(unit)
            if report is None or report.run_id != request.run_id or report.status == runs.RUNNING:
                return True
        return False

    def _last_run_id(self) -> str | None:
        """This unit's last run: from its storage, else from the report it published."""
        last = self.workload.last_run_id()
        if last is not None:
            return last
        own = self.cluster.own_report()
        return own.run_id if own is not None else None

    def _outcome(self, run_id: str) -> Outcome | None:
        """The run on this unit, from its record on storage.

        Without a record (the storage was replaced, e.g. by a refresh from a revision without
        storage), from the report this unit published for the leader's request, which Juju keeps.
        """
        outcome = self.workload.outcome(run_id)
        if outcome is not None:
            return outcome
        own, request = self.cluster.own_report(), self.cluster.request()
        if (
            own is None
            or request is None
            or own.run_id != run_id
            or request.run_id != run_id
            or self.unit.name not in request.units
        ):
            return None
        status, detail = own.status, own.detail
        if status == runs.RUNNING:  # no k6 of this run can be running here without its record
            status, detail = runs.ERROR, LOST
        segment = segment_of(self.unit.name, request.units)
        record = RunRecord(
            run_id=run_id,
            params=request.params,
            segment=(segment.index, segment.count),
            instance=self.instance,
            started=request.requested,
            stopped=request.stopped,
            status=status,
            detail=detail,
        )
        return Outcome(run_id, status, own.figures, detail, record)

    def _report(self, run_id: str, *, combine: bool) -> RunReport | None:
        outcome = self._outcome(run_id)
        if outcome is None:
            return None
        if not combine:
            return run_report(outcome, self.unit.name)
        return run_report(
            outcome,
            self.unit.name,
            request=self.cluster.request(),
            peer_reports=self.cluster.reports(),
            present=self.cluster.unit_names,
        )

    def _publish_report(self) -> None:
        outcome = self.workload.outcome()
        if outcome is None:
            return
        request = self.cluster.request()
        if (
            request is not None
            and self.unit.name in request.units
            and outcome.run_id != request.run_id
        ):
            return  # keep this unit's report on the requested run (e.g. why it did not start)
        report = UnitReport(outcome.run_id, outcome.status, outcome.figures, outcome.detail)
        self.cluster.publish(report)

    def _reconcile(self) -> None:
        """Follow the leader's run request (start or stop this unit's segment); report."""
        if not self.container.can_connect():
            return
        self._follow_request()
        self._publish_report()

    def _follow_request(self) -> None:
        """Start this unit's segment of the requested run once, and never again.

        A run this unit started (its record is on storage) or reported on (its databag, which
        Juju keeps across pod restarts) is never started again, and its reported outcome stands.
        """
        request = self.cluster.request()
        if request is None or self.unit.name not in request.units:
            return
        workload = self.workload
        if workload.record(request.run_id) is not None:
            # Started already (the leader starts its own segment in the action).
            if (
                request.stopped
                and workload.last_run_id() == request.run_id
                and workload.is_running()
            ):
                workload.stop()
            return
        own = self.cluster.own_report()
        if own is not None and own.run_id == request.run_id:
            if own.status == runs.RUNNING:  # it ran here, but its record is gone
                self.cluster.publish(UnitReport(request.run_id, runs.ERROR, None, LOST))
            return
        if request.stopped:
            detail = "stopped by stop-load before this unit started"
            self.cluster.publish(UnitReport(request.run_id, runs.STOPPED, None, detail))
            return
        if time.time() - request.requested > START_WINDOW_S:
            detail = f"the start request arrived more than {START_WINDOW_S:.0f}s late"
            self.cluster.publish(UnitReport(request.run_id, runs.ERROR, None, detail))
            return
        try:
            self._start(RunSpec.from_params(request.params), request.units)
        except (WorkloadError, SpecError) as exc:
            logger.error("cannot start run %s: %s", request.run_id, exc)
            self.cluster.publish(UnitReport(request.run_id, runs.ERROR, None, str(exc)))


if __name__ == "__main__":  # pragma: nocover
    ops.main(K6Charm)
