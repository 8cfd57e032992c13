"""Typed records: the reader driven by the dataclasses' fields and type hints (contract.typed),
the one reader of result.json (records.result) and record files (records.files)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from support.runresults import pipeline, run_result

from loadgate.contract.gates import Gate
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures, Histogram
from loadgate.judge.ledger import Ledger
from loadgate.measure.pipeline import PipelineFigures
from loadgate.records import fields as f
from loadgate.records import files
from loadgate.records import result as results
from loadgate.records.fields import RecordError
from loadgate.records.result import Delivery, RunResult

FIXTURES = Path(__file__).parents[1] / "data" / "report" / "results"
SPEC = RunSpec.from_params({"rate": 120_000, "duration": "20s", "run-id": "r1"})


@dataclass(frozen=True)
class Point:
    name: str = field(metadata=f.mapping_key())
    at: tuple[float, float]


@dataclass(frozen=True)
class Shape:
    FORMAT: ClassVar[str] = "shape/1"

    count: int
    ratio: float | None
    kind: str = field(metadata=f.one_of(("a", "b")))
    label: str = field(default="", metadata=f.json_key("shown_as"))
    tags: tuple[str, ...] = ()
    points: dict[str, Point] = field(default_factory=dict[str, Point])
    counts: dict[int, int] = field(default_factory=dict[int, int])
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


def shape(**over: Any) -> dict[str, Any]:
    return {"format": "shape/1", "count": 1, "ratio": 0.5, "kind": "a", **over}


def test_the_reader_follows_the_type_hints() -> None:
    data = shape(
        shown_as="x",
        tags=["t"],
        points={"p": {"at": [1, 2.5]}},
        counts={"3": 4},
        extra={"any": [1]},
        derived="ignored",
    )
    got = f.read(Shape, data, "shape")
    assert got == Shape(
        1, 0.5, "a", "x", ("t",), {"p": Point("p", (1.0, 2.5))}, {3: 4}, {"any": [1]}
    )
    assert isinstance(got.points["p"].at[0], float)
    # Absent: the default, else None where the type allows it, else missing.
    assert f.read(Shape, {"format": "shape/1", "count": 1, "kind": "b"}, "s").ratio is None
    with pytest.raises(RecordError, match=r"^s\.count: missing$"):
        f.read(Shape, {"format": "shape/1", "kind": "b"}, "s")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (shape(format="shape/2"), "s.format: expected 'shape/1', got 'shape/2'"),
        (shape(count=1.0), "s.count: expected an integer, got 1.0"),
        (shape(count=True), "s.count: expected an integer, got True"),
        (shape(count=None), "s.count: expected an integer, got None"),
        (shape(ratio="x"), "s.ratio: expected a finite number or null, got 'x'"),
        (shape(ratio=float("nan")), "s.ratio: expected a finite number or null, got nan"),
        (shape(kind="c"), "s.kind: must be one of a, b; got 'c'"),
        (shape(shown_as=3), "s.shown_as: expected a string, got 3"),
        (shape(tags="t"), "s.tags: expected a list, got str"),
        (shape(tags=["t", 2]), r"s.tags[1]: expected a string, got 2"),
        (shape(points={"p": {"at": [1]}}), "s.points.p.at: expected a list of 2 values"),
        (shape(points={"p": {"at": [1, "x"]}}), r"s.points.p.at[1]: expected a finite number"),
        (shape(counts={"x": 1}), "s.counts: key 'x' is not an integer"),
        (shape(extra=[]), "s.extra: expected an object, got list"),
        ([], "s: expected an object, got list"),
    ],
)
def test_the_first_bad_field_is_named(data: object, message: str) -> None:
    with pytest.raises(RecordError) as err:
        f.read(Shape, data, "s")
    assert str(err.value).startswith(message)


def test_a_field_of_fixed_values_is_read_first() -> None:
    """The kind of a record decides how the rest reads: it is the error to report."""
    with pytest.raises(RecordError, match=r"^s\.kind: must be one of a, b; got 'z'$"):
        f.read(Shape, {"format": "shape/1", "kind": "z"}, "s")


def test_every_part_of_a_result_round_trips() -> None:
    result = run_result(SPEC, generator={"vus_limit": 200}, problems=["Loki down"])
    assert RunResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert ClientFigures.from_dict(result.client.to_dict()) == result.client
    assert Ledger.from_dict(result.ledger.to_dict()) == result.ledger
    assert [Gate.from_dict(g.to_dict()) for g in result.gates] == result.gates
    assert result.pipeline is not None
    assert PipelineFigures.from_dict(result.pipeline.to_dict()) == result.pipeline
    assert result.delivered is not None
    assert Delivery.from_dict(result.delivered.to_dict()) == result.delivered
    assert result.delivered.to_dict()["collector_own_records"] == result.delivered.own_stored


def test_client_figures_read_with_their_histogram_as_the_charm_sends_them() -> None:
    client = run_result(SPEC).client
    data = client.to_dict() | {"histogram": {"base_ms": 0.1, "per_octave": 4, "counts": {"7": 2}}}
    assert ClientFigures.from_dict(data).histogram == Histogram(0.1, 4, {7: 2})


def test_the_recorded_runs_read_and_keep_what_they_hold() -> None:
    found = results.read_all(FIXTURES)
    assert len(found.records) == 4
    assert found.skipped == ()
    for result in found.records:
        raw = json.loads((FIXTURES / result.run_id / results.RESULT_FILE).read_text())
        again = result.to_dict()
        for key in ("client", "ledger", "gates", "delivered", "environment", "labels"):
            assert again[key] == raw[key], key
        # The spec's own fields (its derived figures are recomputed: the step run's fixture
        # was edited to rate 100,000 by hand and kept the old ones).
        derived = ("duration_s", "iterations_per_minute", "effective_min_logs_per_minute")
        assert {k: v for k, v in again["spec"].items() if k not in derived} == {
            k: v for k, v in raw["spec"].items() if k not in derived
        }
        # Older records lack the newer pipeline figures: unknown, not 0.
        assert result.pipeline is not None
        assert result.pipeline.queue_capacity is None
        assert result.generator == {}
        assert result.bottleneck is None


def test_a_result_file_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    path = results.write(run_result(SPEC, pipe=pipeline(accepted=40_000)), tmp_path)
    data = json.loads(path.read_text())
    data["ledger"]["steps"][1]["count"] = "many"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=rf"^{path}: result.ledger.steps\[1\].count: expected"):
        results.read(path)
    path.write_text(json.dumps({"format": "loadgate-result/0"}))
    with pytest.raises(RecordError, match="format 'loadgate-result/0' is not 'loadgate-result/1'"):
        results.read(path)
    assert results.read_all(tmp_path).skipped == (
        "r1/result.json: format 'loadgate-result/0' is not 'loadgate-result/1': skipped",
    )
    path.write_bytes(b"\xff")
    with pytest.raises(RecordError, match=f"^{path}: not UTF-8 text$"):
        files.read(RunResult, path)
