"""`--profile`, `--queue-size` and the charm flags as one stack request (no rendering here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgate import paths
from loadgate.stack import choice
from loadgate.stack.profile import Profile


def args(**flags: Any) -> choice.StackFlags:
    return choice.StackFlags(**flags)


def test_presets_are_the_bundles_profile_overlays() -> None:
    names = choice.profile_names()
    assert names[0] == "charm-default"
    assert set(names) >= {"batch", "memory-limiter", "batch-memory-limiter", "queue-5000"}
    assert names[-1] == "hand-nop"
    for name, overlay in choice.presets().items():
        if overlay is not None:
            assert overlay == paths.overlays_dir() / f"profile-{name}.yaml"


def test_a_preset_is_the_overlays_otelcol_options() -> None:
    assert choice.preset_pairs("charm-default") == []
    assert choice.preset_pairs("queue-5000") == ["queue_size=5000"]
    (pair,) = choice.preset_pairs("batch")
    key, _, value = pair.partition("=")
    assert key == "processors"
    assert yaml.safe_load(value) == {
        "batch": {"timeout": "5s", "send_batch_size": 1024, "send_batch_max_size": 2048}
    }


def test_queue_size_and_charm_config_are_charm_options_after_the_preset() -> None:
    req = choice.request(args(profile="queue-5000", queue_size=7000, charm_config=("x=1",)))
    assert req.charms is not None
    assert req.charms.otelcol_pairs == ("queue_size=5000", "x=1", "queue_size=7000")
    assert req.charms.preset == "queue-5000"
    assert req.charms.otelcol.ref == "rev221"  # the pinned revision by default
    assert req.hand is None


def test_hand_nop_is_a_hand_written_profile() -> None:
    req = choice.request(args(profile="hand-nop", queue_size=50))
    assert req.charms is None
    assert req.hand is not None
    assert (req.hand.exporter, req.hand.queue_size) == ("nop", 50)


@pytest.mark.parametrize("flag", ["otelcol_charm", "loki_charm", "charm_config", "loki_config"])
def test_charm_flags_do_not_apply_to_a_hand_profile(flag: str) -> None:
    value: object = ("k=v",) if flag.endswith("config") else "rev160"
    with pytest.raises(choice.ChoiceError, match=f"--{flag.replace('_', '-')}: apply to"):
        choice.request(args(profile="hand-nop", **{flag: value}))


def test_an_unknown_preset(tmp_path: Path) -> None:
    with pytest.raises(choice.ChoiceError, match="--profile: unknown profile 'fast'"):
        choice.preset_pairs("fast")


def test_a_running_stack_is_compared_by_commit_and_options() -> None:
    hand = Profile()
    assert choice.differences(hand, None, hand) == []
    assert choice.differences(hand, {"otelcol": {}}, None) == [
        "profile: running charm-rendered, asked charm-default"
    ]
