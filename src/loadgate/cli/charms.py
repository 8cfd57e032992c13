"""`loadgate charms render|diff`: run the charms' own code and show what it renders; the flags
that choose a stack's charm sources (`add_source_flags`, shared with stack up and run)."""

from __future__ import annotations

import argparse
import difflib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from loadgate import paths
from loadgate.build import binaries
from loadgate.charms import signals as signal_relations
from loadgate.stack import tls

from ..stack import charm_build, charm_stack, same_stack
from ..stack.layout import Layout
from ..stack.ports import Ports
from .common import EXIT_BAD_INPUT, Subparsers, error, stdout
from .common import console as err_console

if TYPE_CHECKING:
    from .seams import Seams


def add_source_flags(p: argparse.ArgumentParser) -> None:
    """The flags that choose the charms a stack renders (shared by stack up, run, charms)."""
    p.add_argument(
        "--otelcol-charm",
        metavar="SRC",
        help="otelcol charm source: a checkout (.), LOCATION@REF, @REF or revN "
        "(default: the pinned rev221)",
    )
    p.add_argument(
        "--loki-charm",
        metavar="SRC",
        help="Loki charm source, as --otelcol-charm (default: the pinned rev244)",
    )
    p.add_argument(
        "--charm-config",
        metavar="K=V",
        action="append",
        default=[],
        help="an otelcol charm option, as `juju config` takes it (repeatable; V=@file reads "
        "a file), e.g. queue_size=5000",
    )
    p.add_argument(
        "--loki-config",
        metavar="K=V",
        action="append",
        default=[],
        help="a Loki charm option (repeatable), e.g. ingestion-rate-mb=8",
    )
    p.add_argument(
        "--signals",
        type=_signals_flag,
        default=signal_relations.DEFAULT,
        metavar="LIST",
        help="what the collector carries, from logs,metrics,traces (default logs): metrics "
        "relates it to Prometheus (send-remote-write), traces to a traces backend "
        "(send-traces; locally a stand-in, not Tempo)",
    )


def _signals_flag(text: str) -> tuple[str, ...]:
    try:
        return signal_relations.parse(text)
    except signal_relations.SignalsError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--signals: ")) from None


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "charms", help="run the otelcol and Loki charms' own code offline: what they render"
    )
    p.set_defaults(handler=_cmd_charms)
    _add_flags(p)


def _add_flags(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="charms_action", required=True)
    p_render = sub.add_parser("render", help="render both charms and localize their configs")
    add_source_flags(p_render)
    p_render.add_argument("--out", help="where to write the result (default ./charm-render)")
    p_render.add_argument(
        "--base-port", type=int, help="ports the localized configs use (default: standard)"
    )
    p_diff = sub.add_parser("diff", help="the collector config of two otelcol charm sources")
    p_diff.add_argument("a", metavar="SRC_A", help="e.g. rev160")
    p_diff.add_argument("b", metavar="SRC_B", help="e.g. rev221")
    p_diff.add_argument("--charm-config", metavar="K=V", action="append", default=[])


def _choice_of(args: argparse.Namespace) -> charm_stack.CharmChoice:
    return charm_stack.CharmChoice.from_flags(
        args.otelcol_charm,
        args.loki_charm,
        args.charm_config,
        args.loki_config,
        signals=args.signals,
    )


def _render_to(
    choice: charm_stack.CharmChoice, out: Path, ports: Ports
) -> tuple[charm_stack.PreparedCharms, charm_build.CharmStackFiles, float]:
    prepared = charm_stack.prepare(choice)
    parts = [prepared.otelcol_part.name, prepared.loki_part.name]
    missing = binaries.missing(parts, paths.bin_dir())
    if missing:
        raise charm_stack.CharmStackError(
            f"not built: {', '.join(missing)} (the charms read the workload's version, and the "
            "collector's components decide what localizing keeps): run `loadgate binaries`"
        )
    layout = Layout(out)
    material = tls.generate()
    tls.write(material, layout.tls)
    layout.config.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    files = charm_build.build(
        prepared,
        layout,
        ports,
        paths.bin_dir(),
        material.ca_cert_pem.decode(),
        material.ca_key_pem.decode(),
    )
    return prepared, files, time.monotonic() - began


def _render_table(report: dict[str, Any], seconds: float) -> Table:
    table = Table(title=f"charms rendered in {seconds:.1f}s")
    for col in (
        "charm",
        "source",
        "commit",
        "workload",
        "python (why)",
        "venv",
        "render",
        "status",
    ):
        table.add_column(col)
    for role in ("otelcol", "loki"):
        part, rendered = report[role], report["render"][role]
        src, venv = part["source"], rendered["venv"]
        made = f"made in {venv['seconds']:.0f}s" if venv["created"] else "cached"
        status = rendered["status"]
        table.add_row(
            escape(src["name"]),
            escape(src["given"]),
            escape((src["commit"] or "-")[:10] + (" +dirty" if src["dirty"] else "")),
            escape(f"{src['workload_tag']} -> {part['workload']['version']}"),
            escape(f"{rendered['python']} ({venv['interpreter']['why']})"),
            made,
            f"{rendered['seconds']:.1f}s",
            escape(f"{status['name']} {status['message']}".strip()),
        )
    return table


def _cmd_charms(args: argparse.Namespace, seams: Seams) -> int:
    """`loadgate charms render|diff`; bad sources or options exit 2 naming the flag."""
    try:
        if args.charms_action == "render":
            return _cmd_render(args, err_console, stdout)
        return _cmd_diff(args, err_console, stdout)
    except (charm_stack.CharmStackError, OSError, ValueError) as exc:
        error(f"charms {args.charms_action}", exc)
        return EXIT_BAD_INPUT


def _cmd_render(args: argparse.Namespace, console: Any, stdout: Any) -> int:
    out = Path(args.out or "charm-render").resolve()
    ports = Ports.from_base(args.base_port)
    prepared, files, seconds = _render_to(_choice_of(args), out, ports)
    layout = Layout(out)
    (layout.config / "otelcol.yaml").write_text(
        yaml.safe_dump(files.collector_config, sort_keys=False)
    )
    (layout.config / "loki.yaml").write_text(yaml.safe_dump(files.loki_config, sort_keys=False))
    (out / "render.json").write_text(json.dumps(files.report, indent=1, default=str) + "\n")
    stdout.print(_render_table(files.report, seconds))
    for role in ("otelcol", "loki"):
        stdout.print(f"[bold]{role}: localized[/bold]")
        for change in files.report["localized"][role]:
            stdout.print("  " + escape(_change_text(change)))
    for line in charm_stack.summary(files.report):
        stdout.print(escape(line))
    console.print(
        f"wrote {out}/config (as rendered under render/, localized beside) and render.json"
    )
    del prepared
    return 0


def _change_text(change: dict[str, Any]) -> str:
    before, after = change["before"], change["after"]
    if before is None:
        return f"{change['where']}: added {after!r} ({change['why']})"
    if after is None:
        return f"{change['where']}: removed ({change['why']})"
    return f"{change['where']}: {before!r} -> {after!r} ({change['why']})"


def _cmd_diff(args: argparse.Namespace, console: Any, stdout: Any) -> int:
    rendered: list[tuple[str, list[str]]] = []
    sides: list[charm_stack.PreparedCharms] = []
    for text in (args.a, args.b):
        choice = charm_stack.CharmChoice.from_flags(text, None, args.charm_config, ())
        out = paths.stack_dir().parent / "charm-diff" / text.replace("/", "_").replace("@", "_")
        prepared, files, _ = _render_to(choice, out, Ports())
        sides.append(prepared)
        config = (
            out
            / "render"
            / "otelcol"
            / "out"
            / "containers"
            / "otelcol"
            / "etc"
            / "otelcol"
            / "config.yaml"
        )
        label = files.report["otelcol"]["source"]["given"]
        rendered.append((label, config.read_text().splitlines(keepends=True)))
    (la, a), (lb, b) = rendered
    diff = list(difflib.unified_diff(a, b, fromfile=la, tofile=lb))
    text = "".join(diff) if diff else "the two sources render the same collector config\n"
    stdout.print(Text(text), soft_wrap=True, end="")
    console.print("rendering both again in one directory: what the two stacks run")
    for line in stack_lines(same_stack.same_stack(sides[0], sides[1])):
        stdout.print(Text(line), soft_wrap=True)
    return 0


def stack_lines(found: same_stack.Sameness) -> list[str]:
    """What `charms diff` says of everything the two stacks run (configs, Pebble services and
    checks, options, limits; stack.same_stack), beside the raw collector config's diff."""
    if found.unknown is not None:
        return [f"whether the two run the same stack: unknown ({found.unknown})"]
    if found.same:
        return ["the two run the same stack (configs, Pebble services and checks, options)"]
    return ["the two stacks differ in:", *(f"  {d}" for d in found.differences)]
