"""Judging a run: the loss ledger, the bottleneck attribution and the saturation floor."""
