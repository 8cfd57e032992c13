"""Signals beyond logs: the flag, the relations they add, localizing the exporters the charm
rendered for them (from a recorded render of the real charm), the traces backend stand-in and
the stack record. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgate.build import binaries
from loadgate.charms import signals
from loadgate.charms.sources import CharmSource
from loadgate.stack import (
    charm_build,
    charm_stack,
    choice,
    localize,
    localize_signals,
    render,
    standin,
)
from loadgate.stack.info import StackInfo
from loadgate.stack.ports import Ports

DATA = Path(__file__).resolve().parents[1] / "data" / "rendered"
TEMPO = "tempo-0.tempo-endpoints.loadgate.svc.cluster.local"
REMOTE_WRITE = "prometheusremotewrite/send-remote-write/0"
TRACES = "otlphttp/send-traces-0"


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / name).read_text())


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("logs", ("logs",)),
        ("traces,logs", ("logs", "traces")),
        (" logs , metrics", ("logs", "metrics")),
        ("logs,metrics,traces", ("logs", "metrics", "traces")),
    ],
)
def test_signals_are_parsed_in_canonical_order(text: str, parsed: tuple[str, ...]) -> None:
    assert signals.parse(text) == parsed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("logs,profiles", "--signals: unknown signal profiles; allowed: logs, metrics, traces"),
        ("", "--signals: unknown signal ''; allowed: logs, metrics, traces"),
        ("logs,logs", "named twice"),
        ("metrics,traces", "must include logs"),
    ],
)
def test_bad_signals_name_the_flag_and_the_allowed_values(text: str, says: str) -> None:
    with pytest.raises(signals.SignalsError) as err:
        signals.parse(text)
    assert says in str(err.value)


def test_logs_only_adds_no_relation_and_needs_no_provider() -> None:
    assert signals.relations(signals.DEFAULT, None, "loadgate") == ([], [])
    with pytest.raises(signals.SignalsError, match="Prometheus charm's lib"):
        signals.relations(("logs", "metrics"), None, "loadgate")


def test_metrics_and_traces_relations_and_what_their_providers_are_told() -> None:
    rels, exchanges = signals.relations(signals.SIGNALS, Path("/p/lib"), "loadgate")
    assert [(r["endpoint"], r["interface"], r["remote_app_name"]) for r in rels] == [
        ("send-remote-write", "prometheus_remote_write", "prometheus"),
        ("send-traces", "tracing", "tempo"),
    ]
    remote_write, tracing = exchanges
    assert remote_write["server_url"] == (
        "https://prometheus-0.prometheus-endpoints.loadgate.svc.cluster.local:9090"
    )
    assert remote_write["endpoint_path"] == "/api/v1/write"
    assert tracing["receiver_urls"] == {
        "otlp_http": f"https://{TEMPO}:4318",
        "otlp_grpc": f"{TEMPO}:4317",
    }
    assert {e["provider_lib"] for e in exchanges} == {"/p/lib"}


@pytest.fixture
def local_base(tmp_path: Path) -> localize.Localized:
    where = localize.OtelcolLocal(Ports.from_base(30000), tmp_path / "s", tmp_path / "ca.crt", {})
    return localize.otelcol(load("otelcol-rev221-signals-config.yaml"), where)


def test_exporters_move_to_the_local_backends(
    local_base: localize.Localized, tmp_path: Path
) -> None:
    targets = charm_build.signal_targets(signals.SIGNALS, Ports.from_base(30000), tmp_path / "c")
    out = localize_signals.exporters(local_base, targets)
    exporters = out.config["exporters"]
    assert exporters[REMOTE_WRITE]["endpoint"] == "http://127.0.0.1:30006/api/v1/write"
    assert exporters[TRACES]["endpoint"] == "https://127.0.0.1:30007"
    assert exporters[TRACES]["tls"] == {
        "insecure_skip_verify": False,
        "server_name_override": TEMPO,
        "ca_file": str(tmp_path / "c"),
    }
    added = {c.where: c for c in out.changes[len(local_base.changes) :]}
    assert "not encrypted locally" in added[f"exporters.{REMOTE_WRITE}.endpoint"].why
    assert "not encrypted" not in added[f"exporters.{TRACES}.endpoint"].why
    assert set(added) == {
        f"exporters.{REMOTE_WRITE}.endpoint",
        f"exporters.{TRACES}.endpoint",
        f"exporters.{TRACES}.tls.server_name_override",
        f"exporters.{TRACES}.tls.ca_file",
    }
    # Nothing else changed.
    assert out.config["receivers"] == local_base.config["receivers"]
    assert out.config["service"] == local_base.config["service"]


def test_an_exporter_without_a_local_backend_is_an_error(local_base: localize.Localized) -> None:
    only_metrics = charm_build.signal_targets(("logs", "metrics"), Ports(), Path("/ca"))
    with pytest.raises(localize.LocalizeError, match=f"exporters.{TRACES}: .* no traces backend"):
        localize_signals.exporters(local_base, only_metrics)


def test_a_logs_only_render_is_left_as_it_was(tmp_path: Path) -> None:
    where = localize.OtelcolLocal(Ports(), tmp_path / "s", tmp_path / "ca.crt", {})
    base = localize.otelcol(load("otelcol-rev221-config.yaml"), where)
    targets = charm_build.signal_targets(signals.DEFAULT, Ports(), tmp_path / "ca.crt")
    out = localize_signals.exporters(base, targets)
    assert out.config == base.config
    assert out.changes == base.changes


def test_backend_ports_follow_the_stack_ports() -> None:
    traces = standin.TRACES
    assert traces.ports_for(Ports()) == standin.StandinPorts(4418, 8889, 13134)
    assert traces.named_ports(traces.ports_for(Ports.from_base(25600))) == [
        ("traces_otlp_http", 25607),
        ("traces_metrics", 25608),
        ("traces_health", 25609),
    ]
    with pytest.raises(ValueError, match="traces backend needs ports"):
        traces.ports_for(Ports.from_base(65528))


def test_the_standin_is_named_a_standin_and_serves_tls(tmp_path: Path) -> None:
    bports = standin.TRACES.ports_for(Ports.from_base(25600))
    cfg = standin.TRACES.config(bports, tmp_path / "c.crt", tmp_path / "c.key")
    http = cfg["receivers"]["otlp"]["protocols"]["http"]
    assert http == {
        "endpoint": "127.0.0.1:25607",
        "tls": {"cert_file": str(tmp_path / "c.crt"), "key_file": str(tmp_path / "c.key")},
    }
    assert cfg["service"]["pipelines"] == {"traces": {"receivers": ["otlp"], "exporters": ["nop"]}}
    reader = cfg["service"]["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]
    assert reader["prometheus"]["port"] == 25608
    assert standin.TRACES.scrape_job(bports)["static_configs"][0]["targets"] == ["127.0.0.1:25608"]
    service = standin.TRACES.pebble_service(Path("/b/otelcol"), tmp_path / "t.yaml", tmp_path)
    assert "STAND-IN" in service["summary"]
    assert "not Tempo" in service["summary"]
    assert "stand-in" in standin.TRACES.role
    assert "not Tempo" in standin.TRACES.role
    assert standin.TRACES.pebble_check(bports)["http"]["url"] == "http://127.0.0.1:25609/"


def info(signals_: tuple[str, ...]) -> StackInfo:
    return StackInfo(
        root=Path("/run/stack"), pid=1, ports=Ports.from_base(25600), profile=None,
        bin_dir=Path("/b"), started_at=0.0, charms={}, signals=signals_,
    )  # fmt: skip


def test_a_logs_only_stack_record_keeps_its_shape() -> None:
    plain = info(signals.DEFAULT)
    assert "signals" not in plain.to_dict()
    assert plain.services == ("otelcol", "loki", "prometheus")
    assert plain.health_urls() == render.health_urls(plain.ports)
    assert StackInfo.from_dict(plain.to_dict()).signals == signals.DEFAULT


def test_a_traces_stack_lists_its_standin() -> None:
    traced = info(signals.SIGNALS)
    assert traced.to_dict()["signals"] == ["logs", "metrics", "traces"]
    assert StackInfo.from_dict(traced.to_dict()).signals == signals.SIGNALS
    assert traced.services[-1] == standin.TRACES.service
    assert traced.health_urls()[standin.TRACES.service] == "http://127.0.0.1:25609/"
    assert traced.service_ports()[standin.TRACES.service] == 25607


def test_signals_do_not_apply_to_a_hand_profile() -> None:
    flags = choice.StackFlags(profile="hand-nop", signals=("logs", "traces"))
    with pytest.raises(choice.ChoiceError, match="--signals: apply to"):
        choice.request(flags)


def source(role: str) -> CharmSource:
    return CharmSource(
        role=role, name=role, given="x", kind="snapshot", location="x", ref=None, commit="c1",
        dirty=False, revisions=(1,), path=Path("/src"), base=None, workload_tag=None,
        lock_sha256="0",
    )  # fmt: skip


def prepared(signals_: tuple[str, ...]) -> charm_stack.PreparedCharms:
    return charm_stack.PreparedCharms(
        source("otelcol"), source("loki"), {}, {}, binaries.part("otelcol"),
        binaries.part("loki"), signals=signals_,
    )  # fmt: skip


def test_a_running_stack_is_compared_by_its_signals() -> None:
    logs_only = prepared(signals.DEFAULT).to_dict()
    assert "signals" not in logs_only
    assert choice.differences(prepared(signals.DEFAULT), logs_only, None) == []
    traced = prepared(signals.SIGNALS)
    assert traced.to_dict()["signals"] == ["logs", "metrics", "traces"]
    assert "stand-in" in traced.to_dict()["traces_backend"]
    assert choice.differences(traced, logs_only, None) == [
        "signals: running logs, asked logs,metrics,traces"
    ]
    assert choice.differences(traced, traced.to_dict(), None) == []
