"""A margins file: the margins a comparison uses per metric, and where they come from (the
spreads behind them, their degrees of freedom and interval, the command that measured them, the
date, the machine). `loadgate calibrate --output FILE` writes one; `loadgate compare
--margins-file FILE` takes one (`--margins KEY=PERCENT` still wins per key); the default compare
takes the one shipped as package data (`paths.default_margins_file()`, data/margins.yaml).

The file is YAML, keyed by the `--metrics` keys:

    format: loadgate-margins/1
    status: what the figures are (measured by loadgate calibrate, or carried over)
    command: loadgate calibrate ...
    date: 2026-11-27T10:00:00Z
    machine: {host: ..., cpus: 2, cpu_model: ..., kernel: ...}
    sources: [compare ids pooled]
    pairs: 4            # the pairs the margins are chosen for (what the budget fits)
    metrics:
      saturation: {margin_percent: 5, paired_spread: 0.0338, paired_df: 17,
                   spread: 0.0251, df: 34, spread_interval: [0.0213, 0.0309],
                   level_spread: 0.031, level_df: 10}
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import yaml

from loadgate import paths, yamlfile
from loadgate.capacity.compare import values
from loadgate.capacity.compare.rule import Metric
from loadgate.records import fields as f

_MARGINS_FORMAT = "loadgate-margins/1"
MEASURED = "measured by loadgate calibrate"


class MarginsError(ValueError):
    """A margins file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class MarginEntry:
    """One metric's margin and the spread it was chosen from."""

    margin_percent: float
    spread: float | None = None  # pooled standard deviation of log values within a side
    df: int | None = None
    spread_interval: tuple[float, float] | None = None  # 90 %, chi-square
    margin_at_estimate_percent: float | None = None  # the margin at the spread itself
    confidence: float | None = None  # of the bounds at the last look the margin is chosen for
    # The spread of a pair's worsening (standard deviation of ln B - ln A within a comparison,
    # pooled over comparisons) and its degrees of freedom: what the paired rule's bounds use.
    paired_spread: float | None = None
    paired_df: int | None = None
    # The spread of an A/A comparison's mean worsening beyond what its pairs show (the level
    # each kept stack holds for a whole comparison), over A/A comparisons, and its df.
    level_spread: float | None = None
    level_df: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"margin_percent": _number(self.margin_percent)}
        if self.spread is not None:
            out["spread"] = round(self.spread, 5)
        if self.df is not None:
            out["df"] = self.df
        if self.spread_interval is not None:
            out["spread_interval"] = [round(x, 5) for x in self.spread_interval]
        if self.margin_at_estimate_percent is not None:
            out["margin_at_estimate_percent"] = _number(self.margin_at_estimate_percent)
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 5)
        if self.paired_spread is not None:
            out["paired_spread"] = round(self.paired_spread, 5)
        if self.paired_df is not None:
            out["paired_df"] = self.paired_df
        if self.level_spread is not None:
            out["level_spread"] = round(self.level_spread, 5)
        if self.level_df is not None:
            out["level_df"] = self.level_df
        return out


def _number(x: float) -> float | int:
    """A percentage as written: whole ones without a fraction."""
    return round(x) if abs(x - round(x)) < 1e-9 else round(x, 4)


@dataclass(frozen=True)
class MarginsFile:
    """The margins, by `--metrics` key, and how they were obtained."""

    FORMAT: ClassVar[str] = _MARGINS_FORMAT

    status: str
    metrics: dict[str, MarginEntry]
    pairs: int | None = None
    command: str | None = None
    date: str | None = None
    machine: dict[str, Any] = field(default_factory=dict[str, Any])
    sources: tuple[str, ...] = ()

    def to_yaml(self) -> str:
        data: dict[str, Any] = {
            "format": _MARGINS_FORMAT,
            "status": self.status,
            "command": self.command,
            "date": self.date,
            "machine": self.machine,
            "sources": list(self.sources),
            "pairs": self.pairs,
            "metrics": {key: entry.to_dict() for key, entry in self.metrics.items()},
        }
        head = (
            "# loadgate margins: the smallest worsening each metric's comparison counts (its\n"
            "# threshold) and the spreads measured (loadgate calibrate; docs/manual/compare.md).\n"
        )
        return head + yaml.safe_dump(data, sort_keys=False, width=100)

    def paired_spreads(self) -> dict[str, tuple[float, int]]:
        """Metric name -> (spread of a pair's worsening, its degrees of freedom), where known."""
        return {
            values.METRIC_KEYS[k].name: (e.paired_spread, e.paired_df)
            for k, e in self.metrics.items()
            if e.paired_spread is not None and e.paired_df
        }

    def levels(self) -> dict[str, tuple[float, int]]:
        """Metric name -> (the stacks' level spread, its degrees of freedom), where known."""
        return {
            values.METRIC_KEYS[k].name: (e.level_spread, e.level_df)
            for k, e in self.metrics.items()
            if e.level_spread is not None and e.level_df
        }

    def margins(self) -> dict[str, float]:
        """Metric name -> relative margin."""
        return {values.METRIC_KEYS[k].name: e.margin_percent / 100 for k, e in self.metrics.items()}


def _parse(data: object, where: str) -> MarginsFile:
    """A margins file from its YAML mapping; MarginsError names the first bad field."""
    try:
        found = f.read(MarginsFile, data, where)
    except f.RecordError as exc:
        raise MarginsError(str(exc)) from None
    allowed = ", ".join(values.METRIC_KEYS)
    for key, entry in found.metrics.items():
        if key not in values.METRIC_KEYS:
            raise MarginsError(f"{where}.metrics: unknown metric {key!r}; allowed: {allowed}")
        if not 0 < entry.margin_percent <= values.MAX_MARGIN_PERCENT:
            raise MarginsError(
                f"{where}.metrics.{key}.margin_percent: must be more than 0 and at most "
                f"{values.MAX_MARGIN_PERCENT:g}; got {entry.margin_percent:g}"
            )
    return found


def read(path: Path) -> MarginsFile:
    """The margins file at `path`; MarginsError names the file and what is wrong."""
    return _parse(yamlfile.load_mapping(path, MarginsError, "a YAML mapping of margins"), str(path))


def shipped() -> MarginsFile:
    """The margins file shipped as package data: the default compare's margins."""
    return read(paths.default_margins_file())


def apply(
    metrics: Sequence[Metric], margins: MarginsFile | Mapping[str, float]
) -> tuple[Metric, ...]:
    """The metrics with the thresholds the file (or metric name -> threshold) gives, and the
    file's paired spreads and stacks' levels; those it does not name keep theirs."""
    by_name = margins.margins() if isinstance(margins, MarginsFile) else dict(margins)
    spreads = margins.paired_spreads() if isinstance(margins, MarginsFile) else {}
    levels = margins.levels() if isinstance(margins, MarginsFile) else {}
    out: list[Metric] = []
    for m in metrics:
        m = replace(m, margin=by_name.get(m.name, m.margin))
        if m.name in spreads:
            m = replace(m, paired_spread=spreads[m.name][0], paired_df=spreads[m.name][1])
        if m.name in levels:
            m = replace(m, level_spread=levels[m.name][0], level_df=levels[m.name][1])
        out.append(m)
    return tuple(out)


def machine() -> dict[str, Any]:
    """This machine, as a margins file records it: host, CPUs, CPU model, kernel."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    return {
        "host": platform.node(),
        "cpus": os.cpu_count() or 0,
        "cpu_model": model or platform.machine(),
        "kernel": f"{platform.system()} {platform.release()}",
    }


def write(margins: MarginsFile, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(margins.to_yaml())
    return path
