"""What `charms diff` says of everything two stacks run, beside the collector config's diff."""

from __future__ import annotations

from loadgate.cli.charms import stack_lines
from loadgate.stack.same_stack import Sameness


def test_the_same_stack_is_said_so() -> None:
    assert stack_lines(Sameness(True)) == [
        "the two run the same stack (configs, Pebble services and checks, options)"
    ]


def test_each_difference_is_listed() -> None:
    found = Sameness(False, ("collector config: processors.batch", "Pebble checks: otelcol-up"))
    assert stack_lines(found) == [
        "the two stacks differ in:",
        "  collector config: processors.batch",
        "  Pebble checks: otelcol-up",
    ]


def test_a_side_that_does_not_render_is_unknown_not_different() -> None:
    lines = stack_lines(Sameness(False, unknown="the otelcol charm did not render"))
    assert lines == [
        "whether the two run the same stack: unknown (the otelcol charm did not render)"
    ]
