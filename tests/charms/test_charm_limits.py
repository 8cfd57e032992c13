"""The `cpu` and `memory` options of the real charms: the requests their own code gives the
container (the floor of the limits the local stack enforces), and bad values refused before
anything renders."""

from __future__ import annotations

import pytest

from loadgate.charms import sources
from loadgate.stack import charm_stack, choice, limits


@pytest.mark.parametrize("role", ["otelcol", "loki"])
def test_the_pinned_charms_request_a_quarter_core_and_200mi(
    role: str, otelcol_main: sources.CharmSource, loki_pinned: sources.CharmSource
) -> None:
    source = otelcol_main if role == "otelcol" else loki_pinned
    code = (source.path / "src" / "charm.py").read_text()
    assert limits.charm_requests(code) == limits.Requests("0.25", "200Mi")


def test_the_options_become_the_limits_kubernetes_enforces() -> None:
    prepared = choice.request(
        choice.StackFlags(charm_config=("cpu=100m", "memory=1Gi"), loki_config=("memory=1Gi",))
    ).prepare()
    assert isinstance(prepared, charm_stack.PreparedCharms)
    assert (prepared.otelcol_limits.cpu_millis, prepared.otelcol_limits.memory_bytes) == (
        250,
        2**30,
    )
    assert prepared.loki_limits.memory_bytes == 2**30
    assert prepared.loki_limits.cpu_millis is None
    assert not charm_stack.prepare(
        choice.request(choice.StackFlags()).charms  # type: ignore[arg-type]
    ).otelcol_limits.any


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"charm_config": ("cpu=lots",)}, "--charm-config: cpu: must be cores"),
        ({"loki_config": ("memory=2GB",)}, "--loki-config: memory: must be bytes"),
    ],
)
def test_a_value_that_is_no_quantity_is_refused_before_anything_renders(
    flags: dict[str, tuple[str, ...]], message: str
) -> None:
    with pytest.raises(choice.ChoiceError, match=message):
        choice.request(choice.StackFlags(**flags)).prepare()  # type: ignore[arg-type]
