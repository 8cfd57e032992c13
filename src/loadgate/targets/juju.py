"""The Juju target: the k6 charm's actions drive the load; the model's Prometheus and Loki
answer for the pipeline, over TLS verified with the CA of the model's `ca` application.

A scenario whose load goes to Loki itself (loki-push, logql-query) is given the followed Loki
unit's URL as `target=` (its in-cluster name, which its certificate carries: k6 trusts the CA
through the charm's receive-ca-cert), unless the spec names one. While a run goes on, the
charm's get-results has no figures yet (k6's summary comes at the end): progress is read from
k6's own counters of the scenario's unit (`k6_<sent>_total`, `k6_<accepted>_total`, remote
written by the charm) in the model's Prometheus."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import jubilant

from loadgate.contract.scenarios import OTLP_LOGS, Scenario
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure import queries as q
from loadgate.measure.queries import LokiAPI, PrometheusAPI, QueryError
from loadgate.runner.target import NamesCollectorSeries, NamesStandinSeries, Progress, RunError

from ..juju import actions, deployed, endpoints
from ..juju import scope as loki_scope
from ..juju.endpoints import UnitEndpoint
from ..juju.model import TRACES_STANDIN_APP, run_action

# The collector charm scrapes its own metrics once a minute; Prometheus scrapes Loki about as
# often. A fresh sample can take that long plus the remote-write delay.
SCRAPE_TIMEOUT = 150.0
_POLL_EVERY = 5.0
# How long past its duration a run may go on before the target gives up on it.
_OVERRUN = 10 * 60.0


class JujuTarget(NamesCollectorSeries, NamesStandinSeries):
    name = "juju"

    def __init__(
        self,
        juju: jubilant.Juju,
        *,
        k6_app: str = "k6",
        ca_app: str = "ca",
        prometheus_app: str = "prometheus",
        loki_app: str = "loki",
        otelcol_app: str = "otelcol",
        traces_app: str = TRACES_STANDIN_APP,
        workdir: Path | None = None,
        poll_every: float = _POLL_EVERY,
        scrape_timeout: float = SCRAPE_TIMEOUT,
        prometheus_api: Callable[[UnitEndpoint, Path], PrometheusAPI] = endpoints.prometheus_api,
    ):
        self.juju = juju
        self.k6_app, self.otelcol_app, self.traces_app = k6_app, otelcol_app, traces_app
        self.model = endpoints.model_name(juju.model)
        self.poll_every = poll_every
        status = juju.status()
        # What is set up is undone in reverse, by close() or at once if a later step fails: the
        # CA's own folder (when none is given) and the two HTTP clients.
        with contextlib.ExitStack() as undo:
            folder = workdir
            if folder is None:
                folder = Path(tempfile.mkdtemp(prefix="loadgate-juju-"))
                undo.callback(shutil.rmtree, folder, ignore_errors=True)
            self.ca_file = endpoints.write_ca(endpoints.fetch_ca(juju, ca_app), folder)
            self.prometheus_unit = endpoints.unit_endpoints(status, prometheus_app, self.model)[0]
            self.loki_units = endpoints.unit_endpoints(status, loki_app, self.model)
            self._prom = prometheus_api(self.prometheus_unit, self.ca_file)
            undo.callback(self._prom.client.close)
            self.loki_copy = loki_scope.choose_loki_copy(
                self._prom,
                loki_app,
                self.loki_units,
                endpoints.leader(status, loki_app),
                timeout=scrape_timeout,
            )
            self.loki_unit = self.loki_copy.unit
            self.scope = loki_scope.scope_for(self._exporter(status), self.loki_copy)
            self._loki = endpoints.loki_api(self.loki_unit, self.ca_file)
            undo.callback(self._loki.client.close)
            self._undo = undo.pop_all()
        self._run_id = ""
        self._out_dir: Path | None = None
        self._started = 0.0
        self._total = 0.0
        self._last_poll = 0.0
        self._last: Progress | None = None
        self._final: actions.RunStatus | None = None
        self._kind: Scenario = OTLP_LOGS

    # ---- where the figures come from (juju/scope.py states the rule) ----------------------

    def _exporter(self, status: jubilant.Status) -> str:
        """The collector exporter that pushes to the followed Loki unit: the same name on every
        collector unit, read from each unit's own config."""
        names = {
            endpoints.exporter_for(
                endpoints.loki_exporters(endpoints.read_collector_config(self.juju, unit.unit)),
                self.loki_unit,
            )
            for unit in endpoints.unit_endpoints(status, self.otelcol_app, self.model)
        }
        if len(names) != 1:
            raise endpoints.EndpointError(
                f"the collector units push to {self.loki_unit.unit} through differently named "
                f"exporters ({sorted(names)}); scale {self.otelcol_app} to one unit"
            )
        return names.pop()

    def collector_series(self) -> dict[str, str]:
        """The collector under test's own series: the collector charm labels its metrics with
        its application, and another collector of the model (the traces stand-in) remote-writes
        series of the same names into the same Prometheus."""
        return {"juju_application": self.otelcol_app}

    def standin_series(self) -> tuple[dict[str, str], str]:
        """The traces backend stand-in's series (overlays/traces-standin.yaml): its
        application's, as the collector charm labels them."""
        return {"juju_application": self.traces_app}, f"application {self.traces_app}"

    def prometheus(self) -> PrometheusAPI:
        return self._prom

    def loki(self) -> LokiAPI:
        return self._loki

    def loki_apis(self) -> dict[str, LokiAPI]:
        """A client per Loki unit: each unit holds its own full copy of the logs."""
        return {u.unit: endpoints.loki_api(u, self.ca_file) for u in self.loki_units}

    # ---- the load -------------------------------------------------------------------------

    def leader(self) -> str:
        return endpoints.leader(self.juju.status(), self.k6_app)

    def loki_url(self) -> str:
        """The followed Loki unit as k6 reaches it in the cluster: the name its certificate
        carries."""
        return f"https://{self.loki_unit.hostname}:{endpoints.LOKI_PORT}"

    def _load_spec(self, spec: RunSpec) -> RunSpec:
        """The spec start-load gets: a scenario whose target is no OTLP receiver goes to the
        followed Loki unit unless the spec names a target (the figures and the LogQL count
        follow that unit)."""
        if spec.target or spec.kind.otlp is not None:
            return spec
        return replace(spec, target=self.loki_url())

    def start(self, spec: RunSpec, out_dir: Path) -> None:
        spec = self._load_spec(spec)
        self._kind = spec.kind
        try:
            params = actions.start_load_params(spec)
        except actions.ActionResultError as exc:
            raise RunError(str(exc)) from None
        results = run_action(self.juju, self.leader(), "start-load", params)
        _save(out_dir / "start-load.json", results)
        run_id = actions.parse_start(results)
        if run_id != spec.run_id:
            raise RunError(
                f"the k6 charm started run {run_id!r}, not {spec.run_id!r}: its start-load must "
                "take `run-id` so that Loki's read-back and the results folder match the run"
            )
        self._run_id, self._out_dir = run_id, out_dir
        self._started = self._last_poll = time.monotonic()
        self._total = spec.duration_s
        self._final = None
        self._last = Progress(0.0, self._total, 0, 0, 0.0, "started")

    @property
    def final(self) -> actions.RunStatus | None:
        """get-results of the last run once it ended (with per-unit figures when several)."""
        return self._final

    def _get_results(self) -> actions.RunStatus:
        results = run_action(self.juju, self.leader(), "get-results", {"run-id": self._run_id})
        return actions.parse_results(results)

    def poll(self) -> Progress | None:
        if self._final is not None or not self._run_id:
            return None
        now = time.monotonic()
        elapsed = now - self._started
        if now - self._last_poll < self.poll_every and self._last is not None:
            return Progress(elapsed, self._total, *_counts(self._last), self._last.detail)
        self._last_poll = now
        state = self._get_results()
        if state.finished:
            self._final = state
            return None
        if elapsed > self._total + _OVERRUN:
            raise RunError(
                f"run {self._run_id} still running {elapsed:.0f}s after it started "
                f"(duration {self._total:.0f}s)"
            )
        client = state.client
        # Until the units report figures, k6's own counters in Prometheus (a summary always
        # has an error rate).
        error_rate = client.error_rate if client else None
        sent, accepted = (
            (client.records_sent, client.records_accepted) if client else self._live_counts()
        )
        self._last = Progress(
            elapsed,
            self._total,
            sent,
            accepted,
            error_rate if error_rate is not None else 0.0,
            f"{self.k6_app}: {state.status}",
        )
        return self._last

    def _live_counts(self) -> tuple[int, int]:
        """The run's units sent and accepted so far, from k6's counters of its scenario as the
        charm remote-writes them (0 while Prometheus has none)."""
        counts: list[int] = []
        for metric in (self._kind.sent_metric, self._kind.accepted_metric):
            expr = q.counter_total(f"k6_{metric}_total", {"run_id": self._run_id})
            try:
                value = self._prom.instant(expr)
            except QueryError:
                value = None
            counts.append(int(value or 0))
        return counts[0], counts[1]

    def finish(self) -> ClientFigures:
        while self._final is None:
            if self.poll() is not None:
                time.sleep(self.poll_every)
        final = self._final
        if self._out_dir is not None:
            _save(self._out_dir / "get-results.json", final.raw)
        if final.status == "error":
            raise RunError(f"k6 run {final.run_id} ended in error: {final.error or '(no detail)'}")
        if final.status == "stopped":
            raise RunError(f"k6 run {final.run_id} was stopped before its end")
        if final.client is None:
            raise RunError(f"k6 run {final.run_id} is {final.status} but has no client figures")
        return final.client

    def stop(self) -> None:
        if self._run_id and self._final is None:
            run_action(self.juju, self.leader(), "stop-load")

    def environment(self) -> dict[str, Any]:
        status = self.juju.status()
        charms = {
            name: {
                "charm": app.charm_name,
                "channel": app.charm_channel,
                "revision": app.charm_rev,
                "units": len(app.units),
            }
            for name, app in status.apps.items()
        }
        return {
            "model": self.model,
            "charms": charms,
            "prometheus": _where(self.prometheus_unit),
            "loki": _where(self.loki_unit),
            "scope": {
                "exporter": self.scope.exporter,
                "loki": dict(self.scope.loki),
                "loki_units_scraped": self.loki_copy.scraped,
                "why": self.loki_copy.reason,
                "rule": "one copy: the exporter to the followed Loki unit, that unit's counters "
                "and its LogQL count (loadgate.juju.scope)",
            },
        }

    def close(self) -> None:
        self._undo.close()


def _counts(p: Progress) -> tuple[int, int, float]:
    return p.records_sent, p.records_accepted, p.error_rate


def _where(unit: UnitEndpoint) -> dict[str, str]:
    return {"unit": unit.unit, "address": unit.address, "tls_name": unit.hostname}


def _save(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def labelled_for_model(spec: RunSpec, status: jubilant.Status, otelcol_app: str) -> RunSpec:
    """The spec labelled with what the model runs (revision and channel of the collector from
    `juju status`); a label the user gave that says otherwise is refused (MismatchError)."""
    found = deployed.labels({"otelcol": deployed.read(status, otelcol_app)})
    deployed.refuse_conflicting_labels(spec.labels, found)
    return RunSpec.from_params({**spec.to_params(), "labels": {**found, **spec.labels}})
