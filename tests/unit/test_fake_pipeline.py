"""The timed fake world's pipeline (support/fake_juju/pipeline.py), which the Juju saturation
dry runs lean on: its queue fills, holds and drains as a collector's does, refusals are shared
in proportion to what each stream offers, and once drained every count agrees to the record."""

from __future__ import annotations

import math

import pytest
from support.fake_juju.pipeline import Pipeline, Stream

ORIGIN = 1000.0
RUN = Stream("r1", ORIGIN + 100, ORIGIN + 580, 300_000, batch=5)  # 8 minutes at 300,000/min
OTHER = Stream("flog", ORIGIN, math.inf, 6_000)


def test_the_queue_fills_holds_and_drains() -> None:
    line = Pipeline([RUN], 180_000, 5000, ORIGIN)
    # 5,000 records fill at 300,000 - 180,000 per minute: 2.5 s; they drain at 180,000/min.
    assert line.queue(ORIGIN + 100 + 1.25) == pytest.approx(2500)
    assert line.queue(ORIGIN + 103) == 5000
    assert line.queue(ORIGIN + 580 + 0.5) == pytest.approx(5000 - 1500)
    assert line.queue(ORIGIN + 590) == 0
    # Full, it takes in and sends out its capacity, and refuses the rest.
    minute = (ORIGIN + 200, ORIGIN + 260)
    assert line.total_accepted(minute[1]) - line.total_accepted(minute[0]) == 180_000
    assert line.exported(minute[1]) - line.exported(minute[0]) == 180_000
    assert line.refused(minute[1]) - line.refused(minute[0]) == 120_000


def test_refusals_are_shared_and_every_count_agrees_after_the_drain() -> None:
    line = Pipeline([RUN, OTHER], 180_000, 5000, ORIGIN)
    minute = (ORIGIN + 200, ORIGIN + 260)
    run = line.accepted("r1", minute[1]) - line.accepted("r1", minute[0])
    other = line.accepted("flog", minute[1]) - line.accepted("flog", minute[0])
    assert run == pytest.approx(180_000 * 300 / 306, abs=5)
    assert other == pytest.approx(180_000 * 6 / 306, abs=1)
    later = ORIGIN + 700
    sent, accepted = line.offered("r1", later), line.accepted("r1", later)
    assert sent == 2_400_000
    assert accepted % 5 == 0  # whole requests
    assert line.refused(later) == sent - accepted + line.offered("flog", later) - line.accepted(
        "flog", later
    )
    assert line.exported(later) == line.total_accepted(later)
    assert line.stored(["r1"], ORIGIN, later, later) == accepted


def test_loki_holds_a_record_once_it_was_sent() -> None:
    line = Pipeline([RUN], 180_000, 5000, ORIGIN)
    now = ORIGIN + 300
    accepted = line.accepted("r1", now)
    stored = line.stored(["r1"], ORIGIN, now, now)
    assert accepted - stored == pytest.approx(5000, abs=5)  # the queue, not yet in Loki
    assert line.stored(["r1"], ORIGIN, now, now + 10) == accepted
