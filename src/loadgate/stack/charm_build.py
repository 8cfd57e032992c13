"""A charm stack built: both charms rendered with the stack's CA (charms/render.py), their
configs and Pebble plans localized to this run directory and its ports (stack/localize.py),
the hand changes made (hand.py), and a report of every change and of every component the local
build lacks. What is rendered was resolved first by charm_stack.prepare."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from loadgate.build import binaries

from ..charms import render
from ..charms import signals as signal_relations
from . import hand, localize, localize_signals, standin
from .charm_stack import (
    LOKI_CONFIG,
    OTELCOL_CONFIG,
    CharmStackError,
    PreparedCharms,
    components,
    version_output,
)
from .layout import Layout
from .ports import HOST, Ports


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
            report["logs_backend"] = standin.LOKI.role
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
    target = hand.StandinTarget(
        standin.otlp_url(standin.LOKI.ports_for(ports)),
        standin.LOKI_NAME,
        str(ca_file),
    )
    try:
        made = hand.apply(config, services, prepared.hand, target)
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
        url = standin.otlp_url(standin.TRACES.ports_for(ports))
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
