"""LoadGate: what the `loadgate` fixture gives a charm repository's test (the stable API)."""

from __future__ import annotations

from .model_gate import ModelGate
from .result import GateResult


class LoadGate:
    """The load gate on one Juju model, around the charm under test.

    `run()` and `saturation()` deploy the bundle into the model first when it holds none of it
    (once per model), or reuse it when it already runs what the gate asks; each writes the run's
    full record under the results folder and returns its summary.
    """

    def __init__(self, gate: ModelGate) -> None:
        self._gate = gate

    @property
    def model(self) -> str:
        """The Juju model the gate runs on."""
        return str(self._gate.juju.model)

    @property
    def charm_under_test(self) -> str:
        """The bundle application under test: `otelcol` or `loki`."""
        return self._gate.plan.subject.app

    @property
    def scenarios(self) -> tuple[str, ...]:
        """The scenarios gated (gates.yaml's, or those --gate-scenario picks), in order."""
        return self._gate.plan.scenarios

    def deploy(self) -> None:
        """Deploy the bundle (or check the one the model holds) and wait until it settles."""
        self._gate.deployed()

    def run(self, scenario: str | None = None) -> GateResult:
        """One gate run: `scenario`'s load through the k6 charm (None: the first scenario
        gated), judged by gates.yaml's gates for the revision the model runs."""
        return self._gate.run(scenario)

    def saturation(self) -> GateResult:
        """The saturation gate: more load than the pipeline takes; its throughput over the
        steady window against gates.yaml's floor, and the charm under test must be what gave
        way first (else the gate fails as having measured the wrong component)."""
        return self._gate.saturation()
