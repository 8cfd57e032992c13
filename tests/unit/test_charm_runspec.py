"""RunSpec checks the k6 charm's start-load relies on: the target URL and its port, the run id.

A bad value is a SpecError naming the parameter (the charm fails the action with it); nothing
else may escape, e.g. the ValueError urllib raises for a malformed URL.
"""

from __future__ import annotations

import re

import pytest

from loadgate.contract.spec import RUN_ID_RULE, RunSpec, SpecError, is_run_id


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("http://[::1:4318", "Invalid IPv6 URL"),
        ("http://[::1]:99999", "port must be a number from 1 to 65535; got '99999'"),
        ("http://collector:99999", "port must be a number from 1 to 65535; got '99999'"),
        ("http://collector:65536", "got '65536'"),
        ("http://collector:0", "got '0'"),
        ("http://collector:abc", "got 'abc'"),
        ("http://collector:", "got ''"),
        ("http://collector:-1", "got '-1'"),
        ("https://user:secret@collector:4318", "must not carry credentials"),
        ("http://collector:4318?tenant=a", "without a query or fragment"),
        ("http://collector:4318#x", "without a query or fragment"),
        ("http://:4318", "must be an http:// or https:// URL"),
    ],
)
def test_a_bad_target_is_a_spec_error_naming_it(target: str, message: str) -> None:
    with pytest.raises(SpecError) as refused:
        RunSpec.from_params({"target": target})
    assert refused.value.fields == ["target"]
    assert message in str(refused.value)
    assert "secret" not in str(refused.value)  # credentials are never echoed


@pytest.mark.parametrize(
    "target",
    [
        "http://collector:1",
        "http://collector:65535",
        "https://otel.example.com:4318/",
        "http://[::1]:4318",
        "http://[fd00::1]",
        "http://10.1.2.3:4318",
        "http://otelcol-0.otelcol-endpoints.m.svc.cluster.local:4318",
    ],
)
def test_a_good_target_is_kept(target: str) -> None:
    assert RunSpec.from_params({"target": target}).target == target.rstrip("/")


@pytest.mark.parametrize(
    ("run_id", "ok"),
    [
        ("20261122T163528Z-1e9ab1", True),
        ("ci.42_a-b", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("../x", False),
        (".x", False),
        ("x/y", False),
        ("x\n", False),
        ("", False),
    ],
)
def test_run_ids(run_id: str, ok: bool) -> None:
    assert is_run_id(run_id) is ok
    if ok:
        assert RunSpec.from_params({"run-id": run_id}).run_id == run_id
    elif run_id:
        with pytest.raises(SpecError, match=re.escape(RUN_ID_RULE)):
            RunSpec.from_params({"run-id": run_id})
