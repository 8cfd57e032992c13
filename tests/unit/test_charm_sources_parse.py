"""Charm source specs: how `--otelcol-charm` / `--loki-charm` text is understood (no git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgate.charms import sources

CHARMCRAFT = """\
name: opentelemetry-collector-k8s
type: charm
platforms:
  ubuntu@24.04:amd64:
  ubuntu@26.04:amd64:
containers:
  otelcol:
    resource: opentelemetry-collector-image
resources:
  opentelemetry-collector-image:
    type: oci-image
    upstream-source: ubuntu/otelcol@sha256:6df3  # renovate: oci-image tag: 0.130-26.04
"""


@pytest.fixture
def snapshots(tmp_path: Path) -> Path:
    folder = tmp_path / "charm-sources"
    folder.mkdir()
    (folder / sources.KNOWN["otelcol"].snapshot).write_text("bundle")
    (folder / sources.KNOWN["loki"].snapshot).write_text("tar")
    return folder


@pytest.mark.parametrize(
    ("text", "ref"),
    [("rev160", "rev160"), ("160", "rev160"), ("@rev160", "rev160"), ("@main", "main"),
     ("@2a77867", "2a77867")],
)  # fmt: skip
def test_revision_and_ref_alone_use_the_default_repository(
    text: str, ref: str, snapshots: Path
) -> None:
    spec = sources.parse("otelcol", text, snapshots)
    assert spec.kind == "git"
    assert spec.ref == ref
    assert spec.location == str(snapshots / sources.KNOWN["otelcol"].snapshot)


def test_without_snapshots_the_default_repository_is_github() -> None:
    spec = sources.parse("otelcol", "rev221", None)
    assert spec.location == sources.KNOWN["otelcol"].url
    assert spec.is_url


def test_location_and_ref(tmp_path: Path) -> None:
    spec = sources.parse("otelcol", f"{tmp_path}/repo.bundle@track/0.130")
    assert (spec.kind, spec.location, spec.ref) == ("git", f"{tmp_path}/repo.bundle", "track/0.130")
    url = sources.parse("loki", "https://github.com/canonical/loki-k8s-operator@rev244")
    assert (url.location, url.ref) == ("https://github.com/canonical/loki-k8s-operator", "rev244")


def test_a_folder_is_a_checkout_and_an_archive_a_snapshot() -> None:
    assert sources.parse("otelcol", ".").kind == "checkout"
    assert sources.parse("loki", "/x/loki-k8s-operator-rev244-5178fa4.tar.gz").kind == "snapshot"


def test_refs_take_git_ancestry_suffixes() -> None:
    for ref in ("HEAD^", "main~2", "rev221^2", "track/0.130~1^"):
        assert sources.parse("otelcol", f".@{ref}").ref == ref


@pytest.mark.parametrize(
    "text",
    ["", " rev1", "rev1\n", "x@", "@../etc", "@-rf", "a.tar.gz@rev1", "x@y@z", "@^1", "@main~x"],
)
def test_bad_sources_are_refused_naming_the_flag(text: str) -> None:
    with pytest.raises(sources.SourceError, match="--otelcol-charm"):
        sources.parse("otelcol", text)


def test_unknown_charm_role() -> None:
    with pytest.raises(sources.SourceError, match="otelcol, loki"):
        sources.parse("tempo", "rev1")


def test_default_spec_is_the_pinned_revision(snapshots: Path) -> None:
    otelcol = sources.default_spec("otelcol", snapshots)
    assert (otelcol.kind, otelcol.ref) == ("git", "rev221")
    loki = sources.default_spec("loki", snapshots)
    assert loki.kind == "snapshot"
    assert loki.location.endswith("rev244-5178fa41f9f6.tar.gz")


def test_workload_tag_and_base_from_charmcraft() -> None:
    assert sources.workload_tag(CHARMCRAFT, "otelcol") == "0.130-26.04"
    assert sources.charm_base(CHARMCRAFT) == "ubuntu@26.04"
    plain = CHARMCRAFT.replace("@sha256:6df3  # renovate: oci-image tag: 0.130-26.04", ":0.124")
    assert "ubuntu/otelcol:0.124" in plain
    assert sources.workload_tag(plain, "otelcol") == "0.124"
    assert sources.workload_tag(CHARMCRAFT, "nope") is None
    assert sources.charm_base("bases:\n  - name: ubuntu\n    channel: '22.04'\n") == "ubuntu@22.04"
