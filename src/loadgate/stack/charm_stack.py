"""A local stack whose collector and Loki run what their charms render.

`prepare` resolves the charm sources (code, commit, revisions), types the options against the
charms' own declarations and finds the built workload for each revision, all before anything
starts. `charm_build.build` renders both charms with the stack's CA, localizes their configs and
plans to this run directory and its ports, and returns what the stack writes, with a report of
every change and of every component the local build lacks; `summary` tells that report.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from loadgate.build import binaries

from ..charms import options, sources
from ..charms import signals as signal_relations
from ..charms.sources import CharmSource, SourceSpec
from . import limits, localize, standin
from .faults import FaultPlan
from .hand import HandChanges
from .limits import Limits

OTELCOL_CONFIG = "/etc/otelcol/config.yaml"
LOKI_CONFIG = "/etc/loki/loki-local-config.yaml"


class CharmStackError(ValueError):
    """The charm stack cannot be prepared or built; the message names the flag or charm."""


@dataclass(frozen=True)
class CharmChoice:
    """What the command line asked for (not yet resolved)."""

    otelcol: SourceSpec
    loki: SourceSpec
    otelcol_pairs: tuple[str, ...] = ()  # --charm-config K=V
    loki_pairs: tuple[str, ...] = ()  # --loki-config K=V
    server_cert: bool = False
    preset: str = "charm-default"  # the --profile the options started from
    signals: tuple[str, ...] = signal_relations.DEFAULT  # --signals
    backend_fault: FaultPlan | None = None  # --backend-fault: a proxy before Loki
    hand: HandChanges | None = None  # --hand: changes no charm option gives

    @classmethod
    def from_flags(
        cls,
        otelcol: str | None,
        loki: str | None,
        otelcol_pairs: Sequence[str] = (),
        loki_pairs: Sequence[str] = (),
        folder: Path | None = None,
        preset: str = "charm-default",
        signals: Sequence[str] = signal_relations.DEFAULT,
    ) -> CharmChoice:
        """Parse `--otelcol-charm` / `--loki-charm` (default: the pinned revisions)."""
        where = folder if folder is not None else sources.sources_dir()
        try:
            options.split_pairs(otelcol_pairs, "--charm-config")
            options.split_pairs(loki_pairs, "--loki-config")
        except options.OptionError as exc:
            raise CharmStackError(str(exc)) from None
        try:
            otel = (
                sources.parse("otelcol", otelcol, where)
                if otelcol is not None
                else sources.default_spec("otelcol", where)
            )
            lok = (
                sources.parse("loki", loki, where)
                if loki is not None
                else sources.default_spec("loki", where)
            )
        except sources.SourceError as exc:
            raise CharmStackError(str(exc)) from None
        try:
            chosen = signal_relations.parse(signals)
        except signal_relations.SignalsError as exc:
            raise CharmStackError(str(exc)) from None
        return cls(
            otel, lok, tuple(otelcol_pairs), tuple(loki_pairs), preset=preset, signals=chosen
        )


@dataclass(frozen=True)
class PreparedCharms:
    otelcol: CharmSource
    loki: CharmSource
    otelcol_options: dict[str, Any]
    loki_options: dict[str, Any]
    otelcol_part: binaries.Part
    loki_part: binaries.Part
    server_cert: bool = False
    preset: str = "charm-default"
    signals: tuple[str, ...] = signal_relations.DEFAULT
    # The Prometheus charm, whose lib/ writes the metric and trace relations (None: logs only).
    providers: CharmSource | None = None
    # The containers' resource limits (the `cpu` and `memory` options, as Kubernetes has them).
    otelcol_limits: Limits = field(default_factory=Limits)
    loki_limits: Limits = field(default_factory=Limits)
    backend_fault: FaultPlan | None = None
    hand: HandChanges | None = None  # changes made by hand on the rendering (hand.py)

    @property
    def traces(self) -> bool:
        return signal_relations.TRACES in self.signals

    def limits_by_role(self) -> dict[str, Limits]:
        return {"otelcol": self.otelcol_limits, "loki": self.loki_limits}

    def to_dict(self) -> dict[str, Any]:
        out = self._charms_dict()
        if self.backend_fault is not None:  # stacks without one keep their shape
            out["backend_fault"] = self.backend_fault.spec
        if self.hand is not None:
            out["hand"] = self.hand.to_dict()
        return out

    def _charms_dict(self) -> dict[str, Any]:
        return {
            **self._signals_dict(),
            "preset": self.preset,
            "otelcol": {
                "source": self.otelcol.to_dict(),
                "options": self.otelcol_options,
                "workload": {"part": self.otelcol_part.name, "version": self.otelcol_part.version},
            },
            "loki": {
                "source": self.loki.to_dict(),
                "options": self.loki_options,
                "workload": {"part": self.loki_part.name, "version": self.loki_part.version},
            },
        }

    def _signals_dict(self) -> dict[str, Any]:
        """Beyond logs only (a logs-only stack's record keeps its shape)."""
        if signal_relations.is_default(self.signals):
            return {}
        out: dict[str, Any] = {"signals": list(self.signals)}
        if self.providers is not None:
            out["providers"] = self.providers.to_dict()
        if self.traces:
            out["traces_backend"] = standin.TRACES.role
        return out


def prepare(choice: CharmChoice) -> PreparedCharms:
    """Resolve sources and options, and find the workload builds; raises CharmStackError."""
    try:
        otel = sources.resolve(choice.otelcol)
        lok = sources.resolve(choice.loki)
        otel_opts = options.parse(
            (otel.path / "charmcraft.yaml").read_text(),
            choice.otelcol_pairs,
            "--charm-config",
            otel.name,
        )
        loki_opts = options.parse(
            (lok.path / "charmcraft.yaml").read_text(), choice.loki_pairs, "--loki-config", lok.name
        )
        otel_limits = limits.from_options(otel_opts, "--charm-config", _requests(otel))
        loki_limits = limits.from_options(loki_opts, "--loki-config", _requests(lok))
        otel_part = binaries.workload_part("otelcol", otel.workload_tag, f"otelcol {otel.label}")
        loki_part = binaries.workload_part("loki", lok.workload_tag, f"Loki {lok.label}")
        providers = None
        if not signal_relations.is_default(choice.signals):
            folder = sources.sources_dir()
            providers = sources.resolve(sources.default_spec("prometheus", folder))
    except (
        sources.SourceError,
        options.OptionError,
        limits.LimitError,
        binaries.WorkloadBuildError,
    ) as exc:
        raise CharmStackError(str(exc)) from None
    return PreparedCharms(
        otel, lok, otel_opts, loki_opts, otel_part, loki_part, choice.server_cert, choice.preset,
        choice.signals, providers, otel_limits, loki_limits, choice.backend_fault, choice.hand,
    )  # fmt: skip


def _requests(source: CharmSource) -> limits.Requests | None:
    """The requests the charm's own code gives its container (the floor of its limits)."""
    try:
        return limits.charm_requests((source.path / "src" / "charm.py").read_text())
    except OSError:
        return None


@cache
def _components(binary: Path, stamp: str) -> frozenset[str]:
    del stamp  # part of the cache key: a rebuilt binary is asked again
    out = subprocess.run(
        [str(binary), "components"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    listed = yaml.safe_load(out) or {}
    names: set[str] = set()
    for kind in localize.KINDS:
        for item in listed.get(kind) or []:
            names.add(str(item.get("name")))
    return frozenset(names)


def components(binary: Path) -> frozenset[str]:
    """Component types the local collector build has (`otelcol components`)."""
    stat = binary.stat()
    return _components(binary, f"{stat.st_mtime_ns}:{stat.st_size}")


def version_output(binary: Path, flag: str) -> str:
    """What the workload binary answers to its version flag (the charms read it)."""
    proc = subprocess.run(
        [str(binary), flag], capture_output=True, text=True, timeout=60, check=False
    )
    return (proc.stdout or proc.stderr).strip()


def summary(report: Mapping[str, Any]) -> list[str]:
    """Lines for people: each charm, its source and workload, what localizing changed."""
    lines: list[str] = []
    for role in ("otelcol", "loki"):
        part = report[role]
        src = part["source"]
        revs = "/".join(f"rev{r}" for r in src["revisions"]) or "-"
        lines.append(
            f"{role}: {src['name']} {revs} commit {(src['commit'] or '-')[:10]}"
            f"{' +dirty' if src['dirty'] else ''} image {src['workload_tag']} -> "
            f"{part['workload']['part']} {part['workload']['version']}; options "
            f"{options.describe(part['options'])}"
        )
    missing = report.get("missing_components") or []
    if missing:
        lines.append("not in the local collector build, removed: " + ", ".join(missing))
    if report.get("signals"):
        lines.append(f"signals: {signal_relations.text(report['signals'])}")
    if report.get("traces_backend"):
        lines.append(f"traces: {report['traces_backend']}")
    if report.get("hand"):
        lines.append(f"by hand: {HandChanges.from_dict(report['hand']).text()}")
    if report.get("logs_backend"):
        lines.append(f"logs: {report['logs_backend']}")
    return lines
