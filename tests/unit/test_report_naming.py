"""How the report names a stack's settings: by its profile when the options are the preset's,
a long value by its digest, never the raw multi-line YAML of an option (`--profile batch`);
the record keeps the full value."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from loadgate import cli
from loadgate.measure import timeseries as ts
from loadgate.records import result as results
from loadgate.report import blocks, naming, page, plots
from loadgate.report.content import build, load
from loadgate.stack import choice

FIXTURES = Path(__file__).parents[1] / "data" / "report" / "results"
RUN = "20261122T231132Z-31c416"  # rev221, with series.json
BATCH = dict(pair.split("=", 1) for pair in choice.preset_pairs("batch"))
OTHER_PROCESSORS = "batch:\n  timeout: 1s\n  send_batch_size: 8192\n"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """The fixtures with one run made a `--profile batch` run (its options the preset's)."""
    root = tmp_path / "results"
    shutil.copytree(FIXTURES, root)
    set_options(root, "batch", dict(BATCH))
    return root


def set_options(root: Path, preset: str, options: dict[str, Any]) -> None:
    path = root / RUN / results.RESULT_FILE
    data = json.loads(path.read_text())
    data["environment"]["charms"]["preset"] = preset
    data["environment"]["charms"]["otelcol"]["options"] = options
    path.write_text(json.dumps(data))


def test_the_batch_preset_is_its_multi_line_processors_option() -> None:
    assert "\n" in BATCH["processors"]  # what the row label used to print in full


def test_options_equal_to_the_preset_are_named_by_the_profile(results_dir: Path) -> None:
    records = load(results_dir)
    run = next(r for r in records.runs if r.run_id == RUN)
    assert run.revision == "rev221 (profile=batch)"
    # The record keeps the full value.
    kept = results.read(results_dir / RUN / results.RESULT_FILE)
    assert kept.environment["charms"]["otelcol"]["options"] == BATCH


def test_an_option_beside_the_preset_is_named_and_a_long_value_by_its_digest(
    results_dir: Path,
) -> None:
    set_options(results_dir, "batch", {**BATCH, "queue_size": 5000})
    run = next(r for r in load(results_dir).runs if r.run_id == RUN)
    assert run.revision == "rev221 (profile=batch, queue_size=5000)"
    set_options(results_dir, "batch", {"processors": OTHER_PROCESSORS})
    run = next(r for r in load(results_dir).runs if r.run_id == RUN)
    assert run.revision == f"rev221 (profile=batch, processors=<sha256:{digest(OTHER_PROCESSORS)}>)"
    # Without the presets (a preset no overlay names any more): every option, long ones digested.
    run = next(r for r in load(results_dir, presets={}).runs if r.run_id == RUN)
    assert run.revision == f"rev221 (profile=batch, processors=<sha256:{digest(OTHER_PROCESSORS)}>)"


def named(
    options: dict[str, object],
    preset: str = "charm-default",
    presets: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The revision the report gives a stack of these options (nothing names a revision: `-`)."""
    environment = {"charms": {"preset": preset, "otelcol": {"options": options}}}
    return naming.revision_of(None, environment, presets or {})


def test_setting_names_short_values_and_digests_long_ones() -> None:
    assert named({"queue_size": 5000}) == "- (queue_size=5000)"
    assert named({"enabled": True}) == "- (enabled=True)"
    long = "x" * (naming.LONG_VALUE + 1)
    assert named({"path": long}) == f"- (path=<sha256:{digest(long)}>)"
    assert named({"path": "x" * naming.LONG_VALUE}) == "- (path=" + "x" * naming.LONG_VALUE + ")"
    assert named({"b": 2, "a": 1}) == "- (a=1, b=2)"
    assert named({"queue_size": 5000}, "queue-5000", naming.preset_options()) == (
        "- (profile=queue-5000)"
    )


def test_the_row_label_and_the_series_plot_title_are_short(
    results_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = build(load(results_dir))
    titles: list[str] = []

    def run_series(data: ts.RunSeries, title: str, path: Path) -> Path:
        titles.append(title)
        path.write_bytes(b"")
        return path

    monkeypatch.setattr(plots, "run_series", run_series)
    out = tmp_path / "out"
    assert cli.main(["report", "--results", str(results_dir), "--out", str(out)]) == cli.EXIT_OK
    assert titles == [
        f"rev221 (profile=batch), otlp-logs constant-arrival-rate, 60,000/min: run {RUN}"
    ]
    md = blocks.markdown(page.document(report, {}))
    assert "| rev221 (profile=batch) | otlp-logs constant-arrival-rate | 60,000/min |" in md
    assert "timeout: 5s" not in md
    assert "send_batch_size" not in (tmp_path / "out" / "report.md").read_text()
