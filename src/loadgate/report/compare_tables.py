"""Rich tables of a comparison on the terminal: the decisions at the end (`_decisions_table`) and
the state after each pair (`pair_table`: each metric's decision so far and its bounds), the
verdict in a line (`_verdict_text`), and a replay's recorded verdict (`replay_line`).

Every cell is a `Text`, so nothing a user typed (settings, ids) is read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from loadgate.capacity.compare import rule, welch
from loadgate.capacity.compare.record import CompareRecord, Pressure
from loadgate.capacity.compare.repeat import RepeatOutcome
from loadgate.capacity.compare.rule import MetricDecision
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.search.record import SearchRecord

_DECISION_STYLE = {
    rule.REGRESSION: "red",
    rule.WORSE: "dark_orange",
    rule.NO_REGRESSION: "green",
    rule.TOO_NOISY: "yellow",
}

_LABELS = {
    rule.SATURATION.name: "saturation throughput",
    rule.PRESSURE_P99.name: "p99 at the pressure rate",
    rule.PRESSURE_CPU.name: "collector CPU per 1,000 records at the pressure rate",
    rule.PRESSURE_CPU_K6.name: "collector CPU per k6 CPU at the pressure rate",
    rule.PRESSURE_CPU_LOKI.name: "collector CPU per Loki CPU at the pressure rate",
    rule.PRESSURE_CPU_PROBE.name: (
        "collector CPU per 1,000 records at the pressure rate, over the speed probe's job"
    ),
    rule.CAPACITY.name: "capacity",
    rule.P99_AT_RATE.name: "p99 at the fixed rate",
    rule.CPU_PER_1000.name: "collector CPU per 1,000 records",
}
_WHOLE = (rule.CAPACITY.name, rule.SATURATION.name)
_CPU = (
    rule.CPU_PER_1000.name, rule.PRESSURE_CPU.name, rule.PRESSURE_CPU_K6.name,
    rule.PRESSURE_CPU_LOKI.name,
)  # fmt: skip


def _value_text(metric: rule.Metric, value: float | None) -> str:
    """A metric's value as the tables show it (unknown: not measured, never 0)."""
    if value is None:
        return "unknown"
    if metric.name in _WHOLE:
        return f"{value:,.0f}"
    if metric.name in _CPU:
        return f"{value:.4f}"
    return f"{value:.1f}"


def change_text(value: float | None) -> str:
    """A change as the tables show it: the rule's percentage with no space (unknown: —)."""
    return "—" if value is None else rule.percent_text(value, space="")


def _bounds_text(d: MetricDecision) -> str:
    """The bounds, with the confidence they hold with: the comparison's lower bounds together,
    and its upper bounds together (today's rule), or each alone (a record of the first rule)."""
    if d.lower is None or d.upper is None:
        return "—"
    text = f"{change_text(d.lower)} .. {change_text(d.upper)}"
    if d.family is not None and not d.metric.gates:
        return text + f"\n(beside: its own {d.family:.0%})"
    if d.family is not None:
        return text + f"\n(each side's together {d.family:.0%})"
    return text + (f"\n(each {d.confidence:.2%})" if d.confidence is not None else "")


def plan_line(plan: Plan, order: str) -> str:
    """A comparison's plan before it starts."""
    if not plan.sequential:
        return f"{plan.max_pairs} pair(s), order {order}"
    budget = f", budget {plan.budget_s / 60:g} min" if plan.budget_s else ""
    return f"pairs until decided ({plan.min_pairs} to {plan.max_pairs}{budget}), order {order}"


def _side_cell(metric: rule.Metric, mean: float | None, values: Sequence[float | None]) -> str:
    each = ", ".join(_value_text(metric, v) for v in values)
    return f"{_value_text(metric, mean)}\n({each})" if values else "—"


def _decision_text(d: MetricDecision) -> Text:
    text = Text(d.decision, style=_DECISION_STYLE[d.decision])
    at = f"\nat {d.pairs} pair(s)" if d.pairs is not None else ""
    if d.decision == rule.WORSE:
        below = d.settled or (d.upper is not None and d.upper < d.metric.margin)
        text.append("\nby less than the margin" if below else "\nnot shown to reach the margin")
        if below:
            return text.append(at)
    elif d.decision != rule.TOO_NOISY:
        return text.append(at)
    if d.repeats_needed:
        text.append(f"\nabout {d.repeats_needed} pairs to settle")
    elif d.metric.level:
        text.append("\nno number of pairs settles it (the stacks' level)")
    else:
        text.append(f"\nmore than {welch.MAX_REPEATS} pairs to settle")
    return text


def _metric_cell(m: rule.Metric) -> str:
    better = "higher is better" if m.better == rule.HIGHER else "lower is better"
    return f"{_LABELS.get(m.name, m.name)}\n{m.unit}, {better}, margin {m.margin:.0%}"


def _decisions_table(record: CompareRecord) -> Table:
    """The comparison's result: each metric's sides, change, bounds and decision."""
    table = Table(title=f"compare {record.compare_id}: {record.plan_summary}")
    table.add_column("metric")
    table.add_column("baseline\nmean (each)", justify="right")
    table.add_column("candidate\nmean (each)", justify="right")
    table.add_column("change\n(worse +)", justify="right")
    table.add_column("bounds\n(one-sided)", justify="right")
    table.add_column("decision")
    for d in record.decisions:
        m = d.metric
        table.add_row(
            Text(_metric_cell(m)),
            Text(_side_cell(m, d.baseline_mean, d.baseline)),
            Text(_side_cell(m, d.candidate_mean, d.candidate)),
            Text(change_text(d.change)),
            Text(_bounds_text(d)),
            _decision_text(d),
        )
    return table


def pair_table(record: CompareRecord, pairs: int) -> Table:
    """After a pair: each metric's decision so far (final once made) and its bounds."""
    table = Table(title=f"after {pairs} pair(s): {record.verdict}")
    table.add_column("metric")
    table.add_column("baseline / candidate mean", justify="right")
    table.add_column("change (worse +)", justify="right")
    table.add_column("bounds", justify="right")
    table.add_column("margin", justify="right")
    table.add_column("decision")
    for d in record.decisions:
        m = d.metric
        means = f"{_value_text(m, d.baseline_mean)} / {_value_text(m, d.candidate_mean)}"
        table.add_row(
            Text(_LABELS.get(m.name, m.name)),
            Text(means),
            Text(change_text(d.change)),
            Text(_bounds_text(d)),
            Text(f"{m.margin:.0%}"),
            _decision_text(d),
        )
    return table


AA_NOTE = (
    "A/A comparison: both sides run the same stack, a calibration of the noise (a regression "
    "here is a false alarm; the spread sets the margins and pairs)"
)


def pressure_line(pressure: Pressure) -> Text:
    return Text(pressure.summary)


def _unsound_lines(record: CompareRecord) -> list[str]:
    """Each run whose figures did not count, by side: what it lost, or why its ledger cannot
    say."""
    return [
        f"{r.side} run {u.run_id}: {u.reason}; its values there are unknown"
        for r in record.runs
        for u in r.unsound
    ]


def result_lines(record: CompareRecord) -> list[RenderableType]:
    """What a finished comparison prints: sides, A/A, pressure rate, the table, each decision's
    reason, the lost-records check and the runs that did not count, notes, the rule and the
    verdict."""
    lines: list[RenderableType] = [
        Text(f"baseline:  {record.baseline.name}"),
        Text(f"candidate: {record.candidate.name}"),
    ]
    if record.aa:
        lines.append(Text(AA_NOTE, style="yellow"))
    if record.pressure is not None:
        lines.append(pressure_line(record.pressure))
    lines.append(_decisions_table(record))
    lines += [Text(f"{d.metric.name}: {d.reason}") for d in record.decisions]
    if record.lost_records is not None:
        lines.append(Text(record.lost_records, style="bold red"))
    if record.broken is not None:
        lines.append(Text(record.broken, style="bold red"))
    lines += [Text(line, style="yellow") for line in _unsound_lines(record)]
    lines += [Text(f"note: {note}", style="yellow") for note in record.notes]
    lines.append(Text(f"rule: {record.rule}", style="dim"))
    style = _DECISION_STYLE[record.verdict]
    lines.append(Text(_verdict_text(record), style=f"bold {style}"))
    return lines


def _verdict_text(record: CompareRecord) -> str:
    """The verdict, its exit code, and which metric shows what."""
    text = f"verdict {record.verdict} (exit {record.exit_code})"
    if record.verdict == rule.WORSE and record.fail_on == rule.REGRESSION:
        text = text[:-1] + "; --fail-on worse exits 1)"
    by: dict[str, list[str]] = {}
    for d in record.decisions:
        name = d.metric.name
        if not d.metric.gates:
            by.setdefault("beside", []).append(f"{name} {d.decision}")
            continue
        if d.decision == rule.WORSE:
            name += " (estimated below its threshold)"
        by.setdefault(d.decision, []).append(name)
    words = {
        rule.REGRESSION: "regression",
        rule.WORSE: "worse beyond the noise",
        rule.TOO_NOISY: "too noisy",
        rule.NO_REGRESSION: "no regression",
        "beside": "reported beside, deciding nothing",
    }
    parts = [f"{words[k]}: {', '.join(by[k])}" for k in (*rule.DECISIONS, "beside") if k in by]
    if record.broken is not None:
        parts.insert(0, "the candidate broke where the baseline measured")
    if record.lost_records is not None:
        parts.insert(0, "the candidate lost acknowledged records (whatever the bounds)")
    return text + (": " + "; ".join(parts) if parts else "")


def replay_line(recorded: CompareRecord) -> str:
    """What a replayed comparison recorded, in a line."""
    rule_was = " under the previous rule" if recorded.recorded else ""
    return (
        f"replay of {recorded.compare_id} under today's rule; recorded{rule_was}: verdict "
        f"{recorded.verdict} (exit {recorded.exit_code}), {recorded.plan_summary}"
    )


def run_line(
    run: ScheduledRun, total: str, outcome: RepeatOutcome, metrics: Sequence[rule.Metric]
) -> Text:
    """A run as it lands: its figures, verdicts, bottleneck and notes."""
    figures = ", ".join(f"{m.name} {_value_text(m, outcome.values.get(m.name))}" for m in metrics)
    line = Text(
        f"run {run.position + 1}/{total} {run.side} #{run.repeat}"
        f"{f' ({outcome.ref})' if outcome.ref else ''}: {figures}"
    )
    if outcome.verdict:
        line.append(f", run verdict {outcome.verdict}")
    if outcome.bottleneck:
        line.append(f", bottleneck: {outcome.bottleneck}")
    for note in outcome.notes:
        line.append(f"\n  note: {note}", style="yellow")
    return line


def search_step_line(search: SearchRecord) -> Text | None:
    """A capacity search's last step, as it lands."""
    if not search.steps:
        return None
    last = search.steps[-1]
    p99 = last.outcome.p99_ms
    return Text(
        f"  search {search.search_id} step {last.step.index}: {last.step.phase} "
        f"{last.step.rate:,}/min -> {last.outcome.verdict}"
        + (f", p99 {p99:.1f} ms" if p99 is not None else "")
    )
