"""The fake world in this process: a jubilant.Juju whose CLI calls cli.answer answers against a
state in memory (no `juju` program, no subprocess), and what the Juju helpers' tests build on it:
a model holding the bundle, the k6 charm's get-results as `juju run` hands them over, the
collector's config, a Prometheus answering from a table, and a JujuTarget over them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import jubilant

from loadgate.juju import endpoints
from loadgate.measure.queries import PrometheusAPI
from loadgate.stack import tls
from loadgate.targets.juju import JujuTarget

from . import cli, state

# jubilant asks `shutil.which` about its binary (is it the snap?): a name that is nowhere.
NO_BINARY = "fake-juju-in-process"
MODEL = "ctl:admin/cos"
# Pod addresses of the model's units.
ADDRESSES = {
    "loki/0": "10.0.0.1",
    "loki/1": "10.0.0.2",
    "prometheus/0": "10.0.0.3",
    "otelcol/0": "10.0.0.4",
    "k6/0": "10.0.0.5",
    "ca/0": "10.0.0.9",
}
# The collector's config in model `cos` with loki/0 and loki/1 (send-loki-logs/0 -> loki-1).
COLLECTOR_CONFIG = state.collector_config("cos", [0, 1])

# get-results of a finished run as `juju run --format json` hands it over: nested mappings
# (dotted keys), hyphenated names, every value a string.
CLIENT: dict[str, str] = {
    "requests": "1200",
    "failed": "6",
    "error-rate": "0.005",
    "p99-ms": "42.5",
    "records-sent": "6000",
    "records-accepted": "5970",
    "records-per-minute": "59700.0",
    "duration-s": "60.0",
    "dropped-iterations": "0",
    "instances": "1",
    "histogram": json.dumps({"base_ms": 0.05, "per_octave": 8, "counts": {"80": 1200}}),
}
FINISHED: dict[str, Any] = {"run-id": "r1", "status": "passed", "verdict": "PASS", "client": CLIENT}


class InProcessJuju(jubilant.Juju):
    """jubilant.Juju over a state in memory: each CLI call is answered by cli.answer (the same
    answers the `juju` program gives) and recorded in `calls`."""

    def __init__(self, world: state.State, model: str = MODEL):
        super().__init__(model=model, cli_binary=NO_BINARY)
        self.state = world
        self.calls: list[cli.Record] = []

    def _cli(
        self,
        *args: str,
        include_model: bool = True,
        stdin: str | None = None,
        log: bool = True,
        timeout: float | None = None,
    ) -> tuple[str, str]:
        if include_model and self.model is not None:
            args = (args[0], "--model", self.model, *args[1:])
        record = cli.answer(self.state, list(args))
        self.calls.append(record)
        if record["rc"]:
            raise jubilant.CLIError(
                record["rc"], ["juju", *args], record["stdout"], record["stderr"]
            )
        return record["stdout"], record["stderr"]

    def actions_run(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(unit, action, params) of every action run so far."""
        return cli.actions_run(self.calls)


def status_of(
    apps: Mapping[str, dict[str, Any]],
    *,
    addresses: Mapping[str, str] | None = None,
    leaders: Mapping[str, int] | None = None,
) -> jubilant.Status:
    """`juju status` of model `cos` holding `apps` (name -> state.app(...))."""
    world = state.new_state(
        models={"cos": {"apps": dict(apps)}}, addresses=addresses, leaders=leaders
    )
    return InProcessJuju(world, "cos").status()


def cos_model(
    get_results: list[dict[str, Any]] | None = None,
    *,
    k6_own_run_id: str | None = None,
    loki_leader: int = 0,
) -> InProcessJuju:
    """Model `cos` holding the bundle, its units at ADDRESSES, loki/`loki_leader` leading; the
    k6 charm answers get-results from `get_results` in order (then from the runs it started)."""
    model: dict[str, Any] = {"apps": state.deployed_apps(), "get_results": list(get_results or [])}
    if k6_own_run_id:
        model["k6_own_run_id"] = k6_own_run_id
    world = state.new_state(
        models={"cos": model},
        addresses=ADDRESSES,
        leaders={"loki": loki_leader},
        ca_pem=tls.generate().ca_cert_pem.decode(),
    )
    return InProcessJuju(world)


def prometheus_answering(
    answers: Mapping[str, float | None], seen: list[str], url: str = "https://10.0.0.3:9090"
) -> PrometheusAPI:
    """A Prometheus client whose server answers each query from `answers` (else no series)."""

    def answer(request: httpx.Request) -> httpx.Response:
        query = request.url.params["query"]
        seen.append(query)
        value = answers.get(query)
        result = [] if value is None else [{"metric": {}, "value": [1, str(value)]}]
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": result}}
        )

    return PrometheusAPI(url, httpx.Client(transport=httpx.MockTransport(answer)))


# Prometheus scrapes one Loki process, without a juju_unit label (the Loki charm's scrape job).
LOKI_SCRAPED = {'count(loki_build_info{juju_application="loki"})': 1.0}


def make_target(
    juju: InProcessJuju, workdir: Path | None, answers: Mapping[str, float | None] | None = None
) -> JujuTarget:
    """A JujuTarget over `juju`, the Prometheus unit it picks answering from `answers` (else
    LOKI_SCRAPED); its CA in `workdir` (None: a folder of its own)."""

    def prometheus_api(unit: endpoints.UnitEndpoint, ca: Path) -> PrometheusAPI:
        table = LOKI_SCRAPED if answers is None else answers
        return prometheus_answering(table, [], unit.url(endpoints.PROMETHEUS_PORT))

    return JujuTarget(
        juju, workdir=workdir, poll_every=0.0, scrape_timeout=0.0, prometheus_api=prometheus_api
    )
