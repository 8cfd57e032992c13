"""Hand changes (stack/hand.py): their values, and what they do to a charm-rendered config."""

from __future__ import annotations

from typing import Any

import pytest

from loadgate.stack import hand, standin
from loadgate.stack.hand import HandChanges, HandError
from loadgate.stack.ports import Ports

LOKI = "loki/send-loki-logs/0"


def rendered() -> dict[str, Any]:
    """The shape the otelcol charm renders for a unit related to Loki (trimmed)."""
    return {
        "exporters": {
            LOKI: {
                "endpoint": "https://127.0.0.1:3100/loki/api/v1/push",
                "sending_queue": {"enabled": True, "queue_size": 1000, "storage": "file_storage"},
                "retry_on_failure": {"max_elapsed_time": "5m"},
            },
            "nop/otelcol/0": {},
        },
        "extensions": {"file_storage": {"directory": "/x"}},
        "processors": {
            "filter/internal-telemetry-loop-breaker/otelcol/0": {
                "logs": {
                    "log_record": [
                        f'instrumentation_scope.attributes["otelcol.component.id"] == "{LOKI}"'
                    ]
                }
            }
        },
        "service": {
            "pipelines": {
                "logs/otelcol/0": {"receivers": ["otlp"], "exporters": [LOKI]},
                "metrics/otelcol/0": {"receivers": ["otlp"], "exporters": ["nop/otelcol/0"]},
            }
        },
    }


SERVICES = {"otelcol": {"command": "/bin/otelcol --config=x", "environment": {"a": "1"}}}
STANDIN = hand.StandinTarget("https://127.0.0.1:4428", standin.LOKI_NAME, "/ca.crt")


def test_parse_reads_every_key_and_spells_them_back() -> None:
    pairs = [
        "file-storage=off",
        "num-consumers=4",
        "gomemlimit=300MiB",
        "gc-trace=on",
        "exporter=standin",
        "cpu-cost=8",
    ]
    changes = hand.parse(pairs)
    assert changes == HandChanges(False, 4, "300MiB", True, "standin", 8)
    assert changes.pairs() == pairs
    assert HandChanges.from_dict(changes.to_dict()) == changes
    assert hand.parse([]).empty


@pytest.mark.parametrize(
    ("pair", "named"),
    [
        ("file-storage=maybe", "file-storage: must be on or off"),
        ("num-consumers=0", "num-consumers: must be an integer from 1 to 1000"),
        ("num-consumers=x", "num-consumers"),
        ("gomemlimit=300MB", "gomemlimit: Go's form"),
        ("gomemlimit=0MiB", "gomemlimit"),
        ("exporter=kafka", "exporter: must be loki, standin, debug, nop"),
        ("cpu-cost=201", "cpu-cost: must be an integer from 0 to 200"),
        ("cpu-cost=-1", "cpu-cost: must be an integer from 0 to 200"),
        ("cpu-cost=1.5", "cpu-cost"),
        ("colour=red", "unknown key 'colour'; allowed: file-storage, num-consumers"),
        ("exporter", "expected KEY=VALUE"),
    ],
)
def test_bad_values_name_the_key_and_what_is_allowed(pair: str, named: str) -> None:
    with pytest.raises(HandError, match="--hand: ") as err:
        hand.parse([pair])
    assert named in str(err.value)


def test_a_key_twice_is_refused() -> None:
    with pytest.raises(HandError, match="exporter given twice"):
        hand.parse(["exporter=nop", "exporter=debug"])


def test_mapping_takes_yaml_scalars() -> None:
    changes = hand.from_mapping({"file_storage": False, "num_consumers": 2, "gc_trace": True})
    assert changes == HandChanges(file_storage=False, num_consumers=2, gc_trace=True)
    with pytest.raises(HandError, match="num-consumers"):
        hand.from_mapping({"num_consumers": True})


def test_gomemlimit_bytes() -> None:
    assert hand.gomemlimit_bytes("400MiB") == 400 * 2**20
    assert hand.gomemlimit_bytes("1GiB") == 2**30
    assert hand.gomemlimit_bytes("1000") == 1000


def test_memory_queue_and_consumers_change_the_loki_exporter_only() -> None:
    made = hand.apply(rendered(), SERVICES, HandChanges(file_storage=False, num_consumers=3))
    queue = made.config["exporters"][LOKI]["sending_queue"]
    assert queue == {"enabled": True, "queue_size": 1000, "num_consumers": 3}
    assert made.config["extensions"] == rendered()["extensions"]
    assert [c.where for c in made.changes] == [
        f"exporters.{LOKI}.sending_queue.storage",
        f"exporters.{LOKI}.sending_queue.num_consumers",
    ]
    assert made.services == SERVICES


def test_the_input_is_not_changed() -> None:
    config = rendered()
    hand.apply(config, SERVICES, HandChanges(file_storage=False, exporter="nop"))
    assert config == rendered()


def test_standin_takes_the_loki_exporters_place_with_its_queue() -> None:
    made = hand.apply(rendered(), SERVICES, HandChanges(exporter="standin"), STANDIN)
    exporters = made.config["exporters"]
    assert LOKI not in exporters
    new = exporters["otlphttp/loki-standin"]
    assert new["endpoint"] == "https://127.0.0.1:4428"
    assert new["tls"] == {"ca_file": "/ca.crt", "server_name_override": standin.LOKI_NAME}
    assert new["sending_queue"]["storage"] == "file_storage"
    assert new["retry_on_failure"] == {"max_elapsed_time": "5m"}
    pipelines = made.config["service"]["pipelines"]
    assert pipelines["logs/otelcol/0"]["exporters"] == ["otlphttp/loki-standin"]
    assert pipelines["metrics/otelcol/0"]["exporters"] == ["nop/otelcol/0"]
    breaker = made.config["processors"]["filter/internal-telemetry-loop-breaker/otelcol/0"]
    assert '"otlphttp/loki-standin"' in breaker["logs"]["log_record"][0]


def test_isolated_exporters() -> None:
    debug = hand.apply(rendered(), SERVICES, HandChanges(exporter="debug")).config
    assert debug["exporters"]["debug/isolated"] == {
        "verbosity": "basic",
        "use_internal_logger": False,
    }
    nop = hand.apply(rendered(), SERVICES, HandChanges(exporter="nop")).config
    assert nop["service"]["pipelines"]["logs/otelcol/0"]["exporters"] == ["nop/isolated"]
    assert HandChanges(exporter="nop").scope_exporter == "nop.*"


def test_standin_without_a_target_is_refused() -> None:
    with pytest.raises(HandError, match="no Loki stand-in"):
        hand.apply(rendered(), SERVICES, HandChanges(exporter="standin"))


def test_a_config_without_loki_exporter_is_refused() -> None:
    config = rendered()
    del config["exporters"][LOKI]
    with pytest.raises(HandError, match="no Loki exporter"):
        hand.apply(config, SERVICES, HandChanges(file_storage=False))


def test_go_runtime_settings_go_into_the_service_environment() -> None:
    made = hand.apply(rendered(), SERVICES, HandChanges(gomemlimit="300MiB", gc_trace=True))
    assert made.services["otelcol"]["environment"] == {
        "a": "1",
        "GOMEMLIMIT": "300MiB",
        "GODEBUG": "gctrace=1",
    }
    assert made.config == rendered()


def test_standin_ports_follow_the_base_port() -> None:
    assert standin.LOKI.ports_for(Ports()).otlp_http == 4428
    moved = standin.LOKI.ports_for(Ports.from_base(26000))
    assert (moved.otlp_http, moved.metrics, moved.health) == (26010, 26011, 26012)


def test_standin_scrape_job_renames_its_metrics() -> None:
    job = standin.LOKI.scrape_job(standin.LOKI.default_ports)
    relabel = job["metric_relabel_configs"][0]
    assert relabel["replacement"] == "loadgate_standin_${1}"
    assert relabel["regex"] == "(otelcol_.*)"


def test_a_comparison_side_may_make_hand_changes() -> None:
    from loadgate.capacity.compare import sides as compare_sides

    side = compare_sides.parse_side("candidate", ["hand=exporter=standin hand=gc-trace=on"])
    assert side.overrides() == {"hand": ["exporter=standin", "gc-trace=on"]}
    with pytest.raises(compare_sides.SideError, match="hand: expected hand=OPTION=VALUE"):
        compare_sides.parse_side("candidate", ["hand=standin"])


def test_the_stand_ins_cpu_is_never_the_collectors() -> None:
    from loadgate.targets.local import process_name

    collector = ["/bin/otelcol", "--config=/run/config/otelcol.yaml"]
    logs = ["/bin/otelcol", "--config=/run/config/loki-standin.yaml"]
    traces = ["/bin/otelcol", "--config=/run/config/traces-standin.yaml"]
    assert process_name("otelcol", collector) == "otelcol"
    assert process_name("otelcol", logs) == "loki-standin"
    assert process_name("otelcol", traces) == "traces-standin"
    assert process_name("loki", []) == "loki"


def test_cpu_cost_digests_each_logs_records_body_first_in_the_otlp_logs_pipelines() -> None:
    made = hand.apply(rendered(), SERVICES, HandChanges(cpu_cost=3))
    cost = made.config["processors"]["transform/loadgate-cpu-cost"]
    assert cost["error_mode"] == "ignore"  # a body that is no string passes unchanged
    (group,) = cost["log_statements"]
    assert group["context"] == "log"
    assert group["statements"] == ['set(log.cache["loadgate_cost"], SHA256(log.body))'] * 3
    pipelines = made.config["service"]["pipelines"]
    assert pipelines["logs/otelcol/0"]["processors"] == ["transform/loadgate-cpu-cost"]
    assert "processors" not in pipelines["metrics/otelcol/0"]
    # Nothing else changes: the exporters (what reaches Loki) are as rendered.
    assert made.config["exporters"] == rendered()["exporters"]
    assert [c.where for c in made.changes] == [
        "processors.transform/loadgate-cpu-cost",
        "service.pipelines.logs/otelcol/0.processors",
    ]
    assert HandChanges(cpu_cost=0).empty
    assert hand.parse(["cpu-cost=3"]).text() == "cpu-cost=3"


def test_cpu_cost_goes_before_the_pipelines_own_processors() -> None:
    config = rendered()
    config["service"]["pipelines"]["logs/otelcol/0"]["processors"] = ["memory_limiter", "batch"]
    made = hand.apply(config, SERVICES, HandChanges(cpu_cost=1))
    assert made.config["service"]["pipelines"]["logs/otelcol/0"]["processors"] == [
        "transform/loadgate-cpu-cost", "memory_limiter", "batch",
    ]  # fmt: skip


def test_cpu_cost_without_an_otlp_logs_pipeline_is_refused() -> None:
    config = rendered()
    del config["service"]["pipelines"]["logs/otelcol/0"]
    with pytest.raises(HandError, match=r"cpu-cost: .*no logs pipeline taking OTLP"):
        hand.apply(config, SERVICES, HandChanges(cpu_cost=2))
