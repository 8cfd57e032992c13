"""The local stack end to end: exactly N records in, N accepted, exported, received and stored."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import StartStack, processes_mentioning

from loadgate.measure import queries as q
from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.stack import cpu_split, local
from loadgate.stack.layout import Layout
from loadgate.stack.ports import Ports
from loadgate.stack.profile import Profile
from loadgate.tlsclient import client_context

pytestmark = pytest.mark.local

RUN_ID = "stacktest-1"
N = 137


def otlp_request(first: int, count: int) -> dict[str, object]:
    now = time.time_ns()
    records = [
        {
            "timeUnixNano": str(now + i),
            "severityNumber": 9,
            "severityText": "INFO",
            "body": {"stringValue": f"{q.run_marker(RUN_ID)}record {first + i}"},
        }
        for i in range(count)
    ]
    return {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [
                        {"key": "service.name", "value": {"stringValue": "loadgate-k6"}},
                        {"key": "loadtest.run_id", "value": {"stringValue": RUN_ID}},
                    ]
                },
                "scopeLogs": [{"scope": {"name": "test"}, "logRecords": records}],
            }
        ]
    }


def wait_for(what: str, probe: object, expected: int, timeout: float = 40.0) -> None:
    assert callable(probe)
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = probe()
        if value == expected:
            return
        time.sleep(0.5)
    pytest.fail(f"{what}: expected {expected}, last saw {value}")


def settled(
    probes: dict[str, Callable[[], float | None]], timeout: float = 60.0
) -> dict[str, float]:
    """Each probe's value once every one stopped changing for 4 s (Prometheus scrapes every
    2 s): the charm's collector ships its own start-up logs through its pipeline first."""
    deadline = time.monotonic() + timeout
    now = time.monotonic()
    last = {what: (probe(), now) for what, probe in probes.items()}
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = time.monotonic()
        for what, probe in probes.items():
            value = probe()
            if value != last[what][0]:
                last[what] = (value, now)
        if all(v is not None and now - since >= 4.0 for v, since in last.values()):
            return {what: float(v) for what, (v, _) in last.items() if v is not None}
    pytest.fail(f"no settled values within {timeout:.0f}s (last {last})")


def test_exactly_n_records_are_accepted_exported_received_and_stored(
    stack: local.StackInfo,
) -> None:
    exported = q.loki_exporters_only(q.COLLECTOR_EXPORTED)
    figures = {
        "collector accepted": q.counter_total(q.COLLECTOR_ACCEPTED),
        "collector exported": exported,
        "Loki lines received": q.counter_total(q.LOKI_RECEIVED),
    }
    with httpx.Client(timeout=10) as client:
        prom = PrometheusAPI(stack.prometheus_url, client)
        before = settled({w: lambda e=expr: prom.instant(e) for w, expr in figures.items()})
    sent = 0
    with httpx.Client(timeout=10) as client:
        for size in (50, 50, 30, 7):  # 137 records in four requests
            resp = client.post(f"{stack.otlp_http_url}/v1/logs", json=otlp_request(sent, size))
            assert resp.status_code == 200, resp.text
            sent += size
    assert sent == N

    with stack.loki_client(timeout=10) as client:
        prom = PrometheusAPI(stack.prometheus_url, client)
        loki = LokiAPI(stack.loki_url, client)
        for what, expr in figures.items():
            wait_for(what, lambda e=expr, w=what: (prom.instant(e) or 0) - before[w], N)
        start = time.time() - 120
        wait_for("LogQL count", lambda: loki.count_run(RUN_ID, start, time.time()), N)
        assert prom.instant(q.counter_total(q.COLLECTOR_REFUSED)) == 0


def test_status_reports_each_service_healthy(stack: local.StackInfo) -> None:
    st = local.status(stack.root)
    assert st.running
    assert st.healthy
    assert {(s.name, s.port, s.pebble) for s in st.services} == {
        ("otelcol", stack.ports.otlp_http, "active"),
        ("loki", stack.ports.loki_http, "active"),
        ("prometheus", stack.ports.prometheus, "active"),
    }


def test_loki_refuses_a_client_without_the_stack_ca(stack: local.StackInfo) -> None:
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{stack.loki_url}/ready", timeout=5)  # system CAs only
    # The stack's CA but the wrong name: Loki's certificate names its in-cluster host only.
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{stack.loki_url}/ready", verify=client_context(stack.ca_file), timeout=5)
    with stack.loki_client(timeout=5) as client:
        assert client.get(f"{stack.loki_url}/ready").status_code == 200


def test_a_second_up_is_refused_while_one_runs(stack: local.StackInfo) -> None:
    with pytest.raises(local.StackError, match="already running"):
        local.up(Profile(), stack.ports, root=stack.root, bin_dir=stack.bin_dir)


def _pids_of(root: Path) -> list[int]:
    return processes_mentioning(root)


def test_up_then_down_leaves_no_process(start_stack: StartStack, tmp_path: Path) -> None:
    root = tmp_path / "stack"
    started = time.monotonic()
    info = start_stack(root, 24640)
    print(f"stack up in {time.monotonic() - started:.1f}s")  # a figure, not a timed assertion
    service_pids = _pids_of(root)
    assert len(service_pids) >= 3  # otelcol, loki, prometheus (and pebble itself)
    local.pebble_client(info).stop_services(["prometheus"])  # gone before `down`
    stopped = local.down(root)
    assert any("pebble" in s for s in stopped)
    assert "already stopped: prometheus" in stopped, stopped
    assert not any(s.startswith("services") and "prometheus" in s for s in stopped), stopped
    assert _pids_of(root) == []
    for pid in [info.pid, *service_pids]:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert not (root / "stack.json").exists()
    assert local.down(root) == []  # idempotent


def test_a_port_in_use_is_named_and_nothing_starts(start_stack: StartStack, tmp_path: Path) -> None:
    ports = Ports.from_base(24660)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", ports.loki_http))
        busy.listen()
        with pytest.raises(
            local.StackError, match=f"port in use: loki_http {ports.loki_http}"
        ) as info:
            start_stack(tmp_path / "stack", 24660)
    assert "`loadgate stack down`" in str(info.value)
    assert not (tmp_path / "stack" / "stack.json").exists()
    assert _pids_of(tmp_path / "stack") == []


def test_a_failed_start_stops_everything(
    built_bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Loki config it cannot load: the stack never gets healthy, so `up` stops what it started.
    root = tmp_path / "stack"
    real_write = local.write_configs

    def broken_write(
        layout: Layout,
        profile: Profile,
        ports: Ports,
        bin_dir: Path,
        on_step: Any = None,
        split: Any = None,
    ) -> local.Written:
        written = real_write(layout, profile, ports, bin_dir, on_step, split)
        layout.loki_config.write_text(json.dumps({"server": {"no_such_option": 1}}))
        return written

    monkeypatch.setattr(local, "write_configs", broken_write)
    with pytest.raises(local.StackError, match="not healthy after 8s: loki"):
        local.up(Profile(), Ports.from_base(24680), root=root, bin_dir=built_bin_dir, timeout=8)
    assert _pids_of(root) == []
    assert not (root / "stack.json").exists()
    assert os.path.isfile(root / "logs" / "pebble.log")


def test_the_pipeline_runs_on_its_own_cpus(stack: local.StackInfo) -> None:
    """Each service on its side of the CPU split, as stack.json records it (on one CPU, or
    with LOADGATE_CPU_SPLIT=off, no split and every process on every usable CPU)."""
    expected = cpu_split.from_environment()
    assert stack.cpu_split == expected
    recorded = json.loads(Layout(stack.root).state_file.read_text()).get("cpu_split")
    assert recorded == (expected.to_dict() if expected else None)
    by_name = {name: pid for name, pid in local.leftovers(stack)} | {"pebble": stack.pid}
    assert {"otelcol", "loki", "prometheus"} <= set(by_name), by_name
    usable = os.sched_getaffinity(0)
    pipeline = set(expected.pipeline) if expected else usable
    generator = set(expected.generator) if expected else usable
    for name in ("otelcol", "loki"):
        assert os.sched_getaffinity(by_name[name]) == pipeline, name
    for name in ("pebble", "prometheus"):
        assert os.sched_getaffinity(by_name[name]) == generator, name
