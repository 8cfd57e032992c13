"""A fast clock shared by a timed fake world and the processes that use it.

COS scrapes the collector once a minute, so a saturation run on Juju lasts minutes. A timed
world (world.Timed) runs its time `scale` times faster: every process of the world reads the
same virtual time, `anchor + (real - anchor) * scale`, and its sleeps are `scale` times
shorter. The world's servers read it through a FastClock; the processes under test (loadgate,
pytest, the fake `juju` program) get it installed over the time module's `time`, `monotonic`
and `sleep` at their start (`install_from_env`, from $FAKE_JUJU_CLOCK), so loadgate's own code
runs unchanged. Modules that copied those functions before (threading, subprocess) keep the
real ones, which only makes their timeouts more lenient.

Only the standard library: the fake `juju` program imports this on every call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

ENV = "FAKE_JUJU_CLOCK"

_real_time = time.time
_real_monotonic = time.monotonic
_real_sleep = time.sleep


@dataclass(frozen=True)
class FastClock:
    anchor: float  # real seconds since the epoch at which virtual time equals real time
    scale: float  # virtual seconds per real second

    @classmethod
    def starting_now(cls, scale: float) -> FastClock:
        return cls(_real_time(), scale)

    def time(self) -> float:
        return self.anchor + (_real_time() - self.anchor) * self.scale

    def monotonic(self) -> float:
        return _real_monotonic() * self.scale

    def sleep(self, seconds: float) -> None:
        _real_sleep(max(0.0, seconds) / self.scale)

    def env_value(self) -> str:
        return f"{self.anchor!r},{self.scale!r}"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FastClock | None:
        value = env.get(ENV)
        if not value:
            return None
        anchor, scale = value.split(",")
        return cls(float(anchor), float(scale))


def install(clock: FastClock) -> None:
    """Make this process's time module read the fast clock."""
    time.time = clock.time
    time.monotonic = clock.monotonic
    time.sleep = clock.sleep


def install_from_env() -> None:
    clock = FastClock.from_env(os.environ)
    if clock is not None:
        install(clock)
