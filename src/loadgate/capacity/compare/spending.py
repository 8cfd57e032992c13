"""Alpha spending over a sequential comparison's looks: how much of the error allowed (alpha)
each look at a metric may use, and the confidence that gives its bounds. Pure.

A comparison looks at a metric after every pair; each look is a one-sided test at its own
level, and an error at any look is an error of the comparison. Whatever the correlation of the
looks (they share their pairs) and wherever the comparison stops, the chance of an error at
some look is at most the sum of the looks' levels (the union bound). So the levels may be
spread over the looks in any way fixed in advance, as long as they sum to alpha:

- Bonferroni (this project's first rule) gave each of K looks alpha / K: 98.75 % bounds at
  every look of 4, the last included.
- Here the look at n pairs may have spent, with the looks before it, O'Brien-Fleming's curve
  (Lan and DeMets' form) at the information fraction t = n / max_pairs:
  spent(t) = 2 - 2 Phi(z(1 - alpha/2) / sqrt t), which is tiny early and alpha at t = 1. A look's
  level is spent(t_k) - spent(t_k-1): at 2, 3, 4 and 5 of 5 pairs about 0.2 %, 1.0 %, 1.7 %
  and 2.2 % (bounds at 99.8 %, 99.0 %, 98.3 % and 97.9 %). Early looks decide only large
  effects whatever their level, so little is lost there.
- A look that is the comparison's last for a reason that does not depend on the values (its
  budget leaves no room for another pair, or the most pairs are run) takes all of alpha not
  yet spent: a comparison its budget stops at 4 of 5 pairs decides its last look at about 96 %.

Group-sequential boundaries that use the looks' correlation would be a little milder still
(about 95 % at that last look), but they assume normal statistics: with Student's t at 2-8
degrees of freedom, simulated A/A comparisons crossed them 5.2 % of the time, above the 5 %
promised. The union bound holds for any statistics, and is what the simulations in
tests/unit/test_compare_sequential.py check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from loadgate import extras


def _obrien_fleming_spent(t: float, alpha: float) -> float:
    """The alpha spent by information fraction t (0 < t <= 1): 2 - 2 Phi(z(1-alpha/2)/sqrt t)."""
    if not 0 < t <= 1:
        raise ValueError(f"information fraction: must be in (0, 1]; got {t}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha: must be in (0, 0.5); got {alpha}")
    special = extras.load("scipy.special")  # loadgate[stats]
    z = float(special.ndtri(1 - alpha / 2))
    return float(2 - 2 * special.ndtr(z / math.sqrt(t)))


def look_levels(
    pairs: Sequence[int], max_pairs: int, alpha: float, last: bool = False
) -> tuple[float, ...]:
    """Each look's level (its share of alpha), for looks at `pairs` (increasing, from 1, at
    most `max_pairs`): the growth of the spending curve since the look before (the first look:
    all it has spent); the look at `max_pairs`, or the last one when `last`, takes what is
    left. The levels sum to at most alpha."""
    if not pairs:
        return ()
    if pairs[0] < 1 or pairs[-1] > max_pairs or any(b <= a for a, b in pairwise(pairs)):
        raise ValueError(
            f"looks: the pairs must increase from 1 to at most {max_pairs}; got {list(pairs)}"
        )
    spent = [_obrien_fleming_spent(n / max_pairs, alpha) for n in pairs]
    if last:
        spent[-1] = alpha
    levels = [spent[0]] + [b - a for a, b in pairwise(spent)]
    return tuple(levels)
