"""The matrix file (capacity/matrix/file.py): what it reads, and bad files refused with every
problem named by its field, its line and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgate.capacity.matrix import file as matrix_file
from loadgate.capacity.matrix.file import MatrixFileError, parse
from loadgate.capacity.matrix.yaml_lines import YamlError, load

GOOD = """\
matrix: memlim
description: three limiters
stack:
  limits: {memory: 400Mi}
  charm_config: {queue_size: 2000}
experiments:
  - name: percent
    profile: memory-limiter
    hand: {file_storage: off, gc_trace: true}
  - name: mib
    charm_config:
      processors:
        memory_limiter: {check_interval: 1s, limit_mib: 100}
    limits: {cpu: 500m}
    backend_fault: 503=0.7,until=30s
scenarios:
  - name: heavy
    executor: constant-arrival-rate
    vus: 20
    duration: 30s
    logs_per_request: 50
rates: [60000, saturate, search]
search: {precision: 0.1, probe: 10, hold: 30, budget: 240, max_steps: 20}
drain_timeout: 90
"""


def test_a_good_file() -> None:
    m = parse(GOOD, "memlim.yaml", Path("/cfg"))
    assert m.matrix_id == "memlim"
    assert [e.name for e in m.experiments] == ["percent", "mib"]
    percent, mib = m.experiments
    assert percent.flags.profile == "memory-limiter"
    assert percent.flags.hand == ("file-storage=off", "gc-trace=on")
    assert percent.flags.charm_config == ("queue_size=2000", "memory=400Mi")
    # the experiment's limits merge with the shared ones, key by key
    processors = "processors=memory_limiter:\n  check_interval: 1s\n  limit_mib: 100\n"
    assert set(mib.flags.charm_config[:2]) == {"queue_size=2000", processors}
    assert set(mib.flags.charm_config[2:]) == {"memory=400Mi", "cpu=500m"}
    assert mib.flags.backend_fault == "503=0.7,until=30s"
    assert m.scenarios[0].spec.logs_per_request == 50
    assert [load.key for load in m.loads] == ["r60000", "sat", "search"]
    assert (m.search.precision, m.search.probe_s, m.search.budget_s) == (0.1, 10, 240)
    assert m.drain_timeout == 90.0
    assert percent.line == 7
    assert percent.settings()["hand"] == ["file-storage=off", "gc-trace=on"]


def test_without_rates_each_scenario_runs_its_own_load() -> None:
    text = "experiments: [{name: a}]\nscenarios: [{name: s, executor: constant-vus, vus: 5}]\n"
    m = parse(text, "/x/My Matrix.yaml")
    assert m.matrix_id == "my-matrix"  # from the file's name
    assert [load.kind for load in m.loads] == ["scenario"]
    assert m.loads[0].text(m.scenarios[0]) == "5 VUs"


def test_option_files_are_found_beside_the_matrix() -> None:
    text = (
        "experiments: [{name: a, charm_config: {processors: '@p.yaml'}}]\nscenarios: [{name: s}]\n"
    )
    m = parse(text, "m.yaml", Path("/cfg"))
    assert m.experiments[0].flags.charm_config == ("processors=@/cfg/p.yaml",)


def problems_of(text: str) -> list[str]:
    with pytest.raises(MatrixFileError) as err:
        parse(text, "bad.yaml")
    assert str(err.value).startswith("bad.yaml: invalid matrix file:")
    return err.value.problems


def test_every_problem_is_named_with_its_line_and_what_is_allowed() -> None:
    text = """\
matrix: Bad_Id
colour: red
experiments:
  - name: a
    profile: nope
    hand: {exporter: kafka}
    limits: {memory: lots}
    queue_size: 0
  - name: a
    signals: [logs, smells]
scenarios:
  - name: s
    executor: constant-vus
    vus: -1
  - {name: t, executor: constant-vus}
rates: [60000, fast]
search: {precision: 2, probe: 1}
"""
    got = problems_of(text)
    expected = [
        "colour (line 2): unknown key; allowed: matrix, description",
        "matrix (line 1): must be 1-24 characters of a-z, 0-9 and '-'",
        "experiments[0].profile (line 5): unknown profile 'nope': one of charm-default",
        "experiments[0].hand (line 6): exporter: must be loki, standin, debug, nop",
        "experiments[0].limits (line 7): memory:",
        "experiments[0].queue_size (line 8): got 0; allowed: the otelcol charm's queue_size",
        "experiments[1].name (line 9): 'a' is already experiments[0]",
        "experiments[1].signals (line 10): signals: unknown signal smells",
        "scenarios[0].vus (line 14): must be an integer between 1 and 10000; got -1",
        "rates[1] (line 16): must be records per minute (a positive integer), saturate or search",
        "rates[0] (line 16): a rate needs an arrival-rate executor; scenario t runs constant-vus",
        "search.precision (line 17):",
    ]
    for start in expected:
        assert any(p.startswith(start) for p in got), (start, got)


def test_reserved_labels_and_unknown_run_parameters() -> None:
    got = problems_of(
        "experiments: [{name: a}]\nscenarios:\n  - name: s\n    labels: {cell: x}\n    speed: 3\n"
    )
    assert any(p.startswith("scenarios[0].speed (line 5): unknown key; allowed:") for p in got)
    assert any("cell are set by the matrix" in p for p in got)


def test_missing_lists_and_not_a_mapping() -> None:
    got = problems_of("matrix: m\n")
    assert "experiments: must be a non-empty list of experiments" in got
    assert "scenarios: must be a non-empty list of scenarios" in got
    with pytest.raises(MatrixFileError, match="the file must be a mapping"):
        parse("- a\n- b\n", "bad.yaml")


def test_limits_given_twice_are_refused() -> None:
    got = problems_of(
        "experiments: [{name: a, limits: {memory: 1Gi}, charm_config: {memory: 2Gi}}]\n"
        "scenarios: [{name: s}]\n"
    )
    assert got == ["experiments[0].limits (line 1): memory is also in charm_config: give it once"]


def test_yaml_with_lines_refuses_a_key_twice() -> None:
    with pytest.raises(YamlError, match=r"experiments \(line 3\): given twice \(first on line 1\)"):
        load("experiments: []\nscenarios: []\nexperiments: []\n")
    with pytest.raises(MatrixFileError, match="not valid YAML"):
        parse("a: [\n", "bad.yaml")
    doc = load("a:\n  b:\n    - x\n    - y\n")
    assert doc.line(("a", "b", 1)) == 4
    assert doc.line(("a", "nope")) == 1
    assert doc.line(("b",)) is None


def test_the_definition_digest_is_stable() -> None:
    assert matrix_file.definition_digest({"a": 1, "b": [2]}) == matrix_file.definition_digest(
        {"b": [2], "a": 1}
    )
