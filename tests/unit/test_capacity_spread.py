"""The spread of repeated searches, and the repeats a capacity comparison would need at it."""

from __future__ import annotations

import pytest

from loadgate.capacity.compare.margins import repeats_for
from loadgate.capacity.search.spread import spread


def test_spread_of_three_capacities() -> None:
    s = spread([91_700, 83_000, None, 100_000])
    assert s.found == (91_700, 83_000, 100_000)
    assert s.not_found == 1
    assert s.median == 91_700
    assert (s.low, s.high) == (83_000, 100_000)
    assert s.relative_range == pytest.approx(17_000 / 91_700)
    assert s.cv == pytest.approx(0.0927, abs=1e-3)


def test_no_capacity_is_unknown_not_zero() -> None:
    s = spread([None, None])
    assert s.found == ()
    assert s.not_found == 2
    assert s.median is None
    assert s.cv is None
    assert s.relative_range is None
    one = spread([50_000])
    assert one.median == 50_000
    assert one.relative_range == 0
    assert one.cv is None


def test_repeats_for_grows_with_the_spread() -> None:
    assert repeats_for([100_000], 0.05) is None
    tight = repeats_for([100_000, 101_000, 99_000], 0.05)
    wide = repeats_for([100_000, 80_000, 120_000], 0.05)
    assert tight is not None
    assert wide is not None
    assert wide > tight >= 3
