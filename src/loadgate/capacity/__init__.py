"""Capacity: the highest rate a stack passes, and whether a candidate is worse than a baseline.

The rules are pure (no processes, no I/O); the drivers feed them real runs:

- `search_rule`: which rate to offer next, until the highest rate that passes every gate is
  bracketed to the precision by holds (the saturate method, `search_saturate`: a saturation
  step, then holds around its throughput; the bisect method, `search_bisect`: probes, then a
  hold); `search_state` holds the steps and the bracket; `search_driver` runs each step;
- `compare_rule`: baseline against candidate, interleaved pairs, a regression decision per
  metric (the metrics and their margins in one table); `compare_sequential`: how many pairs and
  at which confidence each look decides; `compare_driver` runs the pairs on fresh stacks
  (`compare_sides`: the two sides; `compare_values`: what a run contributes; `compare_repeat`:
  one repeat on the local stack);
- `spread`: how far repeated searches of one stack land apart; `generator_bench`: how many
  records per minute one k6 core generates.

Bottleneck attribution is `loadgate.judge.attribution`; the records written are
`loadgate.records.search` and `loadgate.records.compare`.
"""
