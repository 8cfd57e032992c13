"""What `stack down` says of the services: stopped by it, or already gone before it."""

from __future__ import annotations

from loadgate.stack.local import service_lines

SERVICES = ("otelcol", "loki", "prometheus")


def test_all_running_are_reported_stopped() -> None:
    assert service_lines(SERVICES, set(SERVICES)) == ["services otelcol, loki, prometheus"]


def test_a_service_gone_before_down_is_not_reported_stopped() -> None:
    lines = service_lines(SERVICES, {"otelcol", "prometheus"})
    assert lines == ["services otelcol, prometheus", "already stopped: loki"]


def test_none_running_says_so() -> None:
    assert service_lines(SERVICES, set()) == ["already stopped: otelcol, loki, prometheus"]
