"""The dashboard file: well-formed Grafana JSON whose queries read only metrics that exist.

Known metric names, and where each comes from:
- k6 (its experimental-prometheus-rw output: `k6_` + metric name, `_total` for counters, trends
  in seconds as native histograms), read from the local stack's Prometheus after a run of the
  otlp-logs scenario; `k6_dropped_iterations_total` appears only once an iteration was dropped.
- the collector's self-metrics: counters with `_total` when Prometheus scrapes them (the local
  stack), possibly without when they travel through the collector's own scrape and remote write
  (COS), so queries match both; `otelcol_process_memory_rss` likewise with or without `_bytes`.
  `otelcol_exporter_enqueue_failed_log_records` appears only once the queue refused records.
- Loki's own metrics; `loki_discarded_samples_total` appears only once Loki discarded lines.
tests/local/test_dashboard_queries.py (repository root) runs every query against the real stack
after a run, makes k6 drop iterations and Loki discard lines to see those panels fill; only
`otelcol_exporter_enqueue_failed_log_records` has not been seen there (a full queue).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fakes import CHARM_DIR

DASHBOARD_FILE = CHARM_DIR / "src" / "grafana_dashboards" / "loadgate-k6.json"
DASHBOARD: dict[str, Any] = json.loads(DASHBOARD_FILE.read_text())
PROMETHEUS_DS = {"type": "prometheus", "uid": "${prometheusds}"}

K6_METRICS = {
    "k6_log_records_sent_total",
    "k6_log_records_accepted_total",
    "k6_http_req_duration_seconds",
    "k6_vus",
    "k6_vus_max",
    "k6_dropped_iterations_total",
}
_COLLECTOR_COUNTERS = {
    "otelcol_receiver_accepted_log_records",
    "otelcol_receiver_refused_log_records",
    "otelcol_exporter_sent_log_records",
    "otelcol_exporter_send_failed_log_records",
    "otelcol_exporter_enqueue_failed_log_records",
    "otelcol_process_cpu_seconds",
}
COLLECTOR_METRICS = (
    _COLLECTOR_COUNTERS
    | {f"{n}_total" for n in _COLLECTOR_COUNTERS}
    | {
        "otelcol_exporter_queue_size",
        "otelcol_exporter_queue_capacity",
        "otelcol_process_memory_rss",
        "otelcol_process_memory_rss_bytes",
    }
)
LOKI_METRICS = {"loki_distributor_lines_received_total", "loki_discarded_samples_total"}
KNOWN = K6_METRICS | COLLECTOR_METRICS | LOKI_METRICS
# What the issue asks the dashboard to show, as the metric each needs.
REQUIRED = {
    "offered records/s": "k6_log_records_sent_total",
    "accepted records/s": "k6_log_records_accepted_total",
    "p99": "k6_http_req_duration_seconds",
    "collector accepted records/s": "otelcol_receiver_accepted_log_records_total",
    "collector refused records/s": "otelcol_receiver_refused_log_records_total",
    "collector exported records/s": "otelcol_exporter_sent_log_records_total",
    "exporter queue size": "otelcol_exporter_queue_size",
    "Loki lines received/s": "loki_distributor_lines_received_total",
    "Loki lines discarded/s": "loki_discarded_samples_total",
}
VARIABLES = {"run_id", "collector", "loki", "prometheusds"}
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__range"}

# PromQL words that are not metric names (grouping, set operators, modifiers, number literals).
KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
    | {"and", "or", "unless", "inf", "nan"}
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NAME_MATCHER = re.compile(r'__name__\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: bare names, and every known name a
    `__name__` matcher selects (a matcher that selects none is reported as itself)."""
    found: set[str] = set()
    for op, pattern in _NAME_MATCHER.findall(expr):
        assert op in ("=", "=~"), f"negative __name__ matcher in {expr}"
        matched = {n for n in KNOWN if re.fullmatch(pattern, n)} if op == "=~" else {pattern}
        found |= matched or {f"__name__{op}{pattern}"}
    text = _STRING.sub('""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = _GROUPING.sub("", text)
    for m in _IDENT.finditer(text):
        word, rest = m.group(0), text[m.end() :].lstrip()
        if word.lower() in KEYWORDS or rest.startswith("("):
            continue  # a keyword, a function or an aggregation
        found.add(word)
    return found


def panels() -> list[dict[str, Any]]:
    return [p for p in DASHBOARD["panels"] if p["type"] != "row"]


def targets() -> list[tuple[str, dict[str, Any]]]:
    return [(p["title"], t) for p in panels() for t in p["targets"]]


def test_the_extractor_finds_names_and_skips_the_rest() -> None:
    expr = (
        "histogram_quantile(0.99, sum by (run_id, le) ("
        'rate(k6_http_req_duration_seconds{run_id=~"$x", le!="a b"}[$__rate_interval])))'
        " / on (run_id) group_left k6_vus or vector(0)"
    )
    assert metric_names(expr) == {"k6_http_req_duration_seconds", "k6_vus"}
    assert metric_names('{__name__=~"otelcol_exporter_sent_log_records(_total)?"}') == {
        "otelcol_exporter_sent_log_records",
        "otelcol_exporter_sent_log_records_total",
    }
    assert metric_names('sum({__name__=~"nothing_known"})') == {"__name__=~nothing_known"}
    assert metric_names("rate(not_a_known_metric[5m])") == {"not_a_known_metric"}


def test_the_file_is_a_dashboard_grafana_keeps() -> None:
    assert DASHBOARD_FILE.read_text().endswith("}\n")
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", DASHBOARD["uid"])
    assert isinstance(DASHBOARD["version"], int)
    assert DASHBOARD["title"]
    assert "__inputs" not in DASHBOARD  # datasources are variables, not import-time inputs


def test_panels_have_unique_ids_and_fit_the_grid() -> None:
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    for panel in DASHBOARD["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] >= 0
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        assert pos["h"] > 0


def test_every_panel_and_query_reads_the_prometheusds_variable() -> None:
    assert panels()
    for panel in panels():
        assert panel["datasource"] == PROMETHEUS_DS, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == PROMETHEUS_DS, panel["title"]
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["prometheusds"]["type"] == "datasource"
    assert variables["prometheusds"]["query"] == "prometheus"
    for v in variables.values():
        if v["type"] == "query":
            assert v["datasource"] == PROMETHEUS_DS, v["name"]


@pytest.mark.parametrize(
    ("title", "target"), [pytest.param(*t, id=f"{t[0]}/{t[1]['refId']}") for t in targets()]
)
def test_every_query_reads_only_known_metrics(title: str, target: dict[str, Any]) -> None:
    names = metric_names(target["expr"])
    assert names, f"{title}: no metric in {target['expr']}"
    assert names <= KNOWN, f"{title}: unknown {sorted(names - KNOWN)}"


def test_every_variable_a_query_uses_is_defined() -> None:
    used: set[str] = set()
    for _, target in targets():
        used |= set(re.findall(r"\$\{?(\w+)", target["expr"]))
    for v in DASHBOARD["templating"]["list"]:
        if v["type"] == "query":
            used |= set(re.findall(r"\$\{?(\w+)", v["definition"]))
    assert used - GRAFANA_BUILTINS <= VARIABLES
    assert {v["name"] for v in DASHBOARD["templating"]["list"]} == VARIABLES


def test_k6_queries_follow_the_run_id_variable_and_pipeline_ones_their_application() -> None:
    for title, target in targets():
        names = metric_names(target["expr"])
        if names & K6_METRICS:
            assert 'run_id=~"$run_id"' in target["expr"], title
        if names & COLLECTOR_METRICS:
            assert 'juju_application=~"$collector"' in target["expr"], title
        if names & LOKI_METRICS:
            assert 'juju_application=~"$loki"' in target["expr"], title


def test_the_run_id_variable_lists_the_runs_and_pipeline_filters_default_to_all() -> None:
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    run_id = variables["run_id"]
    assert run_id["query"]["query"] == "label_values(k6_log_records_sent_total, run_id)"
    assert run_id["definition"] == run_id["query"]["query"]
    for name in ("collector", "loki"):
        # ".*" also matches series without the label (the local stack has no Juju labels).
        assert variables[name]["includeAll"] is True
        assert variables[name]["allValue"] == ".*"
        assert variables[name]["current"]["value"] == ["$__all"]


def test_the_dashboard_shows_what_the_issue_asks_for() -> None:
    read: set[str] = set()
    for _, target in targets():
        read |= metric_names(target["expr"])
    missing = {what: name for what, name in REQUIRED.items() if name not in read}
    assert not missing


def test_queries_have_balanced_brackets_and_unique_ref_ids() -> None:
    for panel in panels():
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            text = _STRING.sub('""', target["expr"])
            for open_, close in ("()", "{}", "[]"):
                depth = 0
                for ch in text:
                    depth += (ch == open_) - (ch == close)
                    assert depth >= 0, (panel["title"], target["expr"])
                assert depth == 0, (panel["title"], target["expr"])
