"""Which series of the model's Prometheus count the pipeline under test: one copy, end to end.

The collector sends every Loki unit it is related to a full copy of the logs, through one
`loki/send-loki-logs/<n>` exporter per unit. With N Loki units, the exporters together send N
copies and the Loki units together receive N copies, while the receiver accepts each record
once and a LogQL count on one unit finds each record once. The loss ledger compares these
steps, so each must count the same copy. The rule:

- **one copy, the one Prometheus sees**: the Loki charm publishes its scrape job for its
  leader's address only, so Prometheus holds the Loki counters of one unit (normally the
  leader). Loki's counters are summed over the application (`juju_application="loki"`), so the
  figures follow whichever unit Prometheus scrapes, whatever unit labels it adds and whoever is
  leader; loadgate asks Prometheus which unit that is (its `juju_unit` label when the series carry
  one, else the leader, whose address the scrape job names);
- the collector's figures follow the one exporter that pushes to that unit (read from the
  collector's own config), and the LogQL count of stored records asks that unit;
- if Prometheus scrapes several Loki units, the series must carry `juju_unit` so that one unit
  (the leader when it is among them) can be chosen; otherwise the run is refused: a sum over
  several copies cannot be compared with the records accepted once.

Every other copy is checked by count: each Loki unit must hold what the followed one holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import PrometheusAPI

from . import endpoints
from .endpoints import UnitEndpoint

_LOKI_BUILD_INFO = "loki_build_info"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _series_count_query(matchers: Mapping[str, str]) -> str:
    """PromQL: how many Loki processes Prometheus scrapes that match `matchers`."""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(matchers.items()))
    return f"count({_LOKI_BUILD_INFO}{{{inner}}})"


@dataclass(frozen=True)
class LokiCopy:
    """The Loki unit whose copy the figures follow, and the matchers of its counters."""

    unit: UnitEndpoint
    matchers: Mapping[str, str]
    scraped: int  # Loki processes Prometheus scrapes for the application
    reason: str


def choose_loki_copy(
    prom: PrometheusAPI,
    app: str,
    units: Sequence[UnitEndpoint],
    leader: str,
    *,
    timeout: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> LokiCopy:
    """Which Loki unit Prometheus scrapes (waiting up to `timeout` for a first scrape)."""
    by_name = {u.unit: u for u in units}
    app_only = {"juju_application": app}
    deadline = time.monotonic() + timeout
    while True:
        scraped = int(prom.instant(_series_count_query(app_only)) or 0)
        if scraped or time.monotonic() >= deadline:
            break
        sleep(2.0)
    if not scraped:
        raise endpoints.EndpointError(
            f"Prometheus holds no Loki series of application {app!r} "
            f"({_series_count_query(app_only)} is empty): is {app}:metrics-endpoint related to "
            "Prometheus, and has it scraped yet?"
        )
    labelled = [
        u for u in units if prom.instant(_series_count_query({**app_only, "juju_unit": u.unit}))
    ]
    if scraped == 1:
        if labelled:
            unit = labelled[0]
            reason = f"Prometheus scrapes one Loki unit, {unit.unit} (its juju_unit label)"
        else:
            if leader not in by_name:
                raise endpoints.EndpointError(f"the {app} leader {leader} has no address")
            unit = by_name[leader]
            reason = (
                f"Prometheus scrapes one Loki unit, without a juju_unit label: the leader "
                f"{leader}, whose address the Loki charm's scrape job names"
            )
        return LokiCopy(unit, app_only, scraped, reason)
    if len(labelled) != scraped:
        raise endpoints.EndpointError(
            f"Prometheus scrapes {scraped} Loki processes of {app!r} but only "
            f"{len(labelled)} carry the juju_unit label of a unit "
            f"({', '.join(u.unit for u in labelled) or 'none'}): the copies cannot be told "
            "apart, and their sum cannot be compared with the records accepted once"
        )
    unit = by_name[leader] if leader in {u.unit for u in labelled} else labelled[0]
    return LokiCopy(
        unit,
        {**app_only, "juju_unit": unit.unit},
        scraped,
        f"Prometheus scrapes {scraped} Loki units; the figures follow {unit.unit}",
    )


# The collector charm scrapes its own metrics once a minute (its self-monitoring job's
# `scrape_interval: 1m`) and remote-writes them to Prometheus, which scrapes Loki as often.
_COS_SCRAPE_INTERVAL_S = 60.0


def scope_for(exporter: str, copy: LokiCopy) -> Scope:
    """The pipeline scope of one copy: its exporter, and its Loki unit's counters."""
    # COS Prometheus gets the collector's metrics once a minute: rates over three minutes.
    return Scope(
        exporter=exporter,
        loki=dict(copy.matchers),
        rate_window="3m",
        scrape_interval_s=_COS_SCRAPE_INTERVAL_S,
    )
