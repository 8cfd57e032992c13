"""A stack's run directory written afresh: TLS material, the configs and the Pebble layer,
from a hand profile (render.py) or from the charms' rendering (charm_stack.py), with the
services the stack adds beside them (the traces and Loki stand-ins, the fault proxy)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from loadgate.build import binaries
from loadgate.stack import tls as tls_material

from ..charms import signals as signal_relations
from . import cgroups, charm_build, cpu_split, fault_service, render, standin, steal_service
from .cgroups import StackGroups
from .charm_stack import CharmStackError, PreparedCharms
from .cpu_split import CpuSplit
from .fault_service import FaultService
from .hand import HandError
from .info import StackChoice, StackError, signals_of
from .layout import Layout
from .ports import Ports
from .profile import Profile


def _clear_run_dir(layout: Layout) -> None:
    """Empty the run directory, keeping its lock file (a held flock must keep its file)."""
    if not layout.root.is_dir():
        return
    for child in layout.root.iterdir():
        if child == layout.lock_file:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


@dataclass(frozen=True)
class Written:
    """What write_configs decided beyond the files: Loki's certificate name, the charm report."""

    loki_server_name: str = render.LOKI_TLS_SERVER_NAME
    charms: dict[str, Any] | None = None
    traces_server_name: str | None = None
    groups: StackGroups | None = None
    fault: FaultService | None = None


def write_configs(
    layout: Layout,
    what: StackChoice,
    ports: Ports,
    bin_dir: Path,
    on_step: Callable[[str], None] | None = None,
    split: CpuSplit | None = None,
) -> Written:
    """Fresh run directory: TLS material, the three configs and the Pebble layer; for a charm
    stack, rendered by the charms with this stack's CA and localized (charm_stack.py); the
    pipeline's services on the split's pipeline CPUs (cpu_split.py)."""
    _clear_run_dir(layout)
    for folder in layout.folders():
        folder.mkdir(parents=True, exist_ok=True)
    material = tls_material.generate()
    tls_material.write(material, layout.tls)
    if isinstance(what, Profile):
        configs = {
            layout.collector_config: render.collector_config(what, ports, layout),
            layout.loki_config: render.loki_config(what, ports, layout),
        }
        layer = render.pebble_layer(bin_dir, ports, layout)
        written = Written()
    else:
        configs, layer, written = _charm_files(
            layout, what, ports, bin_dir, material, on_step, split
        )
    configs[layout.prometheus_config] = render.prometheus_config(
        ports,
        layout,
        written.loki_server_name,
        out_of_order=signal_relations.METRICS in signals_of(what),
    )
    if written.traces_server_name is not None and not isinstance(what, Profile):
        binary = binaries.binary_path(what.otelcol_part.name, bin_dir)
        name = written.traces_server_name
        standin.TRACES.add(layout, ports, material, name, binary, configs, layer)
    if isinstance(what, PreparedCharms) and what.hand and what.hand.exporter == "standin":
        binary = binaries.binary_path(what.otelcol_part.name, bin_dir)
        standin.LOKI.add(layout, ports, material, standin.LOKI_NAME, binary, configs, layer)
    if written.fault is not None:
        configs[layout.prometheus_config]["scrape_configs"].append(
            fault_service.scrape_job(written.fault)
        )
    cpu_split.place(layer["services"], split)
    _write_files(layout, configs, layer)
    return written


def _charm_files(
    layout: Layout,
    what: PreparedCharms,
    ports: Ports,
    bin_dir: Path,
    material: tls_material.TLSMaterial,
    on_step: Callable[[str], None] | None,
    split: CpuSplit | None = None,
) -> tuple[dict[Path, dict[str, Any]], dict[str, Any], Written]:
    """The charms' configs and Pebble layer (with the fault proxy before Loki and the CPU
    steal's worker, if asked), their services in control groups for the charms' limits."""
    fault = fault_service.allocate(what.backend_fault) if what.backend_fault else None
    try:
        files = charm_build.build(
            what,
            layout,
            ports,
            bin_dir,
            material.ca_cert_pem.decode(),
            material.ca_key_pem.decode(),
            on_step=on_step,
            loki_via=fault.port if fault else None,
        )
    except CharmStackError as exc:
        raise StackError(str(exc)) from None
    configs = {
        layout.collector_config: files.collector_config,
        layout.loki_config: files.loki_config,
    }
    services = {name: dict(svc) for name, svc in files.services.items()}
    checks = dict(files.checks)
    if fault is not None:
        fault = replace(fault, server_name=files.loki_server_name)
        fault_service.write(fault, layout, ports)
        services[fault_service.SERVICE] = fault_service.pebble_service(layout)
        checks[f"{fault_service.SERVICE}-ready"] = fault_service.pebble_check(fault)
    roles, steal = dict(files.roles), _steal(services, layout, what, split)
    if steal is not None:
        roles[steal_service.SERVICE] = steal_service.SERVICE
    groups = cgroups.enter(
        services, roles, what.limits_by_role(), layout.root, layout.cgroups_file, also=steal
    )
    layer = render.charm_layer(services, checks, bin_dir, ports, layout)
    written = Written(files.loki_server_name, files.report, files.traces_server_name, groups, fault)
    return configs, layer, written


def _steal(
    services: dict[str, Any], layout: Layout, what: PreparedCharms, split: CpuSplit | None
) -> StackGroups | None:
    """The CPU steal's worker among the services (unarmed) and its group, when asked."""
    share = what.hand.cpu_steal if what.hand else 0
    if not share:
        return None
    pipeline = split.pipeline if split else tuple(os.sched_getaffinity(0))
    try:
        groups = steal_service.place(layout.root, share, pipeline)
    except HandError as exc:
        raise StackError(f"--hand: {exc}") from None
    services[steal_service.SERVICE] = steal_service.pebble_service(layout)
    steal_service.disarm(layout)
    return groups


def _write_files(
    layout: Layout, configs: dict[Path, dict[str, Any]], layer: dict[str, Any]
) -> None:
    for path, cfg in configs.items():
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    layers = layout.pebble / "layers"
    layers.mkdir(parents=True, exist_ok=True)
    (layers / "001-loadgate.yaml").write_text(yaml.safe_dump(layer, sort_keys=False))
