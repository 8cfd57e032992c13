"""The report's plots as PNG files (matplotlib, Agg backend): knee curves, capacity per revision,
a run's collector CPU, RSS and queue over time, and each comparison. A plot with no data says
"not measured" in its frame instead of being drawn empty."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadgate.capacity.compare.record import CompareRecord
from loadgate.measure import timeseries as ts
from loadgate.report.capacity import Capacity, KneeCurve
from loadgate.report.matrix_content import MatrixContent

_NOT_MEASURED = "not measured"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def safe_name(text: str) -> str:
    """A file-name part from an id (letters, digits, '-', '_', '.')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def _say(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=11)
    # Tick labels hidden, not ticks removed: the axis may share its ticks with others.
    ax.tick_params(labelbottom=False, labelleft=False, bottom=False, left=False)


def _thousands(axis: Any) -> None:
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _: f"{v:,.0f}")  # pyright: ignore[reportUnknownLambdaType]
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(fmt)


def _short(name: str) -> str:
    """A side's name for an axis: up to its first parenthesis, at most 28 characters."""
    head = name.split(" (", 1)[0]
    return head if len(head) <= 28 else head[:27] + "…"


def _save(fig: Any, path: Path) -> Path:
    plt = _plt()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def knee(curves: Sequence[KneeCurve], path: Path) -> Path:
    return _save(knee_figure(curves), path)


def knee_figure(curves: Sequence[KneeCurve]) -> Any:
    """p99 and error rate against offered rate, one line per search; a filled marker passed,
    an x failed; the dashed line is the search's capacity."""
    plt = _plt()
    fig, (ax_p99, ax_err) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    drawn = [c for c in curves if c.has_data]
    if not drawn:
        why = "no search steps recorded" if not curves else "searches recorded no p99 or errors"
        _say(ax_p99, f"{why}: knee curve {_NOT_MEASURED}")
        _say(ax_err, f"error rate against offered rate: {_NOT_MEASURED}")
        return fig
    for i, curve in enumerate(drawn):
        colour = f"C{i % 10}"
        for ax, get in (
            (ax_p99, lambda p: p.p99_ms),  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
            (ax_err, lambda p: None if p.error_rate is None else p.error_rate * 100),  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]
        ):
            pts = [(p.rate, get(p), p.passed) for p in curve.points if get(p) is not None]
            if not pts:
                continue
            ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], "-", color=colour, alpha=0.5)
            passed = [(x, y) for x, y, ok in pts if ok]
            failed = [(x, y) for x, y, ok in pts if not ok]
            if passed:
                ax.plot(*zip(*passed, strict=True), "o", color=colour)
            if failed:
                ax.plot(*zip(*failed, strict=True), "x", color=colour, markersize=9)
            if curve.capacity_per_min is not None:
                ax.axvline(curve.capacity_per_min, color=colour, linestyle="--", alpha=0.7)
        ax_p99.plot([], [], "-o", color=colour, label=curve.label)
    ax_p99.set_ylabel("p99 request duration, ms (k6)")
    ax_err.set_ylabel("error rate, % (k6)")
    ax_err.set_xlabel("offered log records per minute")
    ax_p99.set_xscale("log")
    _thousands(ax_err.xaxis)
    _thousands(ax_p99.xaxis)
    ax_p99.legend(fontsize=8)
    ax_p99.set_title("knee curve: o passed, x failed, dashed = capacity", fontsize=10)
    return fig


def capacity(capacities: Sequence[Capacity], path: Path) -> Path:
    return _save(capacity_figure(capacities), path)


def _bars(c: Capacity) -> tuple[float, float]:
    """How far the bars of a capacity reach below and above it: to the knee's interval, or
    ±precision (a search recorded before searches stated an interval)."""
    value = float(c.capacity_per_min or 0)
    if c.interval is not None:
        low, high, _ = c.interval
        return max(0.0, value - low), max(0.0, high - value)
    err = value * (c.precision or 0.0)
    return err, err


def capacity_figure(capacities: Sequence[Capacity]) -> Any:
    """Capacity per revision: one point per converged search, its bars the knee's interval (a
    search recorded before searches stated one: ±precision); a triangle for "at least max";
    searches that did not converge are counted in the title, not drawn."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(7.0, 1.2 * len(capacities) + 3), 4.5))
    known = [c for c in capacities if c.capacity_per_min is not None and c.converged]
    if not known:
        why = "no searches recorded" if not capacities else "no search converged on a capacity"
        _say(ax, f"{why}: capacity {_NOT_MEASURED}")
        return fig
    revisions = sorted({c.revision for c in capacities})
    for i, rev in enumerate(revisions):
        mine = [c for c in known if c.revision == rev]
        for j, c in enumerate(mine):
            value = float(c.capacity_per_min or 0)
            x = i + (j - (len(mine) - 1) / 2) * 0.12
            below, above = _bars(c)
            marker = "^" if c.status == "at-least-max" else "o"
            ax.errorbar(
                [x], [value], yerr=[[below], [above]], fmt=marker, color=f"C{i % 10}", capsize=5
            )
    ax.set_xticks(range(len(revisions)), revisions, rotation=20, ha="right")
    ax.set_ylabel("capacity, log records per minute")
    _thousands(ax.yaxis)
    top = max(float(c.capacity_per_min or 0) + _bars(c)[1] for c in known)
    ax.set_ylim(0, top * 1.1)
    missing = len(capacities) - len(known)
    ax.set_xlim(-0.7, len(revisions) - 0.3)
    title = "capacity per revision\none point per search, bars: where the knee lies, ^ = at least"
    if missing:
        title += f"\n{missing} search(es) not converged: not drawn"
    ax.set_title(title, fontsize=10)
    return fig


def run_series(data: ts.RunSeries, title: str, path: Path) -> Path:
    return _save(run_series_figure(data, title), path)


def run_series_figure(data: ts.RunSeries, title: str) -> Any:
    """Collector CPU, RSS and queue over a run, seconds from the load's start; the load is
    shaded. A series the run could not read says "not measured" and why."""
    plt = _plt()
    panels = ((ts.CPU, "collector CPU, cores"), (ts.RSS, "collector RSS, MiB"), (ts.QUEUE, "queue"))
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 7), sharex=True)
    t0 = data.load_started
    for ax, (name, ylabel) in zip(axes, panels, strict=True):
        s = data.series.get(name)
        if s is None or not s.samples:
            reason = s.missing if s is not None and s.missing else "not recorded"
            _say(ax, f"{ylabel}: {_NOT_MEASURED} ({reason[:80]})")
            continue
        ax.plot([t - t0 for t, _ in s.samples], [v for _, v in s.samples], color="C0")
        ax.axvspan(0, data.load_ended - t0, color="C2", alpha=0.12)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("seconds from the load's start (shaded: load)")
    axes[0].set_title(title, fontsize=10)
    return fig


def comparison(record: CompareRecord, path: Path) -> Path:
    return _save(comparison_figure(record), path)


def comparison_figure(record: CompareRecord) -> Any:
    """Each metric's baseline and candidate values (points) and geometric means (bars), titled
    with its decision."""
    plt = _plt()
    decisions = record.decisions
    fig, axes = plt.subplots(1, max(1, len(decisions)), figsize=(5 * max(1, len(decisions)), 4))
    axes_list = list(axes) if len(decisions) > 1 else [axes]
    if not decisions:
        _say(axes_list[0], f"no metric decided: {_NOT_MEASURED}")
        return fig
    for ax, d in zip(axes_list, decisions, strict=True):
        sides = (("baseline", record.baseline.name), ("candidate", record.candidate.name))
        any_value = False
        for i, (side, _) in enumerate(sides):
            values = [v for v in (d.baseline if side == "baseline" else d.candidate) if v]
            mean = d.baseline_mean if side == "baseline" else d.candidate_mean
            if values:
                any_value = True
                ax.plot([i] * len(values), values, "o", color=f"C{i}", alpha=0.8)
            else:
                ax.text(i, 0, _NOT_MEASURED, ha="center", va="bottom", rotation=90, fontsize=9)
            if mean is not None:
                ax.bar([i], [mean], color=f"C{i}", alpha=0.3, width=0.5)
        if not any_value:
            _say(ax, f"{d.metric.name}: {_NOT_MEASURED}")
            ax.set_title(d.decision, fontsize=10)
            continue
        ax.set_xticks([0, 1], [_short(sides[0][1]), _short(sides[1][1])], rotation=10)
        ax.set_ylabel(f"{d.metric.name} ({d.metric.unit})")
        change = "" if d.change is None else f", worse by {d.change * 100:+.1f}%"
        ax.set_title(f"{d.metric.name}: {d.decision}{change}", fontsize=10)
        ax.set_ylim(bottom=0)
    fig.suptitle(f"{record.compare_id}: {record.verdict}", fontsize=11)
    return fig


def matrix(content: MatrixContent, path: Path) -> Path:
    return _save(_matrix_figure(content), path)


def _matrix_figure(content: MatrixContent) -> Any:
    """Per cell: records per minute k6 got accepted, p99 and max latency, and the failure
    rate, one bar per cell coloured by its experiment (a cell without figures says so)."""
    plt = _plt()
    rows = list(content.rows)
    fig, axes = plt.subplots(3, 1, figsize=(max(8, 0.9 * len(rows) + 3), 9), sharex=True)
    labels = [f"{r.experiment}\n{r.scenario}\n{r.load}" for r in rows]
    x = list(range(len(rows)))
    experiments = list(dict.fromkeys(r.experiment for r in rows))  # a colour per experiment
    colours = [f"C{experiments.index(r.experiment) % 10}" for r in rows]
    panels = (
        ("records/min accepted", [r.records_per_min for r in rows]),
        ("p99 ms (dot: max)", [r.latency_ms[3] for r in rows]),
        ("failure %", [None if r.failure is None else r.failure * 100 for r in rows]),
    )
    for ax, (title, values) in zip(axes, panels, strict=True):
        ax.set_ylabel(title)
        if all(v is None for v in values):
            _say(ax, f"{title}: {_NOT_MEASURED}")
            continue
        for i, v in enumerate(values):
            if v is None:
                ax.text(i, 0, _NOT_MEASURED, ha="center", va="bottom", rotation=90, fontsize=8)
            else:
                ax.bar([i], [v], color=colours[i], alpha=0.7)
        if title.startswith("p99"):
            highs = [(i, r.latency_ms[4]) for i, r in enumerate(rows) if r.latency_ms[4]]
            ax.plot([i for i, _ in highs], [v for _, v in highs], "k.", label="max")
        if title.startswith("records"):
            _thousands(ax.yaxis)
        ax.set_ylim(bottom=0)
    axes[-1].set_xticks(x, labels, fontsize=8)
    fig.suptitle(f"matrix {content.record.matrix_id}", fontsize=11)
    return fig
