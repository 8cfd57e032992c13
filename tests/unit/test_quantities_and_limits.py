"""Kubernetes quantities and the limit arithmetic of the charms' `cpu` and `memory` options
(stack/quantity.py, stack/limits.py): pure."""

from __future__ import annotations

from decimal import Decimal

import pytest

from loadgate.stack import limits, quantity
from loadgate.stack.limits import Limits, Requests

CHARM = Requests("0.25", "200Mi")  # what the pinned otelcol and Loki charms request
MI = 2**20


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("1", Decimal(1)),
        ("1.5", Decimal("1.5")),
        ("0.25", Decimal("0.25")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+2", Decimal(2)),
        ("100u", Decimal("0.0001")),
        ("3n", Decimal("0.000000003")),
        ("1k", Decimal(1000)),
        ("1Ki", Decimal(1024)),
        ("512Mi", Decimal(512 * MI)),
        ("1Gi", Decimal(2**30)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("1G", Decimal(10**9)),
        ("500M", Decimal(5 * 10**8)),
        ("2Ti", Decimal(2 * 2**40)),
        ("1E", Decimal(10**18)),  # exa, not an exponent
        ("1e9", Decimal(10**9)),
        ("1E3", Decimal(1000)),
        ("15e-1", Decimal("1.5")),
        ("-1", Decimal(-1)),
    ],
)
def test_quantities_parse_as_kubernetes_parses_them(text: str, value: Decimal) -> None:
    assert quantity.parse(text) == value


@pytest.mark.parametrize(
    "text",
    ["", "abc", "1K", "1Z", "1Zi", "1gi", "1 Gi", "1.2.3", "Gi", ".", "1e", "1e1.5", "0x10", "1,5"],
)
def test_what_kubernetes_refuses_is_refused(text: str) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse(text)


def test_cpu_rounds_up_to_the_millicore_and_memory_to_the_byte() -> None:
    assert quantity.millicores(quantity.parse("100u")) == 1
    assert quantity.millicores(quantity.parse("1.0001")) == 1001
    assert quantity.millicores(quantity.parse("500m")) == 500
    assert quantity.whole_bytes(quantity.parse("1500m")) == 2
    assert quantity.whole_bytes(quantity.parse("0.5Ki")) == 512


def test_shown_units() -> None:
    assert quantity.show_bytes(200 * MI) == "200Mi"
    assert quantity.show_bytes(2**30) == "1Gi"
    assert quantity.show_bytes(10**9) == "1000000000"
    assert quantity.show_millicores(250) == "250m"
    assert quantity.show_millicores(2000) == "2"


def test_a_limit_below_the_charms_request_is_raised_to_it() -> None:
    got = limits.from_options({"cpu": "100m", "memory": "100Mi"}, "--charm-config", CHARM)
    assert (got.cpu_millis, got.memory_bytes) == (250, 200 * MI)
    assert (got.cpu, got.memory) == ("100m", "100Mi")  # as asked, kept
    assert len(got.notes) == 2
    assert all("raised to the charm's request" in n for n in got.notes)


def test_a_limit_above_the_request_is_kept_and_one_alone_limits_only_its_resource() -> None:
    got = limits.from_options({"memory": "1Gi"}, "--charm-config", CHARM)
    assert (got.cpu_millis, got.memory_bytes, got.notes) == (None, 2**30, [])
    assert got.any
    got = limits.from_options({"cpu": "1.5"}, "--loki-config", CHARM)
    assert (got.cpu_millis, got.memory_bytes) == (1500, None)


def test_no_option_or_an_empty_one_is_no_limit() -> None:
    assert not limits.from_options({}, "--charm-config", CHARM).any
    assert not limits.from_options({"cpu": "", "memory": ""}, "--charm-config", CHARM).any
    assert not limits.from_options({"queue_size": 5}, "--charm-config", None).any


def test_without_the_charms_requests_the_limits_are_taken_as_given_and_said_so() -> None:
    got = limits.from_options({"memory": "64Mi", "cpu": "10m"}, "--charm-config", None)
    assert (got.cpu_millis, got.memory_bytes) == (10, 64 * MI)
    (note,) = got.notes
    assert "could not be read" in note


@pytest.mark.parametrize(
    ("options", "flag", "words"),
    [
        ({"cpu": "lots"}, "--charm-config", ["--charm-config: cpu:", "500m", "'lots'"]),
        ({"memory": "1GB"}, "--loki-config", ["--loki-config: memory:", "1Gi", "512Mi", "'1GB'"]),
        ({"memory": "-1Gi"}, "--charm-config", ["--charm-config: memory: must not be negative"]),
    ],
)
def test_a_bad_value_is_refused_naming_the_option_and_the_forms(
    options: dict[str, str], flag: str, words: list[str]
) -> None:
    with pytest.raises(limits.LimitError) as info:
        limits.from_options(options, flag, CHARM)
    for word in words:
        assert word in str(info.value)
    with pytest.raises(limits.LimitError):
        limits.check(options, flag)


def test_the_charms_requests_are_read_from_its_code() -> None:
    code = """
    def _resource_reqs_from_config(self) -> ResourceRequirements:
        limits = {"cpu": self.model.config.get("cpu"), "memory": self.model.config.get("memory")}
        requests = {"cpu": "0.25", "memory": "200Mi"}
        return adjust_resource_requirements(limits, requests, adhere_to_requests=True)
    """
    assert limits.charm_requests(code) == Requests("0.25", "200Mi")
    assert limits.charm_requests(code.replace("True", "False")) is None
    assert limits.charm_requests(code.replace('"200Mi"', '"lots"')) is None
    assert limits.charm_requests("class Charm: pass") is None


def cpu_quota_us(millis: int) -> int:
    """The CFS quota the cgroup v1 files of a CPU limit of `millis` milli-cores hold."""
    return int(limits.v1_settings(Limits(cpu_millis=millis))["cpu"]["cpu.cfs_quota_us"])


def test_kubelets_cpu_quota_per_100ms_period() -> None:
    assert cpu_quota_us(250) == 25_000
    assert cpu_quota_us(1000) == 100_000
    assert cpu_quota_us(1500) == 150_000
    assert cpu_quota_us(5) == 1_000  # at least 1 ms a period
    assert cpu_quota_us(1) == 1_000


def test_the_cgroup_files_of_a_limit() -> None:
    lim = Limits(cpu="250m", memory="200Mi", cpu_millis=250, memory_bytes=200 * MI)
    assert limits.v1_settings(lim) == {
        "memory": {
            "memory.limit_in_bytes": str(200 * MI),
            "memory.memsw.limit_in_bytes": str(200 * MI),
        },
        "cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "25000"},
    }
    assert limits.v2_settings(lim) == {
        "memory": {"memory.max": str(200 * MI), "memory.swap.max": "0"},
        "cpu": {"cpu.max": "25000 100000"},
    }
    memory_only = Limits(memory="1Gi", memory_bytes=2**30)
    assert list(limits.v1_settings(memory_only)) == ["memory"]
    assert limits.v2_settings(Limits()) == {}
    assert memory_only.describe() == "memory 1Gi"
    assert lim.describe() == "memory 200Mi, cpu 250m"
