"""The charm's grafana-dashboard data, read by Grafana's own requirer code.

A tiny Grafana stand-in charm runs the real `GrafanaDashboardConsumer` (grafana_lib.py says where
it comes from) in ops.testing over the databag the k6 charm's leader wrote, as grafana-k8s does:
it must accept the dashboard, decode it and hand it over unchanged but for the datasource
variable it adds; and what it writes back when it refuses one is what the k6 charm logs.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import grafana_lib
import ops
import pytest
from fakes import CHARM_DIR
from ops import testing

import dashboards
from charm import K6Charm

DASHBOARD_FILE = CHARM_DIR / "src" / "grafana_dashboards" / "loadgate-k6.json"
GRAFANA_META: dict[str, Any] = {
    "name": "grafana-k8s",
    "requires": {"grafana-dashboard": {"interface": "grafana_dashboard"}},
    "peers": {"grafana": {"interface": "grafana_peers"}},
}


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    try:
        return grafana_lib.load(tmp_path_factory.mktemp("grafana-lib"))
    except grafana_lib.LibraryUnavailableError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def grafana(lib: ModuleType) -> type[ops.CharmBase]:
    class Grafana(ops.CharmBase):
        """What grafana-k8s does with the library: a consumer, and its peer data bucket."""

        def __init__(self, framework: ops.Framework):
            super().__init__(framework)
            self.dashboard_consumer = lib.GrafanaDashboardConsumer(self, "grafana-dashboard")

        @property
        def peers(self) -> ops.Relation | None:
            return self.model.get_relation("grafana")

    return Grafana


def k6_databag(ctx: testing.Context[K6Charm]) -> dict[str, str]:
    """The app databag the k6 leader writes for Grafana."""
    rel = testing.Relation("grafana-dashboard", remote_app_name="grafana")
    k6 = testing.Container("k6", can_connect=False)
    state = testing.State(leader=True, relations={rel}, containers={k6})
    out = ctx.run(ctx.on.relation_joined(rel, remote_unit=0), state)
    return dict(out.get_relation(rel.id).local_app_data)


def consume(
    grafana: type[ops.CharmBase], databag: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, str], list[str]]:
    """Grafana's leader handles relation-changed: its dashboards, its app databag, its events."""
    ctx = testing.Context(grafana, meta=GRAFANA_META)
    rel = testing.Relation("grafana-dashboard", remote_app_name="k6", remote_app_data=databag)
    state = testing.State(leader=True, relations={rel, testing.PeerRelation("grafana")})
    with ctx(ctx.on.relation_changed(rel, remote_unit=0), state) as manager:
        out = manager.run()
        found: list[dict[str, Any]] = manager.charm.dashboard_consumer.dashboards  # type: ignore[attr-defined]
    events = [type(e).__name__ for e in ctx.emitted_events]
    return found, dict(out.get_relation(rel.id).local_app_data), events


def test_grafana_accepts_and_decodes_the_dashboard(
    ctx: testing.Context[K6Charm], grafana: type[ops.CharmBase]
) -> None:
    found, grafana_data, events = consume(grafana, k6_databag(ctx))
    assert "GrafanaDashboardsChanged" in events
    assert "event" not in grafana_data  # no complaint
    assert len(found) == 1
    board = found[0]
    assert board["id"] == "file:loadgate-k6"
    assert board["charm"] == "loadgate-k6-k8s"
    ours = json.loads(DASHBOARD_FILE.read_text())
    assert board["dashboard_uid"] == ours["uid"] == "loadgate-k6-runs"
    assert board["dashboard_version"] == ours["version"]
    assert board["dashboard_title"] == ours["title"]
    content = json.loads(board["content"])
    # The panels arrive as written: datasource variable kept, no Juju matchers injected.
    assert content["panels"] == ours["panels"]
    # Grafana adds the one datasource variable the dashboard lacks, and no Juju dropdowns.
    names = [v["name"] for v in content["templating"]["list"]]
    assert names == ["lokids"] + [v["name"] for v in ours["templating"]["list"]]
    assert not [n for n in names if n.startswith("juju_")]


def test_the_content_encoding_is_the_librarys(lib: ModuleType) -> None:
    """base64 of an xz stream both ways (cosl picks its own LZMA preset: the bytes may differ,
    what either side decodes may not)."""
    text = DASHBOARD_FILE.read_text()
    assert lib.LZMABase64.decompress(dashboards.compress(text)) == text
    assert dashboards.decompress(lib.LZMABase64.compress(text)) == text


def test_what_grafana_says_of_a_broken_dashboard_is_what_the_charm_logs(
    ctx: testing.Context[K6Charm], grafana: type[ops.CharmBase], tmp_path: Path
) -> None:
    """The consumer refuses content that is not LZMA: it drops the relation's dashboards and
    answers in its app databag, which the k6 charm reads on relation-changed."""
    data = json.loads(k6_databag(ctx)[dashboards.KEY])
    data["templates"]["file:loadgate-k6"]["content"] = "bm90IGx6bWE="  # base64 of "not lzma"
    found, grafana_data, _ = consume(grafana, {dashboards.KEY: json.dumps(data)})
    assert found == []
    complaints = dashboards.grafana_errors(grafana_data.get("event"))
    assert len(complaints) == 1
    assert complaints[0].startswith("file:loadgate-k6: ")

    rel = testing.Relation(
        "grafana-dashboard", remote_app_name="grafana", remote_app_data=grafana_data
    )
    k6 = testing.Container("k6", can_connect=False)
    ctx.run(
        ctx.on.relation_changed(rel, remote_unit=0),
        testing.State(leader=True, relations={rel}, containers={k6}),
    )
    warnings = [log.message for log in ctx.juju_log if log.level == "WARNING"]
    assert f"Grafana (grafana) refused a dashboard: {complaints[0]}" in warnings
