"""The grafana-dashboard endpoint: what the leader writes, when, and what it refuses to write.

The format is checked against Grafana's own requirer code in test_dashboard_consumer.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import CHARM_DIR, context
from ops import testing

import dashboards
from charm import K6Charm
from dashboards import (
    KEY,
    DashboardError,
    databag_value,
    decompress,
    grafana_errors,
    load_dashboards,
    parse_dashboard,
)

Ctx = testing.Context[K6Charm]
DASHBOARD_FILE = CHARM_DIR / "src" / "grafana_dashboards" / "loadgate-k6.json"


def grafana_relation(app: str = "grafana", **kwargs: Any) -> testing.Relation:
    return testing.Relation("grafana-dashboard", remote_app_name=app, **kwargs)


def state_with(*relations: testing.Relation, leader: bool = True) -> testing.State:
    """A unit whose k6 container is not up yet: the dashboards do not need it."""
    k6 = testing.Container("k6", can_connect=False)
    return testing.State(leader=leader, relations=set(relations), containers={k6})


def published(state: testing.State, relation: testing.Relation) -> dict[str, Any]:
    return json.loads(state.get_relation(relation.id).local_app_data[KEY])


def test_the_leader_publishes_the_dashboard_when_grafana_joins(ctx: Ctx) -> None:
    rel = grafana_relation()
    out = ctx.run(ctx.on.relation_joined(rel, remote_unit=0), state_with(rel, leader=True))
    data = published(out, rel)
    assert set(data) == {"templates", "uuid"}
    assert list(data["templates"]) == ["file:loadgate-k6"]
    template = data["templates"]["file:loadgate-k6"]
    assert template["charm"] == "loadgate-k6-k8s"
    assert template["inject_dropdowns"] is False
    assert template["juju_topology"] == {}
    # The content is the dashboard file, compressed.
    assert json.loads(decompress(template["content"])) == json.loads(DASHBOARD_FILE.read_text())


@pytest.mark.parametrize("event", ["leader_elected", "upgrade_charm", "relation_changed"])
def test_the_leader_publishes_on_every_trigger(ctx: Ctx, event: str) -> None:
    rel = grafana_relation()
    state = state_with(rel, leader=True)
    trigger = (
        ctx.on.relation_changed(rel, remote_unit=0)
        if event == "relation_changed"
        else getattr(ctx.on, event)()
    )
    out = ctx.run(trigger, state)
    assert published(out, rel)["templates"]["file:loadgate-k6"]["charm"] == "loadgate-k6-k8s"


def test_every_grafana_relation_gets_the_same_data(ctx: Ctx) -> None:
    one, two = grafana_relation(), grafana_relation("grafana-2")
    out = ctx.run(ctx.on.leader_elected(), state_with(one, two, leader=True))
    assert published(out, one) == published(out, two)


def test_a_non_leader_writes_nothing(ctx: Ctx) -> None:
    rel = grafana_relation()
    out = ctx.run(ctx.on.relation_joined(rel, remote_unit=0), state_with(rel, leader=False))
    assert KEY not in out.get_relation(rel.id).local_app_data


def test_unchanged_dashboards_keep_the_data_as_it_is(ctx: Ctx) -> None:
    """The uuid follows the templates: an unchanged dashboard causes no relation-changed."""
    rel = grafana_relation()
    first = ctx.run(ctx.on.relation_joined(rel, remote_unit=0), state_with(rel, leader=True))
    again = ctx.run(ctx.on.upgrade_charm(), first)
    before = first.get_relation(rel.id).local_app_data[KEY]
    assert again.get_relation(rel.id).local_app_data[KEY] == before


def test_a_changed_dashboard_gets_a_new_uuid(tmp_path: Path) -> None:
    original = parse_dashboard("loadgate-k6", DASHBOARD_FILE.read_text())
    changed = parse_dashboard(
        "loadgate-k6", json.dumps({**original.content, "version": original.content["version"] + 1})
    )
    a = json.loads(databag_value([original], "loadgate-k6-k8s"))
    b = json.loads(databag_value([changed], "loadgate-k6-k8s"))
    assert a["uuid"] != b["uuid"]
    assert a == json.loads(databag_value([original], "loadgate-k6-k8s"))


def test_without_its_dashboards_the_charm_writes_nothing_and_says_why(tmp_path: Path) -> None:
    ctx = context(tmp_path, dashboards=False)
    rel = grafana_relation()
    out = ctx.run(ctx.on.relation_joined(rel, remote_unit=0), state_with(rel, leader=True))
    assert KEY not in out.get_relation(rel.id).local_app_data
    errors = [log.message for log in ctx.juju_log if log.level == "ERROR"]
    assert any("grafana_dashboards is missing" in m and "repack" in m for m in errors), errors


def test_grafanas_complaint_is_logged(ctx: Ctx) -> None:
    event = {
        "errors": [{"dashboard_id": "file:loadgate-k6", "error": "Input format not supported"}]
    }
    rel = grafana_relation(remote_app_data={"event": json.dumps(event)})
    ctx.run(ctx.on.relation_changed(rel, remote_unit=0), state_with(rel, leader=True))
    warnings = [log.message for log in ctx.juju_log if log.level == "WARNING"]
    assert (
        "Grafana (grafana) refused a dashboard: file:loadgate-k6: Input format not supported"
        in (warnings)
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, []),
        ("", []),
        ('{"valid": true, "errors": []}', []),
        ('{"errors": [{"dashboard_id": "d", "error": "bad"}]}', ["d: bad"]),
        ("not json", ["unreadable event: 'not json'"]),
        ("[1]", []),
    ],
)
def test_grafana_errors(raw: str | None, expected: list[str]) -> None:
    assert grafana_errors(raw) == expected


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("{", "not JSON"),
        ("[]", "a dashboard is a JSON object, got list"),
        ('{"title": "t", "version": 1}', "uid must be 1-40 letters"),
        ('{"uid": "a/b", "title": "t", "version": 1}', "uid must be 1-40 letters"),
        ('{"uid": "' + "x" * 41 + '", "title": "t", "version": 1}', "uid must be 1-40 letters"),
        ('{"uid": "ok", "title": "t", "version": "1"}', "version must be an integer"),
        ('{"uid": "ok", "title": "", "version": 1}', "title must be a non-empty string"),
    ],
)
def test_a_dashboard_grafana_would_refuse_or_drop_is_refused(text: str, fault: str) -> None:
    with pytest.raises(DashboardError, match=fault):
        parse_dashboard("d", text)


def test_an_empty_or_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DashboardError, match="is missing"):
        load_dashboards(tmp_path / "none")
    with pytest.raises(DashboardError, match="holds no"):
        load_dashboards(tmp_path)


def test_the_dashboards_are_where_the_uv_plugin_packs() -> None:
    """charmcraft's uv plugin copies only src/ and lib/ of the charm into the packed charm."""
    assert dashboards.FOLDER.parts[0] == "src"
    assert [d.name for d in load_dashboards(CHARM_DIR / dashboards.FOLDER)] == ["loadgate-k6"]
