"""Revision -> commit resolution and what a source says about itself, on the real repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loadgate.charms import sources


def test_pinned_otelcol_revision_resolves_to_its_commit(otelcol_main: sources.CharmSource) -> None:
    assert otelcol_main.commit is not None
    assert otelcol_main.commit.startswith("2a77867")
    assert otelcol_main.revisions == (221,)
    assert otelcol_main.workload_tag == "0.130-26.04"
    assert otelcol_main.workload_series == "0.130"
    assert otelcol_main.base_python == "3.14"
    assert (otelcol_main.path / "src" / "charm.py").is_file()


def test_two_revisions_of_one_commit(otelcol_rev160: sources.CharmSource) -> None:
    """Each upload (one per architecture) gets a tag: rev160 and rev161 share a commit."""
    assert otelcol_rev160.revisions == (160, 161)
    assert otelcol_rev160.workload_tag == "0.130-24.04"
    assert otelcol_rev160.base_python == "3.12"
    assert otelcol_rev160.label.startswith("rev160/rev161 (655f54e")


def test_a_revision_without_a_tag_is_refused_with_its_neighbours(snapshots: Path) -> None:
    with pytest.raises(sources.SourceError, match="revision 169 has no tag rev169") as err:
        sources.resolve(sources.parse("otelcol", "rev169", snapshots))
    assert "nearest tagged revisions: rev168, rev170" in str(err.value)


def test_a_branch_and_an_unknown_ref(snapshots: Path) -> None:
    main = sources.resolve(sources.parse("otelcol", "@main", snapshots))
    assert (main.commit or "").startswith("2a77867")
    with pytest.raises(sources.SourceError, match="'no-such-ref' is not a tag, branch or commit"):
        sources.resolve(sources.parse("otelcol", "@no-such-ref", snapshots))
    # git's ancestry suffixes: the parent of main, however it is written.
    parent = sources.resolve(sources.parse("otelcol", "@main~1", snapshots))
    assert parent.commit not in (None, main.commit)
    assert sources.resolve(sources.parse("otelcol", "@main^", snapshots)).commit == parent.commit


def test_the_loki_snapshot(loki_pinned: sources.CharmSource) -> None:
    assert loki_pinned.kind == "snapshot"
    assert loki_pinned.revisions == (244,)
    assert loki_pinned.commit == "5178fa41f9f6"
    assert loki_pinned.workload_tag == "3.7-26.04"


def test_a_checkout_records_its_commit_and_uncommitted_changes(
    otelcol_main: sources.CharmSource, tmp_path: Path
) -> None:
    """The charm repository's own CI: `--otelcol-charm .`"""
    repo = tmp_path / "otelcol-charm"
    bundle = sources.default_location("otelcol", sources.sources_dir())
    subprocess.run(["git", "clone", "-q", bundle, str(repo)], check=True)
    clean = sources.resolve(sources.parse("otelcol", str(repo)))
    assert clean.kind == "checkout"
    assert clean.commit == otelcol_main.commit
    assert not clean.dirty
    assert clean.path == repo
    (repo / "src" / "charm.py").write_text((repo / "src" / "charm.py").read_text() + "\n# x\n")
    dirty = sources.resolve(sources.parse("otelcol", str(repo)))
    assert dirty.dirty
    assert dirty.label.endswith("+dirty")


def test_the_wrong_charm_is_refused(snapshots: Path) -> None:
    with pytest.raises(sources.SourceError, match="is the charm 'loki-k8s', not opentelemetry"):
        sources.resolve(sources.parse("otelcol", sources.default_spec("loki", snapshots).location))
