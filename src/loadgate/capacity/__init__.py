"""Capacity: the highest rate a stack passes, and whether a candidate is worse than a baseline.

One sub-package per concept, each with its pure rule beside the driver that feeds it real runs
and the record it writes:

- `search`: the capacity search. `plan` (its settings), `state` (the steps, the bracket, the
  result), the two methods `saturate` and `bisect`, `rule` (which rate to offer next, until the
  highest rate that passes every gate is bracketed to the precision by holds), `confidence`
  (where the knee lies with a stated confidence), `driver` (each step a real run), `record`
  (`search.json`) and `spread` (how far repeated searches land apart);
- `compare`: baseline against candidate. `rule` (interleaved pairs, a regression decision per
  metric, the metrics and their margins in one table), `spending` and `sequential` (how many
  pairs, at which confidence each look decides), `margins` (the margins from the measured
  spread), `sides`, `values`, `scenario` (what a run contributes, in a scenario's unit),
  `repeat` (one repeat on the local stack), `driver` (the pairs on fresh stacks) and `record`
  (`compare.json`);
- `matrix`: experiments x scenarios x loads. `yaml_lines`, `stack` and `file` (the file,
  checked), `plan` (cells, run ids, resuming), `driver` (the runs, a fresh stack per
  experiment) and `record` (`matrix.json`, a record per cell);
- `bench`: `generator` (how many units per minute one k6 core generates) with `query_sink`
  (logql-query's sink, answering as Loki).

Arrows point down: `compare` and `matrix` use `search`, nothing here uses `compare` or
`matrix` back. Bottleneck attribution is `loadgate.judge.attribution`.
"""
