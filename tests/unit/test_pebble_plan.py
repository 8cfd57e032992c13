"""The local stack's Pebble services and checks, built in one place (stack/pebble_plan.py):
every service the stack writes itself restarts the same way, every check probes as often,
and the two stand-in collectors differ only where their use does (stack/standin.py)."""

from __future__ import annotations

from pathlib import Path

from loadgate.stack import fault_service, pebble_plan, render, standin
from loadgate.stack.faults import FaultPlan
from loadgate.stack.layout import Layout
from loadgate.stack.ports import Ports

POLICY = ("override", "startup", "on-failure", "backoff-delay")
CADENCE = ("override", "level", "period", "timeout", "threshold")


def test_a_service_entry_runs_its_argv_and_restarts_after_a_second() -> None:
    entry = pebble_plan.service("x", ["/bin/x", "--a=b c"], Path("/run"), {"K": "v"})
    assert entry == {
        "override": "replace",
        "summary": "x",
        "command": "/bin/x '--a=b c'",
        "startup": "enabled",
        "working-dir": "/run",
        "environment": {"K": "v"},
        "on-failure": "restart",
        "backoff-delay": "1s",
    }
    assert list(entry) == [  # the order Pebble's YAML is written in
        "override", "summary", "command", "startup", "working-dir", "environment",
        "on-failure", "backoff-delay",
    ]  # fmt: skip
    assert "environment" not in pebble_plan.service("x", ["/bin/x"], Path("/run"))


def test_every_service_and_check_the_stack_writes_is_built_alike() -> None:
    layout, ports = Layout(Path("/run/s")), Ports()
    layer = render.pebble_layer(Path("/bin"), ports, layout)
    services = list(layer["services"].values())
    checks = list(layer["checks"].values())
    for s in (standin.TRACES, standin.LOKI):
        services.append(s.pebble_service(Path("/bin/otelcol"), Path("/c.yaml"), layout.root))
        checks.append(s.pebble_check(s.ports_for(ports)))
    services.append(fault_service.pebble_service(layout))
    checks.append(fault_service.pebble_check(fault_service.FaultService(FaultPlan("x"), 1, 2)))
    reference = pebble_plan.service("x", ["x"], layout.root)
    assert len(services) == 6
    for entry in services:
        assert {k: entry[k] for k in POLICY} == {k: reference[k] for k in POLICY}
    probe = pebble_plan.http_check("http://x/")
    assert len(checks) == 6
    for check in checks:
        assert {k: check[k] for k in CADENCE} == {k: probe[k] for k in CADENCE}


def test_the_two_standins_differ_where_their_use_does(tmp_path: Path) -> None:
    traces, loki = standin.TRACES, standin.LOKI
    cert, key = tmp_path / "c.crt", tmp_path / "c.key"
    t = traces.config(traces.default_ports, cert, key)
    lg = loki.config(loki.default_ports, cert, key)
    assert "processors" not in t
    assert list(lg) == ["extensions", "receivers", "processors", "exporters", "service"]
    assert lg["service"]["pipelines"] == {
        "logs": {"receivers": ["otlp"], "processors": [standin.OWN_FILTER], "exporters": ["nop"]}
    }
    assert lg["processors"] is not loki.config(loki.default_ports, cert, key)["processors"]
    assert {k: v for k, v in t.items() if k not in ("receivers", "service", "extensions")} == {
        "exporters": {"nop": {}}
    }
    assert "metric_relabel_configs" not in traces.scrape_job(traces.default_ports)
    assert loki.scrape_job(loki.default_ports)["job_name"] == "loki-standin"
    assert traces.scrape_job(traces.default_ports)["job_name"] == "traces-standin"
    moved = Ports.from_base(26000)
    assert traces.ports_for(moved) == standin.StandinPorts(26007, 26008, 26009)
    assert loki.ports_for(moved) == standin.StandinPorts(26010, 26011, 26012)
