"""Which Loki copy the Juju target's figures follow (issue 12, point 14).

The Loki charm publishes its scrape job for its leader's address only. With loki/1 the leader,
the old target followed loki/0 (`juju_unit="loki/0"`): Prometheus has no such series, so
`loki_received` read 0. The figures now follow the one unit Prometheus scrapes, end to end.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fake_juju.inprocess import (
    COLLECTOR_CONFIG,
    FINISHED,
    LOKI_SCRAPED,
    cos_model,
    make_target,
    prometheus_answering,
)

from loadgate.contract.spec import RunSpec
from loadgate.juju import endpoints
from loadgate.juju import scope as loki_scope
from loadgate.measure.pipeline import Scope, read_counters

UNITS = endpoints.unit_endpoints(cos_model().status(), "loki", "cos")  # loki/0 and loki/1
APP = 'count(loki_build_info{juju_application="loki"})'


def unit_query(unit: str) -> str:
    return f'count(loki_build_info{{juju_application="loki",juju_unit="{unit}"}})'


def test_the_leader_is_followed_when_the_series_carry_no_unit() -> None:
    seen: list[str] = []
    prom = prometheus_answering({APP: 1.0}, seen)
    copy = loki_scope.choose_loki_copy(prom, "loki", UNITS, "loki/1")
    assert copy.unit.unit == "loki/1"
    assert copy.matchers == {"juju_application": "loki"}
    assert "the leader loki/1" in copy.reason
    assert seen[0] == APP


def test_the_scraped_unit_is_followed_by_its_label() -> None:
    prom = prometheus_answering({APP: 1.0, unit_query("loki/0"): 1.0}, [])
    copy = loki_scope.choose_loki_copy(prom, "loki", UNITS, "loki/1")
    assert copy.unit.unit == "loki/0"  # Prometheus says which unit it scrapes
    assert copy.matchers == {"juju_application": "loki"}


def test_several_scraped_units_follow_the_leader_by_label() -> None:
    answers = {APP: 2.0, unit_query("loki/0"): 1.0, unit_query("loki/1"): 1.0}
    copy = loki_scope.choose_loki_copy(prometheus_answering(answers, []), "loki", UNITS, "loki/1")
    assert copy.unit.unit == "loki/1"
    assert copy.matchers == {"juju_application": "loki", "juju_unit": "loki/1"}


def test_several_unlabelled_copies_are_refused() -> None:
    prom = prometheus_answering({APP: 2.0}, [])
    with pytest.raises(endpoints.EndpointError, match="the copies cannot be told apart"):
        loki_scope.choose_loki_copy(prom, "loki", UNITS, "loki/1")


def test_no_loki_series_is_refused() -> None:
    sleeps: list[float] = []
    prom = prometheus_answering({}, [])
    with pytest.raises(endpoints.EndpointError, match="Prometheus holds no Loki series"):
        loki_scope.choose_loki_copy(prom, "loki", UNITS, "loki/1", timeout=0.0, sleep=sleeps.append)


def test_loki_counters_sum_over_the_application() -> None:
    """loki_received asks for the application's series, not one unit's."""
    seen: list[str] = []
    prom = prometheus_answering({}, seen)
    read_counters(
        prom, scope=Scope(exporter="loki/send-loki-logs/0", loki={"juju_application": "loki"})
    )
    loki = [q for q in seen if "loki_distributor_lines_received" in q]
    assert loki == [
        'sum({__name__=~"loki_distributor_lines_received(_total)?",juju_application="loki"})'
    ]


def test_target_follows_the_leaders_copy(tmp_path: Path) -> None:
    """loki/1 leads: the exporter to loki-1, Loki's counters by application, LogQL on loki/1."""
    target = make_target(cos_model([FINISHED], loki_leader=1), tmp_path, {**LOKI_SCRAPED})
    assert target.loki_unit.unit == "loki/1"
    # COLLECTOR_CONFIG pushes to loki-1 through loki/send-loki-logs/0.
    assert "loki/send-loki-logs/0" in COLLECTOR_CONFIG
    assert target.scope == Scope(
        exporter="loki/send-loki-logs/0",
        loki={"juju_application": "loki"},
        rate_window="3m",
        scrape_interval_s=60.0,
    )
    assert target.loki().base_url == "https://10.0.0.2:3100"
    env = target.environment()
    assert env["loki"]["unit"] == "loki/1"
    assert "the leader loki/1" in env["scope"]["why"]
    target.start(RunSpec.from_params({"run-id": "r1"}), tmp_path)
    target.close()
