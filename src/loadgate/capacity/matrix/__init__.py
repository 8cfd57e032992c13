"""A matrix of experiments x scenarios x loads: its file, plan, driver and records (see
loadgate.capacity)."""
