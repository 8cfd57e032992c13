"""The fake Juju world for dry runs in other processes: a fake `juju` on PATH (cli.py), and the
model's Prometheus and Loki as HTTPS servers (servers.py).

- The `juju` on PATH runs cli.main against a state file. In the snap layout (the default) it is
  `<tmp>/snap/bin/juju`, a symbolic link to `<tmp>/usr/bin/snap` (as /snap/bin/juju links to
  snapd's launcher), and it reads only what the strictly confined snap can read: files under
  $HOME outside hidden folders.
- Prometheus (prometheus/0) and the Loki units listen on their real ports (9090, 3100) on
  addresses of their own in 127.0.0.0/8, which `juju status` reports as the pod addresses.
- A timed world (`timed=Timed(...)`) runs a fast clock (clock.py) shared by its servers and the
  processes started with `World.python`: its k6 runs take their duration, COS scrapes once a
  minute, the collector exports at most `capacity_per_min` (its queue fills and refuses the
  excess), and another application may send its logs through the collector (scrapes.py).
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import cli, state
from .clock import ENV as CLOCK_ENV
from .clock import FastClock
from .scrapes import TimedTelemetry
from .servers import SERVED, Telemetry, WorldCA, serve

TESTS_DIR = Path(__file__).resolve().parents[2]
# The `juju` program: cli.main, imported from this test tree (support.fake_juju.cli).
LAUNCHER = """#!{python}
import os, sys
if os.path.basename(sys.argv[0]) != "juju":
    sys.exit("snap: unknown command " + os.path.basename(sys.argv[0]))
sys.path.insert(0, {tests!r})
from support.fake_juju.clock import install_from_env
install_from_env()
from support.fake_juju.cli import main
sys.exit(main(sys.argv[1:]))
"""
# `python -c BOOT module args...`: the module run as `python -m module args...` would, on the
# world's fast clock ($FAKE_JUJU_CLOCK).
BOOT = (
    "import runpy, sys; sys.path.append({tests!r}); "
    "from support.fake_juju.clock import install_from_env; install_from_env(); "
    "sys.argv = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)


@dataclass(frozen=True)
class Timed:
    """A timed world: time runs `scale` times faster; the pipeline takes time (pipeline.py)."""

    scale: float = 60.0
    capacity_per_min: int = 180_000  # what the collector exports at most
    scrape_every: float = 60.0  # COS scrapes the collector (and Loki) once a minute
    # Another application in the model (when the model has it) sends its logs through the
    # collector at this rate from the world's start, under its own job.
    other_app: str = "flog"
    other_job: str = "flog"
    other_per_min: int = 0
    # A client that pushes its logs to Loki itself (never through the collector), from the
    # world's start: Loki holds and counts its lines, the collector never sees them.
    direct_job: str = "direct-client"
    direct_per_min: int = 0

    def pipeline(self, origin: float) -> dict[str, Any]:
        """state["pipeline"]: the queue holds QUEUE_SIZE requests of 5 records."""
        return {
            "origin": origin,
            "capacity_per_min": self.capacity_per_min,
            "queue_records": state.QUEUE_SIZE * 5,
            "other_app": self.other_app,
            "other_job": self.other_job,
            "other_per_min": self.other_per_min,
            "direct_job": self.direct_job,
            "direct_per_min": self.direct_per_min,
        }


@dataclass
class World:
    root: Path
    home: Path
    bin_dir: Path
    juju: Path
    state_file: Path
    log_file: Path
    telemetry: Telemetry
    addresses: dict[str, str]
    clock: FastClock | None = None

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a process that should see this world (and no real juju)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JUJU", "LOADGATE_", "PYTEST", "TOX_", "CHARM_PATH"))
        }
        env.update(
            PATH=f"{self.bin_dir}{os.pathsep}{Path(sys.executable).parent}",
            HOME=str(self.home),
            **{cli.ENV_STATE: str(self.state_file), cli.ENV_LOG: str(self.log_file)},
            LOADGATE_RESULTS_DIR=str(self.root / "results"),
            PYTHONUNBUFFERED="1",
            **extra,
        )
        if self.clock is not None:
            env[CLOCK_ENV] = self.clock.env_value()
        return env

    def python(self, module: str) -> list[str]:
        """argv that runs `python -m module` in this world (on its clock when timed)."""
        if self.clock is None:
            return [sys.executable, "-m", module]
        return [sys.executable, "-c", BOOT.format(tests=str(TESTS_DIR)), module]

    def state(self) -> state.State:
        return json.loads(self.state_file.read_text())

    def calls(self) -> list[cli.Record]:
        """Every call the `juju` program answered, in order."""
        if not self.log_file.exists():
            return []
        return [json.loads(line) for line in self.log_file.read_text().splitlines()]


def _free_subnet() -> str:
    """127.A.B: a loopback /24 whose .1-.3 have ports 9090 and 3100 free."""
    for _ in range(50):
        prefix = f"127.{random.randint(100, 250)}.{random.randint(1, 250)}"  # noqa: S311
        try:
            for host in (1, 2, 3):
                for port in (9090, 3100):
                    with socket.socket() as s:
                        s.bind((f"{prefix}.{host}", port))
        except OSError:
            continue
        return prefix
    raise RuntimeError("no free loopback address for the fake Prometheus and Loki")


def _install_juju(root: Path, snap: bool) -> Path:
    """The `juju` on PATH (snap: a link to snapd's launcher); the folder it is in."""
    if snap:
        launcher = root / "usr" / "bin" / "snap"
        bin_dir = root / "snap" / "bin"
    else:
        launcher = root / "opt" / "juju" / "bin" / "juju"
        bin_dir = launcher.parent
    launcher.parent.mkdir(parents=True, exist_ok=True)
    launcher.write_text(LAUNCHER.format(python=sys.executable, tests=str(TESTS_DIR)))
    launcher.chmod(0o755)
    if snap:
        bin_dir.mkdir(parents=True, exist_ok=True)
        (bin_dir / "juju").symlink_to(launcher)
    return bin_dir


@contextmanager
def world(
    tmp_path: Path,
    *,
    snap: bool = True,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    loki_leader: int = 1,
    timed: Timed | None = None,
) -> Generator[World]:
    """The fake world; `models` pre-creates models (name -> {"apps": ...}) in the state."""
    root = tmp_path / "world"
    home = root / "home"
    home.mkdir(parents=True)
    bin_dir = _install_juju(root, snap)
    ca = WorldCA()
    prefix = _free_subnet()
    addresses = {unit: f"{prefix}.{n}" for n, (unit, _) in enumerate(SERVED, start=1)}
    state_file = root / "state.json"
    initial = state.new_state(
        models=models, confined=snap, addresses=addresses, leaders={"loki": loki_leader},
        ca_pem=ca.pem,
    )  # fmt: skip
    clock = FastClock.starting_now(timed.scale) if timed else None
    telemetry = Telemetry(state_file)
    if timed is not None and clock is not None:
        initial["pipeline"] = timed.pipeline(clock.time())
        telemetry = TimedTelemetry(state_file, clock=clock, scrape_every=timed.scrape_every)
    state_file.write_text(json.dumps(initial, indent=1, sort_keys=True))
    with serve(telemetry, ca, addresses, root / "certs"):
        yield World(
            root, home, bin_dir, bin_dir / "juju", state_file, root / "juju-calls.jsonl",
            telemetry, addresses, clock,
        )  # fmt: skip
