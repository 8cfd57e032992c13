"""Fixtures of the end-to-end suites: real binaries (built by `loadgate binaries`) on loopback."""

from __future__ import annotations

import contextlib
import io
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadgate import paths, procfs
from loadgate.build import binaries
from loadgate.cli import main as loadgate_main
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


# The suite's shared stacks: the default (charm-rendered) stack, started once for every test
# that needs no fresh one and no configuration of its own, on ports no other test takes. A test
# that stops a service of one puts it back; every figure a test reads of one is the difference
# its own run or requests made (a run reads its counters from its baseline).
SHARED_BASE_PORT = 24600
# The second one, for the tests that fill the collector's queue (it refuses records): the first
# keeps a collector that never refused, as test_stack.py and the dashboard's clean-run queries
# (test_dashboard_queries.py) require.
TO_FILL_BASE_PORT = 24540


def _shared_stack(
    start_stack: StartStack, tmp_path_factory: pytest.TempPathFactory, name: str, base_port: int
) -> Iterator[local.StackInfo]:
    root = tmp_path_factory.mktemp(name)
    info = start_stack(root, base_port)
    try:
        yield info
    finally:
        local.down(root)


@pytest.fixture(scope="session")
def stack(
    start_stack: StartStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[local.StackInfo]:
    """The shared default stack: no test fills its collector's queue (see SHARED_BASE_PORT)."""
    yield from _shared_stack(start_stack, tmp_path_factory, "stack", SHARED_BASE_PORT)


@pytest.fixture(scope="session")
def stack_to_fill(
    start_stack: StartStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[local.StackInfo]:
    """The shared default stack for runs that fill the collector's queue."""
    yield from _shared_stack(start_stack, tmp_path_factory, "stack-to-fill", TO_FILL_BASE_PORT)


SHORT_RUN_ID = "dash-probe.1"


@dataclass(frozen=True)
class ShortRun:
    """A short passing run of the default scenario on the shared stack (15 s at 12,000
    records/min, labelled revision=test), read by test_run.py and the dashboard's queries."""

    results: Path  # LOADGATE_RESULTS_DIR of the run: its folder is results / SHORT_RUN_ID
    code: int
    out: str  # what it printed on stdout
    start: float  # epoch seconds before it started
    end: float  # 3 s after it ended (the last scrape of the collector and Loki after the drain)


@pytest.fixture(scope="session")
def short_run(stack: local.StackInfo, tmp_path_factory: pytest.TempPathFactory) -> ShortRun:
    results = tmp_path_factory.mktemp("short-run") / "results"
    printed = io.StringIO()
    start = time.time()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
        mp.setenv("LOADGATE_STACK_DIR", str(stack.root))
        mp.setenv("LOADGATE_RESULTS_DIR", str(results))
        code = loadgate_main(["run", "--duration", "15s", "--rate", "12000",
                         "--labels", "revision=test", "--run-id", SHORT_RUN_ID])  # fmt: skip
    time.sleep(3)
    return ShortRun(results, code, printed.getvalue(), start, time.time())


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
