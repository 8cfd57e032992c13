"""Where the load goes: the OTLP/HTTP endpoint of the collector related on `send-otlp`, or for a
scenario whose target is no OTLP receiver (loki-push: Loki's push API) the `target` given."""

from __future__ import annotations

from typing import Literal

import ops
from charmlibs.interfaces.otlp import OtlpRequirer

from loadgate_contract.scenarios import Scenario

NO_TARGET = "no OTLP target: relate send-otlp or pass target="
# The telemetries an OTLP endpoint declares, as the otlp library names them.
TELEMETRIES: dict[str, Literal["logs", "metrics", "traces"]] = {
    "logs": "logs",
    "metrics": "metrics",
    "traces": "traces",
}


def no_target(scenario: Scenario) -> str:
    """Why a run of `scenario` has nowhere to go."""
    if scenario.otlp is None:
        return f"{scenario.name} needs target=: the base URL of {scenario.target}"
    return NO_TARGET


def default_target(charm: ops.CharmBase, scenario: Scenario) -> str:
    """The related OTLP/HTTP receiver for an OTLP scenario, else none (target= is required)."""
    if scenario.otlp is None:
        return ""
    return otlp_http_base(charm, telemetry=scenario.otlp) or ""


def otlp_http_base(
    charm: ops.CharmBase, relation_name: str = "send-otlp", telemetry: str = "logs"
) -> str | None:
    """Base URL of the related OTLP/HTTP receiver that takes `telemetry` (logs, metrics), e.g.
    `http://otelcol-0...:4318`.

    Only http endpoints are asked for (the scenario posts OTLP/JSON); the provider publishes them
    with a scheme, but one without gets `http://` when marked insecure, else `https://`.
    """
    requirer = OtlpRequirer(
        charm, relation_name, protocols=["http"], telemetries=[TELEMETRIES[telemetry]]
    )
    for _, endpoint in sorted(requirer.endpoints.items()):
        url = endpoint.endpoint.strip().rstrip("/")
        if not url:
            continue
        if "://" not in url:
            url = ("http://" if endpoint.insecure else "https://") + url
        return url
    return None
