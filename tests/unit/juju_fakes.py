"""Fakes shared by the Juju helpers' tests: action results as `juju run` returns them, a
jubilant.Status, the collector's config, and the jubilant calls JujuTarget makes answered
in-process (with a Prometheus answering from a table)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jubilant
import pytest

from loadgate.juju import endpoints
from loadgate.measure.queries import PrometheusAPI
from loadgate.stack import tls
from loadgate.targets.juju import JujuTarget

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


def status_of(apps: dict[str, dict[str, dict[str, Any]]]) -> jubilant.Status:
    return jubilant.Status._from_dict(  # pyright: ignore[reportPrivateUsage]
        {
            "model": {
                "name": "m",
                "type": "caas",
                "controller": "c",
                "cloud": "k8s",
                "version": "3.6.0",
                "model-status": {},
            },
            "machines": {},
            "applications": {
                name: {
                    "charm": name,
                    "charm-origin": "charmhub",
                    "charm-name": name,
                    "charm-rev": 1,
                    "exposed": False,
                    "units": units,
                }
                for name, units in apps.items()
            },
        }
    )


COLLECTOR_CONFIG = """
exporters:
  loki/send-loki-logs/0:
    endpoint: https://loki-1.loki-endpoints.cos.svc.cluster.local:3100/loki/api/v1/push
  loki/send-loki-logs/1:
    endpoint: https://loki-0.loki-endpoints.cos.svc.cluster.local:3100/loki/api/v1/push
  prometheusremotewrite/0:
    endpoint: https://prometheus-0.prometheus-endpoints.cos.svc.cluster.local:9090/api/v1/write
"""


@dataclass
class Task:
    results: dict[str, Any]


@dataclass
class Model:
    """The jubilant.Juju calls JujuTarget makes, answered from a script of get-results."""

    results: list[dict[str, Any]]
    start_run_id: str | None = None
    model: str = "ctl:admin/cos"
    ran: list[tuple[str, str, dict[str, Any]]] = field(
        default_factory=list[tuple[str, str, dict[str, Any]]]
    )

    loki_leader: str = "loki/0"

    def status(self) -> jubilant.Status:
        loki = {
            "loki/0": {"address": "10.0.0.1", "leader": self.loki_leader == "loki/0"},
            "loki/1": {"address": "10.0.0.2", "leader": self.loki_leader == "loki/1"},
        }
        return status_of(
            {
                "ca": {"ca/0": {"address": "10.0.0.9", "leader": True}},
                "prometheus": {"prometheus/0": {"address": "10.0.0.3"}},
                "loki": loki,
                "otelcol": {"otelcol/0": {"address": "10.0.0.4"}},
                "k6": {"k6/0": {"address": "10.0.0.5", "leader": True}},
            }
        )

    def run(
        self,
        unit: str,
        action: str,
        params: dict[str, Any] | None = None,
        *,
        wait: float | None = None,
    ) -> Task:
        self.ran.append((unit, action, dict(params or {})))
        if action == "get-ca-certificate":
            return Task({"ca-certificate": tls.generate().ca_cert_pem.decode()})
        if action == "start-load":
            return Task({"run-id": self.start_run_id or (params or {})["run-id"]})
        if action == "get-results":
            return Task(self.results.pop(0))
        return Task({})

    def ssh(self, target: str, command: str, *args: str, container: str | None = None) -> str:
        assert (target, command, args, container) == (
            "otelcol/0",
            "cat",
            (endpoints.OTELCOL_CONFIG,),
            "otelcol",
        )
        return COLLECTOR_CONFIG


def prometheus_answering(answers: Mapping[str, float | None], seen: list[str]) -> PrometheusAPI:
    """A Prometheus client whose server answers each query from `answers` (else no series)."""

    def answer(request: httpx.Request) -> httpx.Response:
        query = request.url.params["query"]
        seen.append(query)
        value = answers.get(query)
        result = [] if value is None else [{"metric": {}, "value": [1, str(value)]}]
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": result}}
        )

    return PrometheusAPI(
        "https://10.0.0.3:9090", httpx.Client(transport=httpx.MockTransport(answer))
    )


# Prometheus scrapes one Loki process, without a juju_unit label (the Loki charm's scrape job).
LOKI_SCRAPED = {'count(loki_build_info{juju_application="loki"})': 1.0}


def make_target(
    model: Model,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answers: Mapping[str, float | None] | None = None,
) -> JujuTarget:
    prom = prometheus_answering(LOKI_SCRAPED if answers is None else answers, [])

    def api(unit: endpoints.UnitEndpoint, ca: Path) -> PrometheusAPI:
        return prom

    monkeypatch.setattr(endpoints, "prometheus_api", api)
    return JujuTarget(model, workdir=tmp_path, poll_every=0.0, scrape_timeout=0.0)  # pyright: ignore[reportArgumentType]
