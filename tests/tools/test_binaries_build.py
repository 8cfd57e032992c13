"""Building the pinned parts with a stand-in `go` on PATH: stamps, skipping what is current, and
one clear line on failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loadgate.build import binaries

FAKE_GO_OK = """#!/bin/sh
# A stand-in for `go build ... -o OUT PKG`: writes OUT.
while [ "$#" -gt 0 ]; do
  if [ "$1" = "-o" ]; then shift; printf '#!/bin/sh\\necho built\\n' > "$1"; fi
  shift
done
"""
FAKE_GO_REFUSED = """#!/bin/sh
echo "go: downloading go.k6.io/k6 v1.8.1"
echo "go: go.k6.io/k6@v1.8.1: reading https://proxy.golang.org/...: 403 Forbidden" >&2
exit 1
"""


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    folder = tmp_path / "tools" / "k6"
    folder.mkdir(parents=True)
    (folder / "go.mod").write_text("module x\n")
    (folder / "go.sum").write_text("")
    return tmp_path / "tools"


def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    bindir = tmp_path / "fakebin"
    bindir.mkdir(exist_ok=True)
    go = bindir / "go"
    go.write_text(script)
    go.chmod(go.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/usr/bin:/bin")


K6 = binaries.part("k6")


def test_build_writes_binary_and_stamp_then_is_current(
    tmp_path: Path, tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_go(tmp_path, monkeypatch, FAKE_GO_OK)
    out = tmp_path / "bin"
    assert binaries.missing(["k6"], out, tools) == ["k6"]
    path = binaries.build(K6, out, tools)
    assert path == out / "k6"
    assert os.access(path, os.X_OK)
    assert binaries.is_current(K6, out, tools)
    assert binaries.missing(["k6"], out, tools) == []
    # A change to the wrapper module (e.g. a new go.sum) makes the part stale again.
    (tools / "k6" / "go.sum").write_text("changed\n")
    assert not binaries.is_current(K6, out, tools)


def test_a_refused_module_is_one_line_naming_part_version_and_retry(
    tmp_path: Path, tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_go(tmp_path, monkeypatch, FAKE_GO_REFUSED)
    out = tmp_path / "bin"
    with pytest.raises(binaries.BuildError) as info:
        binaries.build(K6, out, tools)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("k6 v1.8.1:")
    assert "403 Forbidden" in message
    assert "loadgate binaries --only k6" in message
    # Nothing half-written is left: no binary, no stamp, no temporary build folder.
    assert not (out / "k6").exists()
    assert not (out / ".k6.stamp").exists()
    assert [p.name for p in out.iterdir()] == ["logs"]


def test_a_failed_forced_rebuild_leaves_the_previous_binary(
    tmp_path: Path, tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_go(tmp_path, monkeypatch, FAKE_GO_OK)
    out = tmp_path / "bin"
    binaries.build(K6, out, tools)
    fake_go(tmp_path, monkeypatch, FAKE_GO_REFUSED)
    with pytest.raises(binaries.BuildError):
        binaries.build(K6, out, tools)
    # The previous, complete binary and its stamp stay: the failure wrote nothing over them.
    assert (out / "k6").read_text().endswith("echo built\n")
    assert binaries.is_current(K6, out, tools)
