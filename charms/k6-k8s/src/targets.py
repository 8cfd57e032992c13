"""Where the load goes: the OTLP/HTTP endpoint of the collector related on `send-otlp`."""

from __future__ import annotations

import ops
from charmlibs.interfaces.otlp import OtlpRequirer

NO_TARGET = "no OTLP target: relate send-otlp or pass target="


def otlp_http_base(charm: ops.CharmBase, relation_name: str = "send-otlp") -> str | None:
    """Base URL of the related OTLP/HTTP receiver that takes logs, e.g. `http://otelcol-0...:4318`.

    Only http endpoints are asked for (the scenario posts OTLP/JSON); the provider publishes them
    with a scheme, but one without gets `http://` when marked insecure, else `https://`.
    """
    requirer = OtlpRequirer(charm, relation_name, protocols=["http"], telemetries=["logs"])
    for _, endpoint in sorted(requirer.endpoints.items()):
        url = endpoint.endpoint.strip().rstrip("/")
        if not url:
            continue
        if "://" not in url:
            url = ("http://" if endpoint.insecure else "https://") + url
        return url
    return None
