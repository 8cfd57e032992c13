"""A local stack whose collector and Loki run what their charms render.

`prepare` resolves the charm sources (code, commit, revisions), types the options against the
charms' own declarations and finds the built workload for each revision, all before anything
starts. `build` renders both charms with the stack's CA, localizes their configs and plans to
this run directory and its ports, and returns what the stack writes, with a report of every
change and of every component the local build lacks.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from loadgate.build import binaries

from ..charms import localize, localize_signals, options, render, sources
from ..charms import signals as signal_relations
from ..charms.sources import CharmSource, SourceSpec
from . import backends, hand, limits, logs_standin
from .faults import FaultPlan
from .hand import HandChanges
from .layout import Layout
from .limits import Limits
from .ports import HOST, Ports

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
            out["traces_backend"] = backends.STANDIN_ROLE
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


@dataclass(frozen=True)
class CharmStackFiles:
    collector_config: dict[str, Any]
    loki_config: dict[str, Any]
    services: dict[str, Any]
    checks: dict[str, Any]
    loki_server_name: str
    report: dict[str, Any] = field(default_factory=dict[str, Any])
    traces_server_name: str | None = None  # the traces backend's name (its certificate's)
    roles: dict[str, str] = field(default_factory=dict[str, str])  # service -> its charm


def _local_files(charm: render.RenderedCharm, folder: Path) -> dict[str, Path]:
    """Copies of the files the charm pushed (certificates, keys), in the run directory."""
    out: dict[str, Path] = {}
    for path in charm.files.get(charm.container, []):
        local = folder / path.lstrip("/")
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(charm.file(path), local)
        if local.name.endswith((".key", ".key.pem")):
            local.chmod(0o600)
        out[path] = local
    return out


def build(
    prepared: PreparedCharms,
    layout: Layout,
    ports: Ports,
    bin_dir: Path,
    ca_cert: str,
    ca_key: str,
    on_step: Callable[[str], None] | None = None,
    loki_via: int | None = None,
) -> CharmStackFiles:
    """Render both charms for this stack (with its CA) and localize what they wrote.
    `on_step` hears each step (venvs, renders) as it starts; `loki_via`: the port the
    collector's Loki exporter pushes to instead of Loki's (the backend fault proxy)."""
    bins = _Binaries(
        otelcol=binaries.binary_path(prepared.otelcol_part.name, bin_dir),
        loki=binaries.binary_path(prepared.loki_part.name, bin_dir),
    )
    pipeline = _render(prepared, layout, bins, ca_cert, ca_key, on_step)
    local = _localize(prepared, pipeline, layout, ports, bins, loki_via)
    otel_config, otel_services, hand_changes = _by_hand(
        prepared, local.otel.config, local.otel_plan["services"], ports, local.ca_file
    )
    roles = {name: "otelcol" for name in local.otel_plan["services"]}
    roles.update({name: "loki" for name in local.loki_plan["services"]})
    return CharmStackFiles(
        collector_config=otel_config,
        loki_config=local.loki.config,
        services={**otel_services, **local.loki_plan["services"]},
        checks={**local.otel_plan["checks"], **local.loki_plan["checks"]},
        loki_server_name=_loki_name(pipeline),
        report=_build_report(prepared, pipeline, local, hand_changes),
        traces_server_name=(
            signal_relations.unit_host(signal_relations.TRACES_APP, render.MODEL)
            if prepared.traces
            else None
        ),
        roles=roles,
    )


@dataclass(frozen=True)
class _Binaries:
    """The built workload binaries the stack runs."""

    otelcol: Path
    loki: Path


@dataclass(frozen=True)
class _Localized:
    """Both charms' configs and Pebble plans, localized to this run directory and its ports."""

    otel: localize.Localized
    loki: localize.Localized
    otel_plan: dict[str, Any]
    otel_plan_changes: list[localize.Change]
    loki_plan: dict[str, Any]
    loki_plan_changes: list[localize.Change]
    ca_file: Path


def _render(
    prepared: PreparedCharms,
    layout: Layout,
    bins: _Binaries,
    ca_cert: str,
    ca_key: str,
    on_step: Callable[[str], None] | None,
) -> render.RenderedPipeline:
    """Both charms rendered with the stack's CA; each must be active to run."""
    try:
        pipeline = render.render_pipeline(
            prepared.otelcol,
            prepared.loki,
            layout.root / "render",
            ca_cert=ca_cert,
            ca_key=ca_key,
            otelcol_options=prepared.otelcol_options,
            loki_options=prepared.loki_options,
            otelcol_version=version_output(bins.otelcol, "--version"),
            loki_version=version_output(bins.loki, "-version"),
            server_cert=prepared.server_cert,
            on_step=on_step,
            signals=prepared.signals,
            provider_lib=prepared.providers.path / "lib" if prepared.providers else None,
        )
    except (render.RenderError, OSError) as exc:
        raise CharmStackError(str(exc)) from None
    for charm in (pipeline.otelcol, pipeline.loki):
        if charm.status.get("name") != "active":
            raise CharmStackError(
                f"{charm.source.name} {charm.source.label} is {charm.status.get('name')} "
                f"({charm.status.get('message')}) with the bundle's relations: it would not run"
            )
    return pipeline


def _localize(
    prepared: PreparedCharms,
    pipeline: render.RenderedPipeline,
    layout: Layout,
    ports: Ports,
    bins: _Binaries,
    loki_via: int | None,
) -> _Localized:
    """The rendered configs and plans rewritten for this run directory and its ports."""
    charm_files = layout.config / "charm-files"
    otel_files = _local_files(pipeline.otelcol, charm_files / "otelcol")
    loki_files = _local_files(pipeline.loki, charm_files / "loki")
    ca_pushed = "/usr/local/share/ca-certificates/juju_receive-ca-cert/0.crt"
    ca_file = otel_files.get(ca_pushed, layout.ca_cert)
    try:
        otel_local = localize.otelcol(
            yaml.safe_load(pipeline.otelcol.file(OTELCOL_CONFIG).read_text()),
            localize.OtelcolLocal(
                ports=ports,
                storage_dir=layout.collector_storage,
                ca_file=ca_file,
                files=otel_files,
                available=components(bins.otelcol),
                loki_via=loki_via,
            ),
        )
        otel_local = localize_signals.exporters(
            otel_local, signal_targets(prepared.signals, ports, ca_file)
        )
        loki_local = localize.loki(
            yaml.safe_load(pipeline.loki.file(LOKI_CONFIG).read_text()),
            localize.LokiLocal(ports=ports, data_dir=layout.loki_data, files=loki_files),
        )
        config_files = {OTELCOL_CONFIG: layout.collector_config, LOKI_CONFIG: layout.loki_config}
        otel_plan, otel_plan_changes = localize.plan(
            pipeline.otelcol.plan,
            "otelcol",
            bins.otelcol,
            {**otel_files, **config_files},
            ports,
            layout.root,
        )
        loki_plan, loki_plan_changes = localize.plan(
            pipeline.loki.plan,
            "loki",
            bins.loki,
            {**loki_files, **config_files},
            ports,
            layout.root,
        )
    except localize.LocalizeError as exc:
        raise CharmStackError(f"localizing the rendered configs: {exc}") from None
    return _Localized(
        otel_local, loki_local, otel_plan, otel_plan_changes, loki_plan, loki_plan_changes, ca_file
    )


def _build_report(
    prepared: PreparedCharms,
    pipeline: render.RenderedPipeline,
    local: _Localized,
    hand_changes: list[localize.Change],
) -> dict[str, Any]:
    """What the stack is: its sources, the renders, every localizing and hand change."""
    report = {
        **prepared.to_dict(),
        "render": pipeline.to_dict(),
        "localized": {
            "otelcol": [c.to_dict() for c in local.otel.changes + local.otel_plan_changes],
            "loki": [c.to_dict() for c in local.loki.changes + local.loki_plan_changes],
        },
        "missing_components": local.otel.missing,
    }
    if prepared.hand is not None:
        report["hand_changes"] = [c.to_dict() for c in hand_changes]
        if prepared.hand.exporter == "standin":
            report["logs_backend"] = logs_standin.ROLE
    return report


def _by_hand(
    prepared: PreparedCharms,
    config: dict[str, Any],
    services: dict[str, Any],
    ports: Ports,
    ca_file: Path,
) -> tuple[dict[str, Any], dict[str, Any], list[localize.Change]]:
    """The collector's config and services with the hand changes made (hand.py)."""
    if prepared.hand is None:
        return config, services, []
    standin = hand.StandinTarget(
        logs_standin.otlp_url(logs_standin.StandinPorts.for_ports(ports)),
        logs_standin.STANDIN_NAME,
        str(ca_file),
    )
    try:
        made = hand.apply(config, services, prepared.hand, standin)
    except hand.HandError as exc:
        raise CharmStackError(f"--hand: {exc}") from None
    return made.config, made.services, made.changes


def signal_targets(
    signals: Sequence[str], ports: Ports, ca_file: Path
) -> localize_signals.SignalTargets:
    """The stack's local backends for the signals it carries: Prometheus's remote-write
    receiver (plain HTTP) and the traces stand-in (TLS from the stack's CA)."""
    remote_write = traces = None
    if signal_relations.METRICS in signals:
        remote_write = localize_signals.Backend("Prometheus", f"http://{HOST}:{ports.prometheus}")
    if signal_relations.TRACES in signals:
        url = backends.otlp_url(backends.BackendPorts.for_ports(ports))
        traces = localize_signals.Backend("traces backend stand-in", url, tls=True)
    return localize_signals.SignalTargets(remote_write, traces, ca_file)


def _loki_name(pipeline: render.RenderedPipeline) -> str:
    from urllib.parse import urlsplit

    host = urlsplit(pipeline.loki_push_url).hostname
    if not host:
        raise CharmStackError(
            f"Loki advertised a push URL without a host: {pipeline.loki_push_url}"
        )
    return host


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
