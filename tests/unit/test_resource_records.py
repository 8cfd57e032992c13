"""Where the limits and the backend faults show: result.json's `resources`, the figures table,
stack.json, the stack's notes, the stack flags and the localized collector config. Pure."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.fakes.target import FakeTarget
from support.figures_table import figure_values
from support.runresults import run_result

from loadgate import cli
from loadgate.cli.seams import Seams
from loadgate.contract.spec import RunSpec
from loadgate.measure.resources import BackendFaultCounts, Exit, ResourceFigures, ServiceResources
from loadgate.records.result import RunResult
from loadgate.report import tables
from loadgate.runner import target as runner_target
from loadgate.stack import choice, faults, local, localize
from loadgate.stack.cgroups import Group, Placement, StackGroups
from loadgate.stack.fault_service import FaultService
from loadgate.stack.info import StackStatus
from loadgate.stack.limits import Limits
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports
from loadgate.stack.profile import Profile

SPEC = RunSpec.from_params({"duration": "30s", "rate": "60000", "run-id": "limits-1"})
MI = 2**20
OTELCOL = ServiceResources(
    cgroup="v1",
    memory_limit="100Mi",
    memory_limit_bytes=200 * MI,
    cpu_limit="250m",
    cpu_limit_millis=250,
    oom_kills=1,
    memory_failcnt=12,
    memory_peak_bytes=200 * MI,
    memory_peak_source="memory.max_usage_in_bytes",
    cpu_periods=300,
    cpu_throttled_periods=120,
    cpu_throttled_s=4.25,
    restarts=1,
    exits=[Exit("otelcol", 137, 1000.5)],
    notes=["memory: the limit is raised to the charm's request 200Mi"],
    source="kernel",
)
LOKI = ServiceResources(
    cgroup="none",
    memory_limit="1Gi",
    memory_limit_bytes=None,
    cpu_limit=None,
    cpu_limit_millis=None,
    not_enforced={"memory": "cannot write /sys/fs/cgroup/memory/x: Permission denied"},
)
FAULT = BackendFaultCounts("503=0.7", 100, 31, 69, 0, 5, 0, "proxy")
RESOURCES = ResourceFigures({"otelcol": OTELCOL, "loki": LOKI}, FAULT)


def text_of(renderable: Any) -> str:
    console = Console(width=250, record=True)
    console.print(renderable)
    return console.export_text()


def test_a_result_with_resources_round_trips_and_one_without_keeps_its_shape() -> None:
    plain = run_result(SPEC)
    assert "resources" not in plain.to_dict()
    assert RunResult.from_dict(plain.to_dict()).resources is None
    limited = replace(plain, resources=RESOURCES)
    data = json.loads(json.dumps(limited.to_dict()))
    assert data["resources"]["services"]["otelcol"]["oom_kills"] == 1
    assert data["resources"]["services"]["loki"]["not_enforced"]["memory"].startswith("cannot")
    assert data["resources"]["backend_fault"]["failed"] == 69
    assert RunResult.from_dict(data) == limited


def test_the_figures_table_has_a_line_per_limited_container_and_the_faults() -> None:
    text = text_of(tables.figures_table(replace(run_result(SPEC), resources=RESOURCES)))
    line = next(ln for ln in text.splitlines() if "otelcol limits (cgroup v1)" in ln)
    assert "memory 200 MiB: peak 200 MiB, 1 OOM kill(s)" in line
    assert "cpu 250m: throttled 120/300 periods (4.2 s)" in line
    assert "1 restart(s) (exit 137)" in line
    loki = next(ln for ln in text.splitlines() if "loki limits (cgroup none)" in ln)
    assert "memory NOT enforced" in loki
    fault = next(ln for ln in text.splitlines() if "backend faults (503=0.7)" in ln)
    assert "100 requests: 31 passed, 69 failed (0 in the outage), 5 delayed" in fault
    plain = text_of(tables.figures_table(run_result(SPEC)))
    assert "limits" not in plain
    assert "backend faults" not in plain


def test_unknown_figures_read_unknown_in_the_table() -> None:
    unknown = replace(OTELCOL, oom_kills=None, memory_peak_bytes=None, restarts=None, exits=[])
    silent = BackendFaultCounts("503=1", None, None, None, None, None, None)
    used = ResourceFigures({"otelcol": replace(unknown, cpu_throttled_periods=None)}, silent)
    values = figure_values(replace(run_result(SPEC), resources=used))
    text = values["otelcol limits (cgroup v1)"]
    assert text == "memory 200 MiB: peak unknown, unknown; cpu 250m: throttled unknown; unknown"
    assert values["backend faults (503=1)"] == "unknown (the proxy did not answer)"


def test_the_runner_takes_the_figures_of_a_target_that_has_them() -> None:
    assert runner_target.resource_figures(FakeTarget(resources=RESOURCES)) is RESOURCES
    assert runner_target.resource_figures(FakeTarget()) is None


GROUPS = StackGroups(
    {
        "otelcol": Placement(
            "otelcol",
            Limits("100m", "100Mi", 250, 200 * MI, ["cpu: raised to the charm's request 0.25"]),
            [Group("memory", 1, "/sys/fs/cgroup/memory/own/loadgate-x/otelcol")],
            {"cpu": "cannot write /sys/fs/cgroup/cpu/loadgate-x (cgroup v1): Read-only"},
            ["otelcol"],
        )
    },
    ["/sys/fs/cgroup/memory/own/loadgate-x/otelcol", "/sys/fs/cgroup/memory/own/loadgate-x"],
)


def stack_info(tmp_path: Path, **more: Any) -> local.StackInfo:
    return local.StackInfo(
        root=tmp_path,
        pid=1,
        ports=Ports.from_base(24800),
        profile=None,
        bin_dir=tmp_path / "bin",
        started_at=time.time(),
        charms={"preset": "charm-default"},
        **more,
    )


def test_stack_json_holds_the_limits_and_the_fault_proxy_only_when_there_are(
    tmp_path: Path,
) -> None:
    plain = stack_info(tmp_path)
    assert "limits" not in plain.to_dict()
    assert "backend_fault" not in plain.to_dict()
    assert plain.services == ("otelcol", "loki", "prometheus")
    fault = FaultService(faults.parse("503=0.7"), 40001, 40002, "loki-0.loki-endpoints")
    full = stack_info(tmp_path, limits=GROUPS, backend_fault=fault)
    again = local.StackInfo.from_dict(json.loads(json.dumps(full.to_dict())))
    assert again == full
    assert full.services[-1] == "backend-fault"
    assert full.health_urls()["backend-fault"] == "http://127.0.0.1:40002/ready"


def stack_notes(
    info: local.StackInfo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """What `loadgate stack up` says of the stack it started (here: `info`), line by line."""
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(info.root / "stack"))

    def up(*_args: object, **_kw: object) -> local.StackInfo:
        return info

    def build_missing(*_args: object, **_kw: object) -> int:
        return 0

    stack = StackOps(up=up, status=lambda root: StackStatus(True, info))
    seams = Seams(resolve_stack=lambda request: Profile(), build_missing=build_missing, stack=stack)
    assert cli.main(["stack", "up"], seams=seams) == cli.EXIT_OK
    said = capsys.readouterr().err
    assert said.startswith("stack up in")  # ... run dir <root>): its notes follow, a line each
    return said.split(f"{info.root})\n", 1)[1].splitlines()


def test_the_stacks_notes_say_what_is_enforced_and_what_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fault = FaultService(faults.parse("503=0.7,until=20s"), 40001, 40002, "loki-0")
    info = stack_info(tmp_path, limits=GROUPS, backend_fault=fault)
    notes = stack_notes(info, monkeypatch, capsys)
    assert notes[0] == "otelcol limits enforced (cgroup v1): memory 200Mi"
    assert notes[1].startswith("otelcol cpu limit 100m is NOT enforced: cannot write")
    assert notes[2] == "otelcol cpu: raised to the charm's request 0.25"
    assert notes[3].startswith("backend fault proxy before Loki: 503=0.7,until=20s")
    assert stack_notes(stack_info(tmp_path), monkeypatch, capsys) == []


def test_backend_fault_is_a_checked_stack_flag() -> None:
    req = choice.request(choice.StackFlags(backend_fault="503=0.5,seed=3"))
    assert req.charms is not None
    assert req.charms.backend_fault == faults.parse("503=0.5,seed=3")
    assert choice.request(choice.StackFlags()).charms.backend_fault is None  # type: ignore[union-attr]
    with pytest.raises(choice.ChoiceError, match=r"^--backend-fault: '503=2': "):
        choice.request(choice.StackFlags(backend_fault="503=2"))
    with pytest.raises(choice.ChoiceError, match="--backend-fault: apply to a charm-rendered"):
        choice.request(choice.StackFlags(profile="hand-nop", backend_fault="503=0.5"))


def test_a_running_stack_with_other_faults_is_not_the_one_asked_for() -> None:
    class Asked:
        signals: tuple[str, ...] = ("logs",)  # the default: logs only

        def to_dict(self) -> dict[str, Any]:
            return {"otelcol": self.role(), "loki": self.role(), "backend_fault": "503=0.5"}

        @staticmethod
        def role() -> dict[str, Any]:
            return {"source": {"commit": "c"}, "options": {}}

    running = {"otelcol": Asked.role(), "loki": Asked.role()}
    differ = choice.differences(Asked(), running, None)  # type: ignore[arg-type]
    assert differ == ["--backend-fault: running none, asked 503=0.5"]
    assert choice.differences(Asked(), {**running, "backend_fault": "503=0.5"}, None) == []  # type: ignore[arg-type]


def test_the_collectors_loki_exporter_goes_through_the_proxy(tmp_path: Path) -> None:
    config = {
        "exporters": {
            "loki/send-loki-logs/0": {
                "endpoint": "https://loki-0.loki-endpoints.m.svc.cluster.local:3100/loki/api/v1/push"
            }
        }
    }
    where = localize.OtelcolLocal(Ports.from_base(30000), tmp_path, tmp_path / "ca.crt", {})
    direct = localize.otelcol(config, where)
    proxied = localize.otelcol(config, replace(where, loki_via=41000))
    exporter = proxied.config["exporters"]["loki/send-loki-logs/0"]
    assert exporter["endpoint"] == "https://127.0.0.1:41000/loki/api/v1/push"
    assert exporter["tls"]["server_name_override"] == "loki-0.loki-endpoints.m.svc.cluster.local"
    assert direct.config["exporters"]["loki/send-loki-logs/0"]["endpoint"].startswith(
        "https://127.0.0.1:30004/"
    )
    change = next(c for c in proxied.changes if c.where.endswith(".endpoint"))
    assert change.why == "the backend fault proxy before the local Loki"
