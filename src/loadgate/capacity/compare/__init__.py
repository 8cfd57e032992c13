"""Baseline against candidate: the rule, sequential looks and their spending, margins, sides,
values, scenarios, one repeat, the driver and the record (see loadgate.capacity)."""
