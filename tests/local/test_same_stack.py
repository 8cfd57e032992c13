"""`compare --if-same skip`'s question answered by the real charms: a pull request that changes
only the otelcol charm's docs renders the same stack as its merge base; rev160 and rev221 do
not, and what differs is named (the charms' own code rendered, the pinned binaries read)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loadgate import cli
from loadgate.charms import sources
from loadgate.stack import charm_stack, same_stack

REV221_COMMIT = "2a77867"


def _prepare(otelcol: str) -> charm_stack.PreparedCharms:
    return charm_stack.prepare(charm_stack.CharmChoice.from_flags(otelcol, None))


def _git(repo: Path, *argv: str) -> str:
    identity = ["-c", "user.email=test@loadgate", "-c", "user.name=loadgate test"]
    done = subprocess.run(["git", *identity, *argv], cwd=repo, check=True, capture_output=True,
                          text=True)  # fmt: skip
    return done.stdout.strip()


@pytest.fixture(scope="module")
def docs_only_pr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the otelcol charm at rev221 with one more commit that changes its README."""
    folder = sources.sources_dir()
    assert folder is not None, "no charm snapshots (../shared/charm-sources)"
    repo = tmp_path_factory.mktemp("pr") / "otelcol"
    bundle = folder / "opentelemetry-collector-k8s-operator.bundle"
    subprocess.run(["git", "clone", "--quiet", str(bundle), str(repo)], check=True)
    _git(repo, "checkout", "--quiet", "-b", "pr", REV221_COMMIT)
    with (repo / "README.md").open("a") as readme:
        readme.write("\nA line of docs.\n")
    _git(repo, "commit", "--quiet", "-am", "docs only")
    return repo


def test_a_docs_only_commit_runs_the_same_stack_as_its_parent(
    docs_only_pr: Path, built_bin_dir: Path
) -> None:
    base, head = _prepare(f"{docs_only_pr}@{REV221_COMMIT}"), _prepare(str(docs_only_pr))
    assert base.otelcol.commit != head.otelcol.commit
    found = same_stack.same_stack(base, head, built_bin_dir)
    assert found == same_stack.Sameness(True)


def test_two_revisions_that_render_differently_are_not_the_same_and_say_where(
    built_bin_dir: Path,
) -> None:
    found = same_stack.same_stack(_prepare("rev160"), _prepare("rev221"), built_bin_dir)
    assert not found.same
    assert found.unknown is None
    assert any(d.startswith("collector config: ") for d in found.differences), found


def test_compare_if_same_skip_runs_nothing_for_a_docs_only_commit(
    docs_only_pr: Path,
    built_bin_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The pull-request workflow's command on a docs-only commit: both sides rendered, the same
    stack, verdict skipped, exit 0, no stack started and nothing written."""
    del built_bin_dir  # built: the charms read the workload's version
    results, stack_dir = tmp_path / "results", tmp_path / "stack"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack_dir))
    argv = ["compare", "--if-same", "skip", "--compare-id", "pr1",
            "--baseline", f"otelcol={docs_only_pr}@{REV221_COMMIT}",
            "--candidate", f"otelcol={docs_only_pr}"]  # fmt: skip
    assert cli.main(argv) == cli.EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("verdict skipped (exit 0): the candidate (otelcol=")
    assert "runs the same stack as the baseline" in out
    assert not (results / "pr1").exists()
    assert not stack_dir.exists()


def test_charms_diff_says_a_docs_only_commit_runs_the_same_stack(
    docs_only_pr: Path,
    built_bin_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`charms diff` prints the raw collector config's diff, then what the stacks run."""
    del built_bin_dir  # built: the charms read the workload's version
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    argv = ["charms", "diff", f"{docs_only_pr}@{REV221_COMMIT}", str(docs_only_pr)]
    assert cli.main(argv) == cli.EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    assert "the two sources render the same collector config" in out
    assert "the two run the same stack" in out
