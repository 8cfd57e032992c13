"""Each k6 unit's share of a multi-unit run, from two sources that do not share code paths:

- Prometheus: the requests each k6 process remote-wrote, tagged with its `instance` (the unit
  name with '-' for '/', as the charm sets it) and the run id;
- the k6 charm: get-results on each non-leader unit reports that unit's own segment (the
  leader's get-results reports the combined figures).
"""

from __future__ import annotations

from collections.abc import Iterable

import jubilant

from loadgate.contract.summary import ClientFigures
from loadgate.measure import queries as q
from loadgate.measure.queries import PrometheusAPI

from . import actions
from .model import run_action

_K6_REQUESTS = "k6_http_reqs_total"


def _instance_of(unit: str) -> str:
    """`k6/1` -> `k6-1`: the `instance` tag of that unit's k6 metrics."""
    return unit.replace("/", "-")


def _requests_query(run_id: str, unit: str, window_s: int) -> str:
    """PromQL: the requests one unit's k6 sent in the run (its counter's highest value)."""
    matchers = {"run_id": run_id, "instance": _instance_of(unit)}
    return q.max_over(q.counter_total(_K6_REQUESTS, matchers), window_s)


def requests_by_unit(
    prom: PrometheusAPI, run_id: str, units: Iterable[str], window_s: int, at: float
) -> dict[str, int | None]:
    return {
        unit: None if (v := prom.instant(_requests_query(run_id, unit, window_s), at)) is None
        else round(v)
        for unit in units
    }  # fmt: skip


def own_figures(juju: jubilant.Juju, units: Iterable[str], run_id: str) -> dict[str, ClientFigures]:
    """get-results on each (non-leader) unit: its own segment's figures."""
    out: dict[str, ClientFigures] = {}
    for unit in units:
        state = actions.parse_results(run_action(juju, unit, "get-results", {"run-id": run_id}))
        if state.client is None:
            raise actions.ActionResultError(f"{unit}: get-results has no figures for {run_id}")
        out[unit] = state.client
    return out
