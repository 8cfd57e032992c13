"""What the commands do to the world, handed to each command's handler as one `Seams`: `main`
gives the real collaborators (`Seams()`), tests give fakes (`cli.main(argv, seams=...)`) instead
of patching module names.

- `resolve_stack`: resolve a stack request (charm sources, rendering, workload builds);
- `build_missing`: build the binaries a command needs (cli.binaries_output.build_missing);
- `stack`: the local stack's up, down, info and status (loadgate.stack.ops.StackOps);
- `open_target`: the load target on a running stack (LocalTarget, a runner.target.OpenedTarget);
- `session`: the local stack for one command, holding its lock (stack.session.local_session;
  cli.stack.stack_session gives it the terminal and the seams above);
- `execute`: one run (runner.execute); `run_search`: one capacity search;
- `same_stack`: whether two prepared sides run the same stack (stack.same_stack, rendering
  both with their charms' code: `compare --if-same skip`);
- `bench_generator`: the generator benchmark (capacity.bench.generator).

This module imports no command module: the commands import it (for `Seams`), not the reverse.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..capacity.bench.generator import GeneratorFigures, run_generator_bench
from ..capacity.compare.repeat import SearchFn
from ..capacity.search import driver as searching
from ..contract.spec import RunSpec
from ..runner import run as runner
from ..runner.target import OpenedTarget
from ..stack import local
from ..stack.choice import StackRequest
from ..stack.ops import StackOps
from ..stack.ports import Ports
from ..stack.same_stack import Sameness, same_stack
from ..stack.session import Hands, SessionRequest, local_session
from ..targets.local import LocalTarget
from .binaries_output import build_missing


class BuildMissing(Protocol):
    def __call__(self, names: Sequence[str], *, command: str) -> int: ...


Session = Callable[[SessionRequest, Hands[OpenedTarget]], AbstractContextManager[OpenedTarget]]


@dataclass(frozen=True)
class Seams:
    resolve_stack: Callable[[StackRequest], local.StackChoice] = StackRequest.prepare
    build_missing: BuildMissing = build_missing
    stack: StackOps = field(default_factory=StackOps)
    open_target: Callable[[local.StackInfo], OpenedTarget] = LocalTarget
    session: Session = local_session
    execute: searching.Execute = runner.execute
    run_search: SearchFn = searching.run_search
    same_stack: Callable[[local.StackChoice, local.StackChoice], Sameness] = same_stack
    bench_generator: Callable[[RunSpec, Ports, Path], GeneratorFigures] = run_generator_bench


# A command's handler: the parsed flags and the world to act on; returns the exit code.
Handler = Callable[[argparse.Namespace, Seams], int]
