"""Which signals the collector carries, and the bundle relations that carry them. Pure.

Logs always travel (otelcol → Loki over `send-loki-logs`, the stack's base). Metrics need
`send-remote-write` (the otelcol charm renders a `prometheusremotewrite` exporter only with it),
traces `send-traces` (an `otlphttp` exporter only with it). Their provider side is written by
the providers' own library code: the Prometheus charm's `prometheus_remote_write` (v1) and the
Tempo coordinator's `tracing` (v0) library, both read from the Prometheus charm's `lib/` (the
snapshot carries them; the otelcol charm's requirer speaks those same versions).

What the providers publish is what they publish in the bundle's model `loadgate`: Prometheus
related to the CA (`prometheus:certificates`), so its URL is HTTPS on its unit's in-cluster
name; the traces backend as a Tempo coordinator named `tempo` related to the same CA.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

LOGS, METRICS, TRACES = "logs", "metrics", "traces"
SIGNALS = (LOGS, METRICS, TRACES)
DEFAULT: tuple[str, ...] = (LOGS,)
_PROMETHEUS_APP = "prometheus"
TRACES_APP = "tempo"
_PROMETHEUS_PORT = 9090
_REMOTE_WRITE_PATH = "/api/v1/write"
# Tempo's OTLP receivers (the ports its coordinator publishes).
_TEMPO_OTLP_GRPC = 4317
_TEMPO_OTLP_HTTP = 4318
REMOTE_WRITE_ENDPOINT = "send-remote-write"
TRACES_ENDPOINT = "send-traces"


class SignalsError(ValueError):
    """A signals value names something unknown; the message names the flag and the values."""


def parse(text: str | Iterable[str], flag: str = "--signals") -> tuple[str, ...]:
    """`logs,metrics,traces` (any order, each once) -> the signals in canonical order; logs
    must be among them (the stack always carries logs)."""
    items = text.split(",") if isinstance(text, str) else list(text)
    names = [i.strip() for i in items]
    allowed = ", ".join(SIGNALS)
    unknown = [repr(n) if not n else n for n in names if n not in SIGNALS]
    if unknown:
        raise SignalsError(f"{flag}: unknown signal {', '.join(unknown)}; allowed: {allowed}")
    if len(set(names)) != len(names):
        raise SignalsError(f"{flag}: a signal is named twice in {','.join(names)!r}")
    if LOGS not in names:
        raise SignalsError(
            f"{flag}: must include logs (the stack always carries logs); e.g. logs,metrics"
        )
    return tuple(s for s in SIGNALS if s in names)


def text(signals: Iterable[str]) -> str:
    return ",".join(signals)


def is_default(signals: Iterable[str]) -> bool:
    return tuple(signals) == DEFAULT


def unit_host(app: str, model: str) -> str:
    """The in-cluster name of unit 0 of `app` (as render.fqdn)."""
    return f"{app}-0.{app}-endpoints.{model}.svc.cluster.local"


def _prometheus_url(model: str) -> str:
    """The Prometheus charm's most external URL in the bundle (TLS from the CA, no ingress)."""
    return f"https://{unit_host(_PROMETHEUS_APP, model)}:{_PROMETHEUS_PORT}"


def _tempo_receivers(model: str) -> dict[str, str]:
    """The receiver URLs a Tempo coordinator with TLS publishes: HTTP ones with a scheme, gRPC
    ones as host:port."""
    host = unit_host(TRACES_APP, model)
    return {
        "otlp_http": f"https://{host}:{_TEMPO_OTLP_HTTP}",
        "otlp_grpc": f"{host}:{_TEMPO_OTLP_GRPC}",
    }


def relations(
    signals: Iterable[str], provider_lib: Path | None, model: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The collector's extra relations and exchanges for `signals` beyond logs."""
    wanted = tuple(signals)
    rels: list[dict[str, Any]] = []
    exchanges: list[dict[str, Any]] = []
    if wanted == DEFAULT:
        return rels, exchanges
    if provider_lib is None:
        raise SignalsError(
            "signals beyond logs need the Prometheus charm's lib/ (its provider libraries)"
        )
    if METRICS in wanted:
        rels.append(
            {
                "endpoint": REMOTE_WRITE_ENDPOINT,
                "interface": "prometheus_remote_write",
                "remote_app_name": _PROMETHEUS_APP,
            }
        )
        exchanges.append(
            {
                "endpoint": REMOTE_WRITE_ENDPOINT,
                "kind": "prometheus_remote_write",
                "provider_lib": str(provider_lib),
                "server_url": _prometheus_url(model),
                "endpoint_path": _REMOTE_WRITE_PATH,
            }
        )
    if TRACES in wanted:
        rels.append(
            {"endpoint": TRACES_ENDPOINT, "interface": "tracing", "remote_app_name": TRACES_APP}
        )
        exchanges.append(
            {
                "endpoint": TRACES_ENDPOINT,
                "kind": "tracing",
                "provider_lib": str(provider_lib),
                "receiver_urls": _tempo_receivers(model),
            }
        )
    return rels, exchanges
