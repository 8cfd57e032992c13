"""The default stack runs what the otelcol and Loki charms render (pinned rev221 and rev244),
localized to loopback: the real binaries run the charms' configs, the queries find the metric
names the charm's telemetry config produces, and the run's records balance to the record with
the collector's own logs flowing through the same pipeline (its internal-telemetry loop)."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import TO_FILL_BASE_PORT

from loadgate import cli
from loadgate.charms import render
from loadgate.measure import queries as q
from loadgate.measure.queries import PrometheusAPI
from loadgate.stack import local, procs

pytestmark = pytest.mark.local

BASE_PORT = 24800


def result_of(results: Path) -> dict[str, Any]:
    files = list(results.glob("*/result.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def test_the_stack_runs_what_the_charms_rendered(stack: local.StackInfo) -> None:
    charms = stack.charms
    assert charms is not None
    otelcol, loki = charms["otelcol"], charms["loki"]
    assert otelcol["source"]["commit"].startswith("2a77867")
    assert otelcol["source"]["revisions"] == [221]
    assert otelcol["source"]["workload_tag"] == "0.130-26.04"
    assert otelcol["workload"] == {"part": "otelcol", "version": "v0.130.1"}
    assert loki["source"]["revisions"] == [244]
    assert loki["workload"] == {"part": "loki", "version": "v3.7.8"}
    assert charms["missing_components"] == []  # the build has every rendered component
    assert stack.loki_server_name == render.fqdn("loki")

    config = yaml.safe_load(stack.layout.collector_config.read_text())
    assert "filter/internal-telemetry-loop-breaker/otelcol/0" in config["processors"]
    assert config["service"]["telemetry"]["resource"]["service.name"] == "otelcol-internal"
    exporter = config["exporters"]["loki/send-loki-logs/0"]
    assert exporter["endpoint"] == f"https://127.0.0.1:{stack.ports.loki_http}/loki/api/v1/push"
    assert exporter["tls"]["server_name_override"] == render.fqdn("loki")
    assert exporter["tls"]["insecure_skip_verify"] is False
    assert local.status(stack.root).healthy


def test_queries_find_the_names_the_charms_telemetry_config_exposes(
    stack: local.StackInfo,
) -> None:
    """The charm keeps the collector's default metrics reader: counters without `_total`."""
    text = httpx.get(f"http://127.0.0.1:{stack.ports.otelcol_metrics}/metrics").text
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1] != "#"}
    assert "otelcol_process_cpu_seconds" in names
    assert "otelcol_process_cpu_seconds_total" not in names
    prom = PrometheusAPI(stack.prometheus_url, httpx.Client(timeout=10))
    found: dict[str, float | None] = {}
    deadline = time.monotonic() + 30  # the first scrapes of a fresh stack
    metrics = (q.COLLECTOR_CPU, q.COLLECTOR_UPTIME, q.COLLECTOR_RSS, q.COLLECTOR_ACCEPTED)
    while time.monotonic() < deadline:
        found = {m: prom.instant(q.counter_total(m)) for m in metrics}
        if all(v is not None for v in found.values()):
            break
        time.sleep(1)
    assert all(v is not None for v in found.values()), found


def pause_loki(
    info: local.StackInfo, results: Path, after: float, seconds: float
) -> threading.Thread:
    """SIGSTOP Loki `after` seconds into the load (once k6 writes its log under `results`) for
    `seconds`: the exporter's pushes time out and it retries."""

    def pause() -> None:
        stopped = threading.Event()
        deadline = time.monotonic() + 120
        while not list(results.glob("*/k6.log")) and time.monotonic() < deadline:
            stopped.wait(0.2)
        stopped.wait(after)
        loki = [pid for name, pid in local.leftovers(info) if name == "loki"]
        assert loki, "no Loki process"
        proc = procs.ProcessId.of(loki[0])
        assert proc is not None
        procs.signal_if_alive(proc, signal.SIGSTOP)
        print(f"[pause] Loki (pid {proc.pid}) stopped at {time.strftime('%H:%M:%S')}")
        try:
            stopped.wait(seconds)
        finally:
            procs.signal_if_alive(proc, signal.SIGCONT)
            print(f"[pause] Loki continued at {time.strftime('%H:%M:%S')}")

    thread = threading.Thread(target=pause, daemon=True)
    thread.start()
    return thread


def test_the_runs_records_balance_with_the_collectors_own_logs_in_the_pipeline(
    stack_to_fill: local.StackInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loki paused mid-run until the collector's sending queue is full: the exporter logs every
    request it cannot queue, and the loop breaker drops those lines (the drain must count them,
    or it would never end). The run's own steps still balance to the record."""
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack_to_fill.root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path))
    # 120 requests/s of 5 records fill the charm's 1,000-batch queue in about 8 s.
    thread = pause_loki(stack_to_fill, tmp_path, after=3, seconds=13)
    code = cli.main(
        ["run", "--duration", "20s", "--rate", "36000", "--base-port", str(TO_FILL_BASE_PORT),
         "--drain-timeout", "120"]
    )  # fmt: skip
    thread.join()
    result = result_of(tmp_path)
    steps = {s["name"]: s["count"] for s in result["ledger"]["steps"]}
    assert steps["accepted"] == steps["exported"] == steps["stored"], result["ledger"]
    assert steps["stored"] == result["client"]["records_accepted"]
    assert result["pipeline"]["collector_refused"] > 0  # the queue was full
    assert result["pipeline"]["collector_own_filtered"] > 0
    assert result["delivered"]["drained"] is True
    assert result["ledger"]["lost_after_acceptance"] == 0
    assert code in (cli.EXIT_OK, cli.EXIT_GATE_FAILED)  # p99 may fail while Loki was paused
    charms = result["environment"]["charms"]
    assert charms["otelcol"]["source"]["revisions"] == [221]


def test_another_revision_runs_from_its_own_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """rev160: no internal-telemetry loop, the same workload version; a run of it balances."""
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    base = BASE_PORT + 20
    code = cli.main(["run", "--otelcol-charm", "rev160", "--duration", "5s", "--rate", "6000",
                     "--base-port", str(base)])  # fmt: skip
    assert code == cli.EXIT_OK, capsys.readouterr().err
    result = result_of(tmp_path / "results")
    otelcol = result["environment"]["charms"]["otelcol"]
    assert otelcol["source"]["revisions"] == [160, 161]
    assert otelcol["source"]["workload_tag"] == "0.130-24.04"
    assert result["ledger"]["balanced"] is True
    assert result["pipeline"]["collector_own_filtered"] == 0
    rendered = yaml.safe_load((tmp_path / "stack" / "config" / "otelcol.yaml").read_text())
    assert not any(p.startswith("filter/internal-telemetry") for p in rendered["processors"])


def test_charms_render_writes_the_configs_with_an_option_and_says_what_it_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "render"
    argv = ["charms", "render", "--out", str(out), "--charm-config", "queue_size=5000"]
    assert cli.main(argv) == cli.EXIT_OK
    shown = capsys.readouterr().out
    assert "charms rendered in" in shown
    assert "exporters.loki/send-loki-logs/0.endpoint" in shown
    config = yaml.safe_load((out / "config" / "otelcol.yaml").read_text())
    assert config["exporters"]["loki/send-loki-logs/0"]["sending_queue"]["queue_size"] == 5000
    report = json.loads((out / "render.json").read_text())
    assert report["otelcol"]["options"] == {"queue_size": 5000}
    assert report["render"]["otelcol"]["status"]["name"] == "active"
    assert report["missing_components"] == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--charm-config", "no_such_option=1"], "has no option 'no_such_option'"),
        (["--charm-config", "queue_size=lots"], "queue_size: must be a whole number"),
        (["--charm-config", "tls_insecure_skip_verify=true"], "loadgate verifies TLS everywhere"),
        (["--otelcol-charm", "rev169"], "revision 169 has no tag rev169"),
    ],
)
def test_bad_charm_input_is_refused_before_anything_starts(
    tmp_path: Path, argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "render"
    assert cli.main(["charms", "render", "--out", str(out), *argv]) == cli.EXIT_BAD_INPUT
    assert said in capsys.readouterr().err
    assert not out.exists()
