"""Replay of the recorded results: every result.json, search.json and compare.json under
tests/data read and judged again, and what the readers make of them compared with what they
made of them before the layering change of issue 32 (records/ stores and reads only; one
reading of a saturation result).

`tests/data/replay/readings.json` holds the "before": written once, on the commit before the
change, by

    .venv/bin/python tests/unit/test_records_replay.py > tests/data/replay/readings.json

For each result: the record as written back (`to_dict`, so every figure of every block), its
verdict judged again from its gates, its bottleneck attribution computed again, the tables
`loadgate run` prints, the matrix row's cells, and each reader of its saturation figures
(the search's, the comparison's, the report's, the floor gate's) on the recorded figures and
on variants of them in each state (saturated, growing, refusing, took all, unknown, unread;
the refusing state and the took-all variants' zero refusals since issue 38). For each
search and comparison: the record as read back (its derived verdict, decisions, attribution).
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from loadgate.capacity.compare import record as compare_records
from loadgate.capacity.compare import repeat as compare_repeat
from loadgate.capacity.compare import values as compare_values
from loadgate.capacity.search import driver as search_driver
from loadgate.capacity.search import record as search_records
from loadgate.capacity.search.state import HOLD, SATURATION, Step
from loadgate.contract import gates as gates_mod
from loadgate.gate import saturation as saturation_floor
from loadgate.judge import run_figures
from loadgate.measure.saturation import SaturationFigures
from loadgate.records import result as results
from loadgate.report import matrix_table, runs, tables

DATA = Path(__file__).parent.parent / "data"
READINGS = DATA / "replay" / "readings.json"


def _text(renderable: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=160, color_system=None, force_terminal=False).print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def _variants(sat: SaturationFigures) -> dict[str, SaturationFigures]:
    """The recorded figures and the same figures in every state a reader tells apart."""
    took = sat.accepted_per_min or 100_000.0
    return {
        "recorded": sat,
        "saturated": replace(sat, saturated=True, accepted_per_min=took),
        "saturated_unread": replace(sat, saturated=True, accepted_per_min=None),
        "growing": replace(
            sat, saturated=False, accepted_per_min=took, exported_per_min=took * 0.9
        ),
        "took_all": replace(
            sat, saturated=False, accepted_per_min=took, exported_per_min=took, refused_per_min=0.0
        ),
        "refusing": replace(
            sat,
            saturated=False,
            accepted_per_min=took / 2,
            exported_per_min=took / 2,
            refused_per_min=(sat.offered_per_min or 300_000.0) - took / 2,
        ),
        "took_all_unread": replace(
            sat, saturated=False, accepted_per_min=None, refused_per_min=0.0
        ),
        "unknown": replace(
            sat, saturated=None, accepted_per_min=None, exported_per_min=None, reason="replay"
        ),
    }


def _saturation_readings(result: results.RunResult) -> dict[str, Any]:
    sat = result.saturation
    if sat is None:
        return {}
    out: dict[str, Any] = {}
    for name, variant in _variants(sat).items():
        res = replace(result, saturation=variant)
        base = matrix_table.MatrixRow("cell", "exp", "scn", "load", "done")
        step = Step(0, 300_000, 30, SATURATION)
        out[name] = {
            "search": list(search_driver.saturation_of(res)),
            "search_step": search_driver.outcome_of(step, res, None).to_dict(),
            "search_hold": search_driver.outcome_of(replace(step, phase=HOLD), res, None).to_dict(),
            "compare": list(compare_values.saturation_value(res)),
            "compare_took_at_least": compare_repeat.took_at_least(res),
            "report_run": runs.saturation_of(res),
            "matrix": matrix_table.run_row(base, res).saturation,
            "table": _text(tables.saturation_table(variant)),
            "floor": saturation_floor.floor_gate(variant, 50_000.0).to_dict(),
            "floor_unset": saturation_floor.floor_gate(variant, None).to_dict(),
        }
    return out


def _result_readings(result: results.RunResult) -> dict[str, Any]:
    base = matrix_table.MatrixRow("cell", "exp", "scn", "load", "done")
    row = matrix_table.run_row(base, result)
    return {
        "record": result.to_dict(),
        "verdict": gates_mod.verdict(result.gates),
        "bottleneck": run_figures.bottleneck_block(result),
        "tables": [
            _text(tables.figures_table(result)),
            _text(tables.ledger_table(result.ledger)),
            _text(tables.verdict_table(result)),
        ],
        "matrix": [list(matrix_table.main_cells(row)), list(matrix_table.more_cells(row))],
        "saturation": _saturation_readings(result),
    }


def replay() -> dict[str, Any]:
    """What the readers make of every record under tests/data, by its path there."""
    out: dict[str, Any] = {}
    for path in sorted(DATA.rglob(results.RESULT_FILE)):
        out[str(path.relative_to(DATA))] = _result_readings(results.read(path))
    for path in sorted(DATA.rglob("search.json")):
        record = search_records.SearchRecord.from_json(path.read_text())
        out[str(path.relative_to(DATA))] = {"record": record.to_dict()}
    for path in sorted(DATA.rglob("compare.json")):
        record = compare_records.CompareRecord.from_json(path.read_text())
        out[str(path.relative_to(DATA))] = {"record": record.to_dict()}
    return json.loads(json.dumps(out))  # as JSON has it: tuples as lists


def test_every_record_reads_as_before() -> None:
    before = json.loads(READINGS.read_text())
    now = replay()
    assert sorted(now) == sorted(before)
    for name, readings in before.items():
        assert now[name] == readings, name


def test_the_replay_covers_every_kind_and_saturation_state() -> None:
    before = json.loads(READINGS.read_text())
    assert {Path(name).name for name in before} == {"result.json", "search.json", "compare.json"}
    with_saturation = [r["saturation"] for r in before.values() if r.get("saturation")]
    assert with_saturation
    states = {s["compare"][0] is None for r in with_saturation for s in r.values()}
    assert states == {True, False}  # some variants give a throughput, others none


if __name__ == "__main__":
    json.dump(replay(), sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")
