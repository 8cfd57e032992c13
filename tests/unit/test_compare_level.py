"""The stacks' level (issue 38): on kept stacks each side's stack is drawn once a comparison, so a
level it holds for the whole comparison is in the mean worsening but not in the pairs' spread.
`loadgate calibrate` measures it over A/A comparisons on kept stacks, the margins file carries
it, and the rule adds it to the bounds of every comparison on kept stacks (not on fresh ones,
whose pairs each carry their stacks' draw). Pure arithmetic and recorded comparisons."""

from __future__ import annotations

import argparse
import json
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from test_compare_calibrate import SAT, drifting, shipped, words

from loadgate import cli
from loadgate.capacity.compare import calibration, margins, margins_file, rule, welch
from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.compare.stack_modes import FRESH, KEPT
from loadgate.cli.compare_input import with_margins

# A 5 % threshold (the shipped saturation threshold is 6 %): the figures below are chosen for it.
LEVELLED = replace(rule.SATURATION, margin=0.05, paired_spread=0.02, paired_df=40,
                   level_spread=0.04, level_df=10)  # fmt: skip


# ---- the arithmetic ---------------------------------------------------------------------------


def test_without_a_level_the_error_is_the_pairs_alone() -> None:
    assert welch.standard_error(0.06, 41.0, 4) == (pytest.approx(0.03), 41.0)
    assert welch.standard_error(0.06, 41.0, 4, (0.0, 10)) == (pytest.approx(0.03), 41.0)


def test_a_level_adds_to_the_error_on_welch_satterthwaites_df() -> None:
    error, df = welch.standard_error(0.06, 41.0, 4, (0.04, 10))
    assert error == pytest.approx(math.sqrt(0.06**2 / 4 + 0.04**2))  # 5.0 %
    expected = (0.0009 + 0.0016) ** 2 / (0.0009**2 / 41 + 0.0016**2 / 10)
    assert df == pytest.approx(expected)
    assert 10 < df < 41


def test_no_number_of_pairs_narrows_the_bounds_below_the_level() -> None:
    # At a 4 % level the bounds' half-width stays above t * 4 % > 5 %: never narrow enough.
    assert welch.pairs_needed(0.06, 41, 0.05, 2, 0.975, level=(0.04, 10)) is None
    assert welch.pairs_needed(0.06, 41, 0.05, 2, 0.975) is not None
    # A small level only asks for more pairs.
    few = welch.pairs_needed(0.06, 41, 0.05, 2, 0.975)
    more = welch.pairs_needed(0.06, 41, 0.05, 2, 0.975, level=(0.01, 10))
    assert few is not None
    assert more is not None
    assert more > few


def test_the_level_widens_the_bounds_and_says_so() -> None:
    # Four pairs each 7 % worse: without the level a regression, with 4 % of it the lower bound
    # reaches below 0 and the reason names the level.
    a, b = [100.0] * 4, [100.0 / 1.07] * 4
    bare = rule.decide(replace(LEVELLED, level_spread=None, level_df=0), a, b, 0.975)
    assert bare.decision == rule.REGRESSION
    levelled = rule.decide(LEVELLED, a, b, 0.975)
    assert levelled.decision != rule.REGRESSION
    assert levelled.lower is not None
    assert levelled.lower < 0 < (levelled.change or 0)
    assert "the stacks' level 4.0%" in levelled.reason
    assert levelled.repeats_needed is None  # pairs cannot narrow a level
    assert "no number of pairs narrows the bounds to ±5 % with the stacks' level" in (
        levelled.reason
    )


def test_a_metric_with_a_level_is_recorded_and_read_back() -> None:
    data = LEVELLED.to_dict()
    assert (data["level_spread"], data["level_df"]) == (0.04, 10)
    assert rule.Metric.from_dict(data) == LEVELLED
    assert "level_spread" not in rule.SATURATION.to_dict() or rule.SATURATION.level_spread


def test_what_pairs_can_detect_counts_the_level() -> None:
    bare = replace(LEVELLED, level_spread=None, level_df=0)
    assert margins.detectable(LEVELLED, 0.06, 41, 4, 0.98) > margins.detectable(
        bare, 0.06, 41, 4, 0.98
    )
    assert margins.noisy(LEVELLED, 0.06, 41, 4, 0.98)


# ---- measured by calibrate ---------------------------------------------------------------------


def _aa(r: random.Random, compare_id: str, level: float, stacks: str = KEPT) -> CompareRecord:
    """An A/A record of 4 pairs at 2 % noise a run, its candidate's stack `level` apart."""
    record = drifting(r, compare_id, 4, 0.0, 0.02, worse=level)
    return replace(record, aa=True, stacks=stacks, recorded=None)  # of today's format


def test_calibrate_measures_the_level_over_a_as_on_kept_stacks_only() -> None:
    r = random.Random(38)  # noqa: S311 (a simulation)
    levels = [0.05, -0.05, 0.0, 0.05, -0.05, 0.0]
    records = [_aa(r, f"aa{i}", x) for i, x in enumerate(levels)]
    found = calibration.level(records, SAT)
    assert found is not None
    assert found.df == 6  # an A/A's true mean is known (0): a degree of freedom each
    # The means' mean square is about 0.05^2 * 4/6 (4.1 %), less what 4 pairs at 2.8 % explain.
    assert 0.025 < found.spread < 0.055
    # Not A/A (the same sides again may have moved), fresh stacks (each pair carries its
    # stacks' draw), or fewer than 3: no level from them.
    others = [replace(records[0], aa=False), *(_aa(r, f"f{i}", 0.2, FRESH) for i in range(3))]
    assert calibration.level([*records[:2], *others], SAT) is None
    # A/As whose means are 0 within their pairs' noise: no level (0, never negative).
    steady = [_aa(r, f"s{i}", 0.0) for i in range(6)]
    level = calibration.level(steady, SAT)
    assert level is not None
    assert level.spread < 0.015


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty results folder the commands read (and a stack folder they never use)."""
    root = tmp_path / "results"
    root.mkdir()
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(root))
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    return root


def test_calibrate_writes_the_level_and_carries_the_one_in_force_when_it_cannot_measure(
    results: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = random.Random(5)  # noqa: S311 (a simulation)
    ids = []
    for i, level in enumerate([0.06, -0.06, 0.0, 0.06]):
        ids.append(f"aa{i}")
        (results / f"aa{i}").mkdir()
        (results / f"aa{i}" / "compare.json").write_text(_aa(r, f"aa{i}", level).to_json())
    out_file = tmp_path / "margins.yaml"
    argv = ["calibrate", *[x for i in ids for x in ("--from", i)], "--metrics", "saturation",
            "--output", str(out_file)]  # fmt: skip
    assert cli.main(argv) == 0
    text = words(capsys.readouterr().out)
    entry = yaml.safe_load(out_file.read_text())["metrics"]["saturation"]
    assert entry["level_df"] == 4
    assert entry["level_spread"] > 0.02
    assert (
        f"the stacks' level (an A/A comparison's mean beyond its pairs, kept stacks): "
        f"{entry['level_spread'] * 100:.1f} % on 4 df, over 4 A/A comparisons" in text
    )
    # One A/A cannot tell: the level of the margins in force (the shipped file's) is carried
    # over, and said so.
    out2 = tmp_path / "margins2.yaml"
    argv = ["calibrate", "--from", "aa0", "--metrics", "saturation", "--output", str(out2)]
    assert cli.main(argv) == 0
    printed = words(capsys.readouterr().out)
    carried = yaml.safe_load(out2.read_text())["metrics"]["saturation"]
    in_force = shipped()["metrics"]["saturation"]
    assert (
        f"{in_force['level_spread'] * 100:.1f} % on {in_force['level_df']} df carried over "
        "from the margins in force"
    ) in printed
    assert (carried["level_spread"], carried["level_df"]) == (
        in_force["level_spread"], in_force["level_df"]
    )  # fmt: skip
    # Or from the margins file given (`--margins-file`), which the thresholds come from too.
    out3 = tmp_path / "margins3.yaml"
    argv = ["calibrate", "--from", "aa0", "--metrics", "saturation", "--margins-file",
            str(out_file), "--margins", "saturation=8", "--output", str(out3)]  # fmt: skip
    assert cli.main(argv) == 0
    given = yaml.safe_load(out3.read_text())["metrics"]["saturation"]
    assert (given["level_spread"], given["level_df"]) == (entry["level_spread"], 4)
    assert given["margin_percent"] == 8  # --margins wins over the file


def test_the_level_counts_on_kept_stacks_only(tmp_path: Path) -> None:
    file = tmp_path / "m.yaml"
    file.write_text(yaml.safe_dump({
        "format": "loadgate-margins/1", "status": "test", "metrics": {"saturation": {
            "margin_percent": 5, "paired_spread": 0.06, "paired_df": 41, "level_spread": 0.03,
            "level_df": 10}}}))  # fmt: skip
    args = argparse.Namespace(margins_file=str(file), margins=None, stacks=KEPT)
    (kept,) = with_margins(args, (rule.SATURATION,))
    assert (kept.level_spread, kept.level_df) == (0.03, 10)
    (fresh,) = with_margins(argparse.Namespace(**{**vars(args), "stacks": FRESH}),
                            (rule.SATURATION,))  # fmt: skip
    assert (fresh.level_spread, fresh.level, fresh.paired_spread) == (None, 0.0, 0.06)
    # A replay follows the record's stacks, whatever --stacks says.
    (replayed,) = with_margins(args, (rule.SATURATION,), FRESH)
    assert replayed.level == 0.0
    assert json.loads(json.dumps(kept.to_dict()))["level_spread"] == 0.03
    assert margins_file.read(file).levels() == {rule.SATURATION.name: (0.03, 10)}


def test_the_tables_say_no_number_of_pairs_settles_a_metric_held_by_the_level() -> None:
    from rich.console import Console

    from loadgate.capacity.compare.record import RepeatRecord, Side
    from loadgate.capacity.compare.rule import BASELINE, CANDIDATE
    from loadgate.report import compare_tables

    runs = []
    for pair, (a, b) in enumerate([(100.0, 99.0), (100.0, 101.0), (100.0, 98.5)], start=1):
        runs += [RepeatRecord(2 * pair - 2, BASELINE, pair, {SAT: a}),
                 RepeatRecord(2 * pair - 1, CANDIDATE, pair, {SAT: b})]  # fmt: skip
    metric = replace(LEVELLED, level_spread=0.06)
    record = CompareRecord.build("lv", Side("a"), Side("b"), runs, [metric], stacks=KEPT)
    (d,) = record.decisions
    assert d.decision == rule.TOO_NOISY
    console = Console(width=200, record=True)
    for line in compare_tables.result_lines(record):
        console.print(line)
    text = " ".join(console.export_text().split())
    assert "no number of pairs settles it (the stacks' level)" in text
