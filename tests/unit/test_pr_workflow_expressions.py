"""The expressions of `.github/workflows/charm-pr-compare.yaml`, read as Actions reads them by
benchmarks/pr_compare_workflow.py (which runs the workflow's steps here): every `${{ }}` and
`if:` of the workflow parses, and the ones that steer the job take the values they must."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import benchmark_script

RUNNER = benchmark_script.load("pr_compare_workflow")
WORKFLOW = yaml.safe_load(RUNNER.WORKFLOW.read_text())
OK = {"always": True, "success": True, "failure": False, "cancelled": False}
FAILED = {"always": True, "success": False, "failure": True, "cancelled": False}


def contexts(**steps: dict[str, str]) -> dict[str, Any]:
    inputs = {k: v.get("default", "") for k, v in RUNNER.declared_inputs(WORKFLOW).items()}
    inputs["loadgate-wheel"] = "file:///w.whl"
    return {
        "inputs": inputs,
        "github": {"sha": "h" * 40, "run_number": 7, "run_attempt": 1,
                   "event": {"pull_request": {"number": 12, "head": {"sha": "h" * 40},
                                              "base": {"sha": "b" * 40}}}},
        "steps": {k: {"outputs": v} for k, v in steps.items()},
        "env": {"LOADGATE_RESULTS_DIR": "/r"},
        "runner": {"temp": "/t"},
    }  # fmt: skip


def every_expression() -> list[str]:
    text = RUNNER.WORKFLOW.read_text()
    inner = re.findall(r"\$\{\{(.*?)\}\}", text, flags=re.DOTALL)
    (job,) = WORKFLOW["jobs"].values()
    ifs = [str(s["if"]) for s in job["steps"] if "if" in s]
    return [*inner, *ifs]


@pytest.mark.parametrize("expression", every_expression())
def test_every_expression_of_the_workflow_parses(expression: str) -> None:
    RUNNER.evaluate(expression, contexts(), OK)


def test_the_baseline_is_the_base_ref_else_the_pull_requests_base() -> None:
    expr = "inputs.base-ref || github.event.pull_request.base.sha"
    assert RUNNER.evaluate(expr, contexts(), OK) == "b" * 40
    given = contexts()
    given["inputs"]["base-ref"] = "main"
    assert RUNNER.evaluate(expr, given, OK) == "main"
    run = "${{ github.event.pull_request.number || github.run_number }}-${{ github.run_attempt }}"
    assert RUNNER.interpolate(run, contexts(), OK) == "12-1"


def test_the_cache_is_saved_only_when_it_was_not_restored() -> None:
    expr = "steps.restore.outputs.cache-hit != 'true'"
    assert RUNNER.evaluate(expr, contexts(restore={"cache-hit": "true"}), OK) is False
    assert RUNNER.evaluate(expr, contexts(restore={"cache-hit": "false"}), OK) is True


def test_the_summary_and_exit_follow_a_comparison_that_ran_even_when_it_failed() -> None:
    expr = "always() && steps.compare.outputs.exit-code != ''"
    assert RUNNER.evaluate(expr, contexts(compare={"exit-code": "1"}), FAILED) is True
    assert RUNNER.evaluate(expr, contexts(), FAILED) is False  # it never ran
    assert RUNNER.evaluate("success()", contexts(), FAILED) is False


def test_unreadable_expressions_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot read expression"):
        RUNNER.evaluate("inputs.x ~ 1", contexts(), OK)
    with pytest.raises(ValueError, match="left over"):
        RUNNER.evaluate("'a' 'b'", contexts(), OK)


def test_runner_files_read_values_and_heredocs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("a=1\nb=x=y\nc<<EOF\nline 1\nline 2\nEOF\n")
    assert RUNNER._read_pairs(out) == {"a": "1", "b": "x=y", "c": "line 1\nline 2"}


def test_a_condition_without_a_status_function_needs_the_steps_before_to_have_passed() -> None:
    save = {"if": "steps.restore.outputs.cache-hit != 'true'"}
    condition = RUNNER.step_condition(save)
    assert condition == "success() && (steps.restore.outputs.cache-hit != 'true')"
    assert RUNNER.evaluate(condition, contexts(restore={"cache-hit": "false"}), FAILED) is False
    assert RUNNER.evaluate(condition, contexts(restore={"cache-hit": "false"}), OK) is True
    assert RUNNER.step_condition({}) == "success()"
    summary = {"if": "${{ always() && steps.compare.outputs.exit-code != '' }}"}
    assert RUNNER.step_condition(summary) == " always() && steps.compare.outputs.exit-code != '' "
