"""Capacity search, bottleneck attribution and the revision comparison rule.

Pure modules, no processes and no I/O; a driver (the runner, the CLI) feeds them real runs:

- `search`: which rate to offer next, until the highest rate that passes every gate is bracketed
  to the precision and confirmed by a longer hold;
- `attribution`: what gave way first in a run, each claim citing its figure, or "unknown";
- `compare`: baseline against candidate, interleaved repeats, a regression decision per metric;
- `records`: the shapes of `search.json` and `compare.json`, with round trips;
- `fields`: typed reading of those JSON objects, with errors that name the field.
"""
