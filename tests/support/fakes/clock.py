"""A virtual clock (runner.clock.Clock): time moves only when the code under test sleeps, or when
a test moves it."""

from __future__ import annotations

import time as real_time
from typing import Any


class VirtualClock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def strftime(self, fmt: str, t: Any = None) -> str:
        return real_time.strftime(fmt, t) if t is not None else real_time.strftime(fmt)

    def localtime(self, t: float | None = None) -> real_time.struct_time:
        return real_time.localtime(t)
