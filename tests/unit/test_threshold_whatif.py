"""benchmarks/threshold_whatif.py: recorded comparisons decided again from their recorded values
(replay.decided_again), at the thresholds they ran with and at others."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import benchmark_script

from loadgate.capacity.compare.record import CompareRecord

WHATIF = benchmark_script.load("threshold_whatif")
RECORDS = Path(__file__).resolve().parents[2] / "docs" / "records"
# Comparisons of today's default metrics, under the shipped margins file's spreads and levels.
TODAYS = [RECORDS / "2026-11-29-day", RECORDS / "2026-11-29-midday",
          RECORDS / "2026-11-29-afternoon", RECORDS / "2026-11-29-evening"]  # fmt: skip


def _todays() -> list[CompareRecord]:
    found = WHATIF.records(TODAYS)
    return [r for _, r in found if WHATIF.of_todays_metrics(r)]


def test_at_the_thresholds_they_ran_with_every_recorded_verdict_comes_out_again() -> None:
    todays = _todays()
    assert len(todays) >= 30
    for record in todays:
        margins = ",".join(
            f"{WHATIF.values.key_of(d.metric.name)}={d.metric.margin * 100:g}"
            for d in record.decisions
        )
        again = WHATIF.decided_at(record, margins)
        assert (again.verdict, again.exit_code) == (record.verdict, record.exit_code), (
            record.compare_id
        )


def test_a_higher_saturation_threshold_clears_an_aa_that_was_too_noisy() -> None:
    (eaa3,) = [r for r in _todays() if r.compare_id.startswith("eaa3")]
    assert eaa3.aa
    assert WHATIF.decided_at(eaa3, "saturation=5").verdict == "too-noisy"
    assert WHATIF.decided_at(eaa3, "saturation=6").verdict == "no-regression"


def test_a_bad_threshold_is_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        WHATIF.main(["--margins", "saturation=0", str(TODAYS[0])])
    assert exited.value.code == 2
    assert "--margins: saturation must be a percentage" in capsys.readouterr().err
