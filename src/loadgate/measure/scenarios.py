"""What loadgate measures of each scenario (the measure-side registry; the shared one, with
each scenario's script, unit and parameters, is loadgate.contract.scenarios).

Per scenario: which of the collector's counters are its ledger's (the signal's receiver and
exporter counters, and which exporter: `exporter`), or none when the load does not pass the
collector; which store holds its units at the end (the ledger's `stored`); what the local
stack must carry for it (`signals`, as `--signals` takes them); and which component is
downstream of the collector (what attribution names when the store pushes back). Only a logs
pipeline carries the collector's own log records (`own_logs`): its window's edges wait for
them and its ledger takes them and other traffic out. The runner, the ledger, the tables
and attribution read it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from loadgate.contract import scenarios as contract
from loadgate.contract.scenarios import Scenario
from loadgate.measure.scope import Scope
from loadgate.measure.signal_counters import LOGS, METRICS, TRACES, SignalCounters
from loadgate.measure.stores import LOKI_STORE, PROMETHEUS_STORE, STANDIN_STORE, Store


@dataclass(frozen=True)
class Measures:
    """How one scenario's run is measured."""

    scenario: Scenario
    signal: SignalCounters | None  # the collector's counters of its units; None: no collector
    store: Store  # where its units are counted at the end
    signals: tuple[str, ...]  # what the local stack must carry (charms.signals names)
    backend: str  # the store's component, downstream of the collector (attribution)
    exporter: str | None = None  # regex of the exporter under test; None: the scope's own
    # The load reads from its store (logql-query): its request durations are the store's
    # query path, and its answers are checked.
    reads: bool = False

    @property
    def through_collector(self) -> bool:
        return self.signal is not None

    @property
    def own_logs(self) -> bool:
        """The load shares its pipeline with the collector's own log records (logs)."""
        return self.signal is LOGS

    def scope(self, base: Scope) -> Scope:
        """The series of this scenario's pipeline, from the target's scope (its Loki, its rate
        window): the scenario's signal and exporter. A logs scope is the target's own."""
        if self.signal is LOGS:
            return base
        return replace(base, signal=self.signal, exporter=self.exporter or base.exporter)


_OTLP_LOGS = Measures(
    scenario=contract.OTLP_LOGS,
    signal=LOGS,
    store=LOKI_STORE,
    signals=("logs",),
    backend="loki",
)
_OTLP_METRICS = Measures(
    scenario=contract.OTLP_METRICS,
    signal=METRICS,
    store=PROMETHEUS_STORE,
    signals=("logs", "metrics"),
    backend="prometheus",
    exporter="prometheusremotewrite.*",
)
_LOKI_PUSH = Measures(
    scenario=contract.LOKI_PUSH,
    signal=None,
    store=LOKI_STORE,
    signals=("logs",),
    backend="loki",
)

_OTLP_TRACES = Measures(
    scenario=contract.OTLP_TRACES,
    signal=TRACES,
    store=STANDIN_STORE,
    signals=("logs", "traces"),
    backend="traces",
    exporter="otlphttp/send-traces.*",
)
_LOGQL_QUERY = Measures(
    scenario=contract.LOGQL_QUERY,
    signal=None,
    store=LOKI_STORE,
    signals=("logs",),
    backend="loki",
    reads=True,
)

_ALL: tuple[Measures, ...] = (_OTLP_LOGS, _OTLP_METRICS, _LOKI_PUSH, _OTLP_TRACES, _LOGQL_QUERY)
BY_NAME: Mapping[str, Measures] = {m.scenario.name: m for m in _ALL}


def of(scenario: str) -> Measures:
    """The measures of a scenario (KeyError names the ones there are)."""
    try:
        return BY_NAME[scenario]
    except KeyError:
        known = ", ".join(BY_NAME)
        raise KeyError(f"no measures for scenario {scenario!r}; there are {known}") from None
