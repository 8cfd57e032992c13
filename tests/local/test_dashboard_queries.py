"""The k6 charm's Grafana dashboard against the real stack: after a run, every query of every
panel parses in Prometheus 3 and the panels of a healthy run show it (the k6 metrics come by
remote write with native histograms, as in COS); Loki's discarded lines show once Loki discards.

The metric names are the same in COS but for the collector's counters, which may lose their
`_total` there: the queries match both (charms/k6-k8s/tests/unit/test_dashboard_json.py).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import SHORT_RUN_ID, ShortRun

from loadgate import cli
from loadgate.contract.spec import RunSpec
from loadgate.stack import local
from loadgate.targets.local import LocalTarget

pytestmark = pytest.mark.local

DASHBOARD_FILE = (
    Path(__file__).resolve().parents[2] / "charms/k6-k8s/src/grafana_dashboards/loadgate-k6.json"
)
RUN_ID = SHORT_RUN_ID
STUCK_RUN_ID = "dash-stuck.1"
RATE_WINDOW = "20s"
# Queries a clean run leaves empty: their series appear only with a failure of their kind.
EMPTY_WHEN_CLEAN = {
    ("Generator: VUs and dropped iterations/s", "C"): "k6 dropped no iteration (see below)",
    ("Exporters: sent and failed log records/s", "C"): "the queue refused nothing",
    ("Lines discarded/s by reason", "A"): "Loki discarded nothing (see the test below)",
}
# Queries whose value must rise above zero during a healthy run.
POSITIVE = {
    ("Log records/s: offered and accepted", "A"),
    ("Log records/s: offered and accepted", "B"),
    ("Request duration: p99 and p50", "A"),
    ("Generator: VUs and dropped iterations/s", "B"),
    ("Receiver: accepted and refused log records/s", "A"),
    ("Exporters: sent and failed log records/s", "A"),
    ("Loki exporter queue: size and capacity", "B"),
    ("Collector CPU and memory", "A"),
    ("Collector CPU and memory", "B"),
    ("Lines received/s", "A"),
}


def targets() -> list[tuple[str, str, str]]:
    board = json.loads(DASHBOARD_FILE.read_text())
    return [
        (p["title"], t["refId"], t["expr"])
        for p in board["panels"]
        if p["type"] != "row"
        for t in p["targets"]
    ]


def grafana_regex_value(value: str) -> str:
    """A variable's value as Grafana's Prometheus datasource puts it into a `=~` matcher: regex
    characters escaped with a backslash, itself escaped in the PromQL string (a run id has no
    backslash of its own)."""
    return re.sub(r"([$^*{}\[\]'+?.()|])", r"\\\\\1", value)


def grafana_to_promql(expr: str, run_id: str) -> str:
    """What Grafana sends for one selected run and `All` collectors and Lokis."""
    return (
        expr.replace("$run_id", grafana_regex_value(run_id))
        .replace("$collector", ".*")
        .replace("$loki", ".*")
        .replace("$__rate_interval", RATE_WINDOW)
    )


def query_range(prom: str, query: str, start: float, end: float) -> dict[str, Any]:
    resp = httpx.get(
        f"{prom}/api/v1/query_range",
        params={"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "2"},
        timeout=30,
    )
    body = resp.json()
    assert resp.status_code == 200, body
    assert body["status"] == "success", body
    return body["data"]


def values(data: dict[str, Any]) -> list[float]:
    return [float(v) for series in data["result"] for _, v in series["values"] if v != "NaN"]


@pytest.fixture(scope="module")
def run_window(short_run: ShortRun) -> tuple[float, float]:
    """A short passing run of the default scenario (the suite's: conftest.py); the span to
    query."""
    assert short_run.code == cli.EXIT_OK
    return short_run.start, short_run.end


@pytest.mark.parametrize(
    ("title", "ref", "expr"), [pytest.param(*t, id=f"{t[0]}/{t[1]}") for t in targets()]
)
def test_every_query_works_on_a_real_run(
    stack: local.StackInfo, run_window: tuple[float, float], title: str, ref: str, expr: str
) -> None:
    data = query_range(stack.prometheus_url, grafana_to_promql(expr, RUN_ID), *run_window)
    found = values(data)
    if (title, ref) in EMPTY_WHEN_CLEAN:
        assert found == [], EMPTY_WHEN_CLEAN[(title, ref)]
        return
    assert found, f"{title}/{ref}: no data for run {RUN_ID}"
    if (title, ref) in POSITIVE:
        assert max(found) > 0, f"{title}/{ref}: never above 0"


def test_the_run_id_variable_lists_the_run(
    stack: local.StackInfo, run_window: tuple[float, float]
) -> None:
    board = json.loads(DASHBOARD_FILE.read_text())
    (run_var,) = [v for v in board["templating"]["list"] if v["name"] == "run_id"]
    m = re.fullmatch(r"label_values\((\w+), (\w+)\)", run_var["query"]["query"])
    assert m, run_var["query"]
    resp = httpx.get(
        f"{stack.prometheus_url}/api/v1/label/{m.group(2)}/values",
        params={"match[]": m.group(1), "start": f"{run_window[0]:.3f}"},
        timeout=30,
    )
    assert RUN_ID in resp.json()["data"]


def test_discarded_lines_show_by_reason(
    stack: local.StackInfo, run_window: tuple[float, float]
) -> None:
    """A line older than Loki's max sample age (a week by default) is discarded and counted."""
    old_ns = int((time.time() - 30 * 86400) * 1e9)
    push = {"streams": [{"stream": {"job": "dashboard-test"}, "values": [[str(old_ns), "old"]]}]}
    with stack.loki_client() as client:
        # Twice, a few scrapes apart: the first discard creates the series, and rate() sees
        # only increases after a series' first sample.
        for i in range(2):
            resp = client.post(f"{stack.loki_url}/loki/api/v1/push", json=push)
            assert resp.status_code == 400, resp.text
            if i == 0:
                time.sleep(5)
    expr = panel_query("Lines discarded/s by reason", "A")
    deadline = time.time() + 20
    found: list[dict[str, Any]] = []
    while time.time() < deadline and not found:
        time.sleep(2)
        data = query_range(
            stack.prometheus_url, grafana_to_promql(expr, RUN_ID), time.time() - 30, time.time()
        )
        found = [
            s for s in data["result"] if any(v != "NaN" and float(v) > 0 for _, v in s["values"])
        ]
    assert found, "Loki's discarded line never showed on the panel"
    assert found[0]["metric"]["reason"]


def panel_query(title: str, ref: str) -> str:
    (expr,) = [e for t, r, e in targets() if (t, r) == (title, ref)]
    return expr


def test_dropped_iterations_show_when_the_generator_runs_out_of_vus(
    stack: local.StackInfo, tmp_path: Path
) -> None:
    """A target that takes connections and never answers holds every VU (at most 10 here):
    the arrival-rate executor drops the iterations it has no VU for."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(128)  # the kernel completes the handshakes; nothing ever reads
        target = f"http://127.0.0.1:{silent.getsockname()[1]}"
        spec = RunSpec.from_params(
            {"rate": 3000, "duration": "6s", "vus": 1, "run-id": STUCK_RUN_ID, "target": target}
        )
        start = time.time()
        cmd = LocalTarget(stack).command(spec, tmp_path)
        proc = subprocess.run(
            cmd.argv, env={**os.environ, **cmd.env}, cwd=tmp_path, capture_output=True, timeout=120
        )
    assert proc.returncode != 0  # its thresholds fail
    expr = panel_query("Generator: VUs and dropped iterations/s", "C")
    deadline = time.time() + 20  # until k6's last remote-write push is in
    found: list[float] = []
    while not (found and max(found) > 0) and time.time() < deadline:
        time.sleep(1)
        data = query_range(
            stack.prometheus_url, grafana_to_promql(expr, STUCK_RUN_ID), start, time.time()
        )
        found = values(data)
    assert found
    assert max(found) > 0
