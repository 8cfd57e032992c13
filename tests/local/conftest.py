"""Fixtures of the end-to-end suites: real binaries (built by `loadgate binaries`) on loopback."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from loadgate import paths, procfs
from loadgate.build import binaries
from loadgate.stack import choice, local, procs
from loadgate.stack.charm_stack import PreparedCharms
from loadgate.stack.ports import Ports


@pytest.fixture(scope="session")
def built_bin_dir() -> Path:
    """The binaries cache; a missing binary fails the suite (these tests never skip)."""
    folder = paths.bin_dir()
    missing = binaries.missing(binaries.PART_NAMES, folder)
    if missing:
        pytest.fail(f"not built: {', '.join(missing)} in {folder}; run `loadgate binaries` first")
    return folder


@pytest.fixture(scope="session")
def charm_default() -> PreparedCharms:
    """What `loadgate run` runs when told nothing: the pinned otelcol and Loki revisions,
    rendered by their charms (needs ../shared/charm-sources, like CI)."""
    prepared = choice.request(choice.StackFlags()).prepare()
    assert isinstance(prepared, PreparedCharms)
    return prepared


StartStack = Callable[[Path, int], local.StackInfo]


@pytest.fixture(scope="session")
def start_stack(built_bin_dir: Path, charm_default: PreparedCharms) -> StartStack:
    """Start the default (charm-rendered) stack in a run directory, ports from a base port."""

    def start(root: Path, base_port: int) -> local.StackInfo:
        return local.up(charm_default, Ports.from_base(base_port), root=root, bin_dir=built_bin_dir)

    return start


@pytest.fixture(scope="module")
def stack(
    start_stack: StartStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[local.StackInfo]:
    """A fresh local stack on its own ports and run directory, stopped after the module."""
    root = tmp_path_factory.mktemp("stack")
    info = start_stack(root, 24600)
    try:
        yield info
    finally:
        local.down(root)


def processes_mentioning(path: Path) -> list[int]:
    """Live processes (but this one) whose command line names `path`: the tests' broad view of
    "anything left behind" (loadgate itself never kills by command line)."""
    marker = str(path)
    found: list[int] = []
    for pid in procs.all_pids():
        if pid == os.getpid():
            continue
        st = procfs.stat(pid)
        if st is None or st.state in "ZX":
            continue
        if any(marker in arg for arg in procs.cmdline(pid)):
            found.append(pid)
    return found
