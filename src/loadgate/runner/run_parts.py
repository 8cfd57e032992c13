"""The pieces of a run that read its results rather than drive it: the gates with the delivery
gate, the restarts' notes and record, and the scope with the target's collector series."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from loadgate.contract import gates as gates_mod
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge import ledger as ledger_mod
from loadgate.measure import pipeline as pipe
from loadgate.measure import scenarios as scenario_measures
from loadgate.measure import stores
from loadgate.runner.target import Target, collector_series, standin_series


def judge_gates(
    spec: RunSpec, client: ClientFigures, ledger: ledger_mod.Ledger
) -> list[gates_mod.Gate]:
    """The client gates and the delivery gate (`lost_records` for otlp-logs; unknown, so
    failed, when the store could not count)."""
    judged = gates_mod.judge(spec, client, lost_records=ledger.lost_after_acceptance)
    if ledger.lost_after_acceptance is None:
        judged.append(gates_mod.lost_gate(spec, None))
    return judged


def _with_collector_series(scope: pipe.Scope, target: Target) -> pipe.Scope:
    """The scope with the target's matchers of the collector's own series, when it has some
    (runner.target.NamesCollectorSeries) and the scope has none of its own."""
    matchers = collector_series(target)
    return replace(scope, collector=matchers) if matchers and not scope.collector else scope


def scenario_store(scenario: str, target: Target) -> stores.Store:
    """Where a scenario's units are counted on the target: its store, with the traces
    stand-in's series picked as the target says (runner.target.NamesStandinSeries)."""
    store = scenario_measures.of(scenario).store
    series = standin_series(target)
    if isinstance(store, stores.StandinStore) and series is not None:
        return stores.standin_store(*series)
    return store


def scenario_scope(scenario: str, scope: pipe.Scope, target: Target) -> pipe.Scope:
    """The series of a scenario's pipeline on the target: its signal and exporter, on top of
    `scope` (e.g. the exporter --hand chose), with the collector's own series where the target
    holds other copies of them. What a run, a search's settling and a compare repeat read."""
    return scenario_measures.of(scenario).scope(_with_collector_series(scope, target))


def restart_notes(restarts: dict[str, list[float]]) -> list[str]:
    notes: list[str] = []
    for svc, times in restarts.items():
        if times:
            when = ", ".join(time.strftime("%H:%M:%S", time.localtime(t)) for t in times)
            notes.append(
                f"{svc} restarted {len(times)} time(s) during the run (at {when}): its counters "
                "cannot give exact figures (unknown, with a lower bound)"
            )
    return notes


def restarts_block(
    tracker: pipe.Tracker | None, states: dict[str, dict[str, Any]], started: float
) -> dict[str, dict[str, Any]]:
    """`restarts` of result.json: per service, the starts Prometheus saw inside the run and,
    when the target has a supervisor (Pebble), its view."""
    out: dict[str, dict[str, Any]] = {}
    seen = tracker.restarts() if tracker is not None else {}
    for svc in sorted(set(seen) | set(states)):
        entry: dict[str, Any] = {}
        if tracker is not None and svc in seen:
            entry.update(
                count=len(seen[svc]),
                at=seen[svc],
                source="Prometheus: process start times "
                + ("(otelcol uptime)" if svc == pipe.OTELCOL else "(process_start_time_seconds)"),
            )
        if svc in states:
            state = dict(states[svc])
            since = state.get("since")
            state["changed_during_run"] = isinstance(since, float | int) and since > started
            entry["supervisor"] = state
        out[svc] = entry
    return out
