"""`loadgate compare` through the real stack: the default metrics in one pair (one side each:
`--min-pairs 1 --max-pairs 1`, 25 s runs: a saturation run's steady window
then spanned 16-18 s here, the minimum is 10 s) of two queue sizes, each side on its own
charm-rendered stack (kept: the candidate's beside the baseline's, in `<stack dir>-candidate`
at ports 10 above) with a saturation run and a pressure run at 0.7 x the baseline's
saturation, ending in a complete compare.json whose verdict is the exit code (one pair decides
with the calibrated spread of a pair's worsening: bounds for every metric), and nothing left
running. The base port is
$LOADGATE_TEST_COMPARE_BASE_PORT (default 24700)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import processes_mentioning

from loadgate import cli
from loadgate.capacity.compare import margins_file
from loadgate.capacity.compare.record import CompareRecord
from loadgate.stack import local

pytestmark = pytest.mark.local

BASE_PORT = os.environ.get("LOADGATE_TEST_COMPARE_BASE_PORT", "24700")
SAT, P99 = "saturation_per_min", "pressure_p99_ms"
CPU = "pressure_cpu_probe_jobs_per_1000_records"  # beside the verdict: in speed-probe jobs
PER_LOKI = "pressure_cpu_per_loki_cpu"  # the gating CPU: the collector's over Loki's


def test_one_pair_of_the_default_metrics_is_complete_and_exits_with_its_verdict(
    built_bin_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stack_dir, results = tmp_path / "stack", tmp_path / "results"
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack_dir))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    code = cli.main(
        [
            "compare", "--baseline", "queue-size=1000", "--candidate", "queue-size=2000",
            "--min-pairs", "1", "--max-pairs", "1", "--duration", "25s", "--compare-id", "tiny",
            "--base-port", BASE_PORT, "--order", "ABAB",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    text = (results / "tiny" / "compare.json").read_text()
    record = CompareRecord.from_json(text)  # checks every field
    data = json.loads(text)
    assert code == record.exit_code == data["exit_code"], out
    assert code in (0, 1, 3), out
    assert f"verdict {record.verdict} (exit {code})" in " ".join(out.split())
    assert record.plan is not None
    assert (record.plan.min_pairs, record.plan.max_pairs) == (1, 1)
    assert record.stopped in ("max-pairs", "decided")  # decided: every gating metric settled
    assert not record.aa
    assert record.stacks == data["stacks"] == "kept"

    # Both sides, with their charm sources, commits and workload versions.
    for side, queue in (("baseline", 1000), ("candidate", 2000)):
        desc = data[side]["description"]
        assert desc["otelcol"]["options"] == {"queue_size": queue}
        assert len(desc["otelcol"]["source"]["commit"]) >= 7

    # B then C, each a saturation run and a pressure run at the rate the baseline set.
    assert [(r.side, r.repeat) for r in record.runs] == [("baseline", 1), ("candidate", 1)]
    pressure = record.pressure
    assert pressure is not None
    assert pressure.set_by == "tiny-b1-sat"
    assert pressure.saturation_per_min == record.runs[0].values[SAT]
    for run in record.runs:
        sat_id, pr_id = run.refs
        sat = json.loads((results / sat_id / "result.json").read_text())
        pr = json.loads((results / pr_id / "result.json").read_text())
        assert sat["labels"]["side"] == pr["labels"]["side"] == run.side
        assert sat["saturation"]["saturated"] is True, (sat_id, sat["saturation"], record.notes)
        assert run.values[SAT] == sat["saturation"]["accepted_per_min"]
        assert pr["spec"]["rate"] == pressure.rate_per_min
        assert run.values[P99] == pr["client"]["p99_ms"]
        # the collector's marginal CPU per 1,000 records, from the kernel over the load window,
        # over the median job of the speed probe that ran beside the load (its file kept)
        cpu = pr["cpu"]
        assert cpu["probe_jobs"] >= 5
        assert (results / pr_id / "speed-probe.tsv").is_file()
        per_job_s = cpu["probe_ns_per_job"] / 1e9
        assert run.values[CPU] == pytest.approx(cpu["per_1000_records"]["otelcol"] / per_job_s)
        # the collector's CPU seconds over Loki's, both the kernel's over the load window
        assert run.values[PER_LOKI] == pytest.approx(
            cpu["used_s"]["otelcol"] / cpu["used_s"]["loki"]
        )
        assert run.sources == {CPU: "kernel", PER_LOKI: "kernel"}
        for name, value in run.values.items():
            assert value is not None, (run.ref, name, record.notes)
            assert value > 0
    assert pressure.saturation_per_min is not None
    assert pressure.rate_per_min == round(0.7 * pressure.saturation_per_min)
    # One pair is bounded with the calibrated spread (a pair's worsening) and, on kept stacks,
    # the stacks' level: every metric has bounds, said so in its reason; saturation and the CPU
    # per Loki CPU gate, the p99 and the CPU in probe jobs are reported beside the verdict.
    for d in record.decisions:
        assert d.lower is not None, d.reason
        assert d.upper is not None, d.reason
        assert "calibrated" in d.reason, d.reason
        assert "the stacks' level" in d.reason, d.reason
    assert [d.metric.gates for d in record.decisions] == [True, False, False, True]
    shipped = margins_file.shipped().margins()  # the default margins: the shipped file's
    assert {d.metric.name: d.metric.margin for d in record.decisions} == shipped
    assert not any(n.startswith("partial") for n in record.notes)

    # Both stacks it started were stopped.
    for root in (stack_dir, tmp_path / "stack-candidate"):
        assert root.is_dir(), root  # it ran there
        assert local.read_info(root) is None  # stack.json goes with the stack
        assert processes_mentioning(root) == []
