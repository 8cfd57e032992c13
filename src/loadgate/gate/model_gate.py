"""The gate on one Juju model: the bundle deployed (or found) around the charm under test, the
Juju target, and the gate runs through loadgate's own run flow.

A model is deployed once: the first gate run on a model with none of the bundle's applications
deploys it; a model that already holds the bundle is reused when it runs what the plan asks (else
the run is refused, with both in the message); a model holding part of it is refused.
"""

from __future__ import annotations

import logging
from pathlib import Path

import jubilant

from loadgate import paths
from loadgate.contract.scenarios import OTLP_TRACES
from loadgate.contract.spec import RunSpec
from loadgate.juju import deploy, model, settings, staging
from loadgate.juju import deployed as deployed_mod
from loadgate.records import result as results
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.targets.juju import SCRAPE_TIMEOUT, JujuTarget

from . import k6_charm, saturation, saturation_settings
from .plan import TRACES_OVERLAY, Plan
from .result import GateResult
from .summary import summarize

_DRAIN_TIMEOUT = 300.0
_log = logging.getLogger("loadgate.gate")


class GateError(RuntimeError):
    """The gate cannot run on this model (a partial or mismatched deployment, a failed
    deployment); the message says what and what to do."""


class ModelGate:
    """The gate's state on one model: what it runs, the target, the results folder."""

    def __init__(self, juju: jubilant.Juju, plan: Plan, results_root: Path) -> None:
        self.juju = juju
        self.plan = plan
        self.results_root = results_root
        self._deployed: dict[str, deployed_mod.DeployedCharm] | None = None
        self._target: JujuTarget | None = None

    # ---- the deployment ---------------------------------------------------------------------

    def deployed(self) -> dict[str, deployed_mod.DeployedCharm]:
        """What the model runs, once the bundle is deployed (or found) and settled."""
        if self._deployed is None:
            self._deployed = self._deploy_or_reuse()
        return self._deployed

    def _deploy_or_reuse(self) -> dict[str, deployed_mod.DeployedCharm]:
        requests = self.plan.requests()
        status = self.juju.status()
        present = sorted(set(status.apps) & set(model.BUNDLE_APPS))
        if not present:
            self._deploy()
        elif len(present) != len(model.BUNDLE_APPS):
            missing = sorted(set(model.BUNDLE_APPS) - set(status.apps))
            raise GateError(
                f"model {self.juju.model} holds only part of the bundle ({', '.join(present)}; "
                f"missing {', '.join(missing)}): use an empty model or one deployed from it"
            )
        else:
            self._check(status, requests)  # a reused model: refuse before waiting
            missing = sorted(set(self.plan.apps) - set(status.apps))
            if missing:
                raise GateError(
                    f"model {self.juju.model} has no {', '.join(missing)}, which the gated "
                    f"scenarios need: deploy {paths.overlays_dir() / TRACES_OVERLAY} too, or "
                    "leave otlp-traces out (--gate-scenario)"
                )
        _log.info(
            "waiting for %s to settle in model %s", ", ".join(self.plan.apps), self.juju.model
        )
        return self._check(model.wait_ready(self.juju, self.plan.apps), requests)

    def _charms(self) -> dict[str, deploy.LocalCharm]:
        """The packed charms to deploy: those given, and loadgate's k6 charm when none was
        given and none lies next to the bundle (packed once into the cache)."""
        charms = dict(self.plan.local_charms)
        beside = self.plan.bundle.parent / paths.K6_CHARM_FILE
        if "k6" not in charms and not beside.is_file():
            _log.info("packing loadgate's k6 charm (once; cached in %s)", k6_charm.cache_dir())
            try:
                path = k6_charm.ensure(self.plan.bundle)
            except k6_charm.K6CharmError as exc:
                raise GateError(str(exc)) from None
            charms["k6"] = deploy.local_charm("k6", path, option="loadgate's k6 charm")
        return charms

    def _deploy(self) -> None:
        plan = self.plan
        try:
            staged = deploy.stage(
                plan.bundle,
                staging.new_stage_dir(),
                charms=self._charms(),
                pin=plan.pin,
                overlays=plan.overlays,
            )
            deploy.check(staged)
        except deploy.DeployError as exc:
            raise GateError(str(exc)) from None
        _log.info("deploying %s into model %s", " ".join(staged.deploy_args()), self.juju.model)
        deploy.deploy(self.juju, staged)

    def _check(
        self, status: jubilant.Status, requests: list[deployed_mod.Request]
    ) -> dict[str, deployed_mod.DeployedCharm]:
        try:
            return deployed_mod.check(status, requests)
        except deployed_mod.MismatchError as exc:
            raise GateError(f"model {self.juju.model}: {exc}") from None

    def labels(self) -> dict[str, str]:
        """Result-row labels from what the model runs (not from what was asked)."""
        return deployed_mod.labels(self.deployed(), self.plan.local_charms)

    def revision(self) -> int | None:
        """The otelcol revision whose gates.yaml overrides apply (None: a local charm)."""
        otelcol = self.deployed()["otelcol"]
        return None if otelcol.local else otelcol.revision

    def target(self) -> JujuTarget:
        if self._target is None:
            self.deployed()
            self._target = JujuTarget(self.juju)
        return self._target

    # ---- the runs ---------------------------------------------------------------------------

    def spec(self, scenario: str | None) -> RunSpec:
        try:
            return settings.gate_spec(
                self.plan.gates_file, self.revision(), self.labels(), scenario=scenario
            )
        except settings.SettingsError as exc:
            raise GateError(str(exc)) from None

    def _execute(self, spec: RunSpec) -> RunResult:
        target = self.target()
        return runner.execute(
            spec,
            target,
            self.results_root,
            drain_timeout=_DRAIN_TIMEOUT,
            on_phase=lambda text: _log.info("%s: %s", spec.run_id, text),
            scope=target.scope,
            scrape_timeout=SCRAPE_TIMEOUT,
        )

    def run(self, scenario: str | None = None) -> GateResult:
        """One gate run of `scenario` (None: the first gates.yaml gates), judged and written."""
        name = scenario or self.plan.scenarios[0]
        if name not in self.plan.scenarios:
            raise GateError(
                f"scenario {name!r} is not gated here; gated: {', '.join(self.plan.scenarios)}"
            )
        if name == OTLP_TRACES.name and model.TRACES_STANDIN_APP not in self.plan.apps:
            raise GateError(
                f"{name} needs the traces stand-in, which the model was deployed without: the "
                f"session's tests ran {', '.join(self.plan.served)}; take the scenario through "
                "the `loadgate_scenario` fixture so that the deployment serves it"
            )
        result = self._execute(self.spec(name))
        path = self._file(result)
        _log.info("%s: %s %s, written to %s", result.run_id, name, result.verdict, path)
        return summarize(result, path)

    def saturation(self) -> GateResult:
        """The saturation gate: a run offering more than the pipeline takes, its throughput
        against the floor, and the charm under test what gave way first."""
        try:
            gate = saturation_settings.saturation_gate(
                self.plan.gates_file, self.revision(), self.labels()
            )
        except settings.SettingsError as exc:
            raise GateError(str(exc)) from None
        expected = self.plan.subject.component
        judged = saturation.judge(self._execute(gate.spec), gate.floor, expected)
        path = results.write(judged, self.results_root)
        _log.info("%s: saturation %s, written to %s", judged.run_id, judged.verdict, path)
        return summarize(judged, path, floor=gate.floor, expected=expected)

    def _file(self, result: RunResult) -> Path:
        return results.run_dir(self.results_root, result.run_id) / results.RESULT_FILE

    def close(self) -> None:
        if self._target is not None:
            self._target.close()
            self._target = None
