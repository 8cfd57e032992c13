"""Judging a run: the loss ledger and the bottleneck attribution."""
