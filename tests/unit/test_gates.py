"""Gate judging: thresholds, measured values and PASS/FAIL."""

from __future__ import annotations

from loadgate.contract.gates import FAIL, PASS, judge, verdict
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures


def client(**over: object) -> ClientFigures:
    base: dict[str, object] = dict(
        requests=12_000,
        failed=0,
        error_rate=0.0,
        p99_ms=8.0,
        records_sent=60_000,
        records_accepted=60_000,
        records_per_minute=60_000.0,
        duration_s=60.0,
    )
    base.update(over)
    return ClientFigures(**base)  # type: ignore[arg-type]


def by_name(spec: RunSpec, c: ClientFigures, lost: int | None = None) -> dict[str, bool]:
    return {g.name: g.passed for g in judge(spec, c, lost)}


def test_all_gates_pass() -> None:
    spec = RunSpec.from_params({})
    gates = judge(spec, client(), lost_records=0)
    assert [g.name for g in gates] == ["error_rate", "p99_ms", "logs_per_minute", "lost_records"]
    assert all(g.passed for g in gates)
    assert verdict(gates) == PASS
    thresholds = {g.name: g.threshold for g in gates}
    assert thresholds == {
        "error_rate": "<= 1%",
        "p99_ms": "< 100 ms",
        "logs_per_minute": ">= 57,000",
        "lost_records": "<= 0",
    }


def test_each_gate_fails_on_its_own() -> None:
    spec = RunSpec.from_params({})
    assert by_name(spec, client(error_rate=0.0101))["error_rate"] is False
    assert by_name(spec, client(error_rate=0.01))["error_rate"] is True  # at most
    assert by_name(spec, client(p99_ms=100.0))["p99_ms"] is False  # strictly below
    assert by_name(spec, client(records_per_minute=56_999.0))["logs_per_minute"] is False
    assert by_name(spec, client(), lost=1)["lost_records"] is False


def test_impossible_p99_fails_the_verdict() -> None:
    spec = RunSpec.from_params({"p99-ms": 0.001})
    gates = judge(spec, client(p99_ms=0.5), lost_records=0)
    assert verdict(gates) == FAIL
    assert [g.name for g in gates if not g.passed] == ["p99_ms"]


def test_unmeasured_value_fails() -> None:
    spec = RunSpec.from_params({})
    gates = judge(spec, client(p99_ms=None))
    p99 = next(g for g in gates if g.name == "p99_ms")
    assert p99.value is None
    assert p99.passed is False


def test_no_logs_per_minute_gate_without_a_minimum() -> None:
    spec = RunSpec.from_params({"executor": "constant-vus"})
    assert "logs_per_minute" not in by_name(spec, client())
    assert "lost_records" not in by_name(spec, client())


def test_no_gates_is_not_a_pass() -> None:
    assert verdict([]) == FAIL


def test_the_p99_gate_names_the_accepted_requests_metric() -> None:
    # A refused request is an error, not a latency: the p99 is of k6's 2xx requests only.
    (p99,) = [g for g in judge(RunSpec.from_params({}), client()) if g.name == "p99_ms"]
    assert p99.source.endswith("(http_req_duration{expected_response:true})")
