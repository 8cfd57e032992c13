"""The provider side of `grafana_dashboard`: the k6 charm's dashboards for Grafana in COS.

What Grafana's charm reads (its requirer code, charms.grafana_k8s.v0.grafana_dashboard, which
tests/unit/test_dashboard_consumer.py runs): the provider application's databag key `dashboards`,
a JSON object

    {"templates": {"file:<name>": {"charm": <charm name>,
                                   "content": <base64 of the LZMA-compressed dashboard JSON>,
                                   "juju_topology": {}, "inject_dropdowns": false}},
     "uuid": <changes whenever the templates change>}

Grafana decompresses each `content`, adds the datasource variables it lacks (`prometheusds`,
`lokids`) and stores it. With `inject_dropdowns: false` and no `juju_topology` it adds no Juju
topology dropdowns and injects no `juju_*=~"$juju_*"` matchers into the queries: this dashboard
reads series of three applications (k6's remote-written metrics carry no Juju labels at all), so
it filters by its own variables instead (see the dashboard file). Grafana answers in its own
application databag under `event` with `{"errors": [{"dashboard_id": …, "error": …}]}` when it
cannot decode a dashboard; the provider logs those.
"""

from __future__ import annotations

import base64
import json
import logging
import lzma
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ops

logger = logging.getLogger(__name__)

KEY = "dashboards"
EVENT_KEY = "event"
# Where the dashboard files are, under src/ because charmcraft's uv plugin packs only src/ and lib/.
FOLDER = Path("src", "grafana_dashboards")
# Grafana's rules for a dashboard uid: 1-40 characters of letters, digits, '-' and '_'.
UID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
# The uuid of the databag is derived from the templates: equal templates, equal data.
UUID_NAMESPACE = uuid.UUID("0b7e2a51-6c55-4f43-9d0e-5f2c7b1d9a10")


class DashboardError(ValueError):
    """A dashboard file that Grafana would not take; the message names the file and the fault."""


@dataclass(frozen=True)
class Dashboard:
    name: str  # the file's stem; the template key is `file:<name>`
    content: dict[str, Any]

    @property
    def text(self) -> str:
        return json.dumps(self.content, sort_keys=True, separators=(",", ":"))


def compress(text: str) -> str:
    """LZMA (xz container), then base64: the `content` encoding of grafana_dashboard."""
    return base64.b64encode(lzma.compress(text.encode())).decode()


def decompress(data: str) -> str:
    return lzma.decompress(base64.b64decode(data.encode())).decode()


def parse_dashboard(name: str, text: str) -> Dashboard:
    """A dashboard from its file's text; DashboardError when Grafana would refuse or drop it."""
    try:
        content = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DashboardError(f"{name}: not JSON: {exc}") from None
    if not isinstance(content, dict):
        raise DashboardError(f"{name}: a dashboard is a JSON object, got {type(content).__name__}")
    uid = content.get("uid")
    if not isinstance(uid, str) or not 1 <= len(uid) <= 40 or set(uid) - UID_CHARS:
        # Grafana's consumer drops a dashboard without a uid.
        raise DashboardError(f"{name}: uid must be 1-40 letters, digits, '-' or '_'; got {uid!r}")
    if not isinstance(content.get("version"), int):
        # The consumer keeps the highest version of dashboards that share a uid.
        raise DashboardError(f"{name}: version must be an integer")
    if not isinstance(content.get("title"), str) or not content["title"]:
        raise DashboardError(f"{name}: title must be a non-empty string")
    return Dashboard(name, content)


def load_dashboards(folder: Path) -> list[Dashboard]:
    """Every `*.json` dashboard of the folder, sorted by name; DashboardError for a bad one."""
    if not folder.is_dir():
        raise DashboardError(f"{folder} is missing")
    found = [parse_dashboard(p.stem, p.read_text()) for p in sorted(folder.glob("*.json"))]
    if not found:
        raise DashboardError(f"{folder} holds no *.json dashboard")
    return found


def templates(dashboards: list[Dashboard], charm_name: str) -> dict[str, dict[str, Any]]:
    """The `templates` object of the databag, one entry per dashboard."""
    return {
        f"file:{d.name}": {
            "charm": charm_name,
            "content": compress(d.text),
            "juju_topology": {},
            "inject_dropdowns": False,
        }
        for d in dashboards
    }


def databag_value(dashboards: list[Dashboard], charm_name: str) -> str:
    """The value of the `dashboards` key: deterministic for the same dashboards."""
    tmpl = templates(dashboards, charm_name)
    canonical = json.dumps(tmpl, sort_keys=True)
    return json.dumps({"templates": tmpl, "uuid": str(uuid.uuid5(UUID_NAMESPACE, canonical))})


def grafana_errors(raw: str | None) -> list[str]:
    """Grafana's complaints from its `event` databag value (empty when none or unreadable)."""
    if not raw:
        return []
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return [f"unreadable {EVENT_KEY}: {raw[:200]!r}"]
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list):
        return []
    found: list[str] = []
    for item in errors:
        if isinstance(item, dict):
            found.append(f"{item.get('dashboard_id', '?')}: {item.get('error', '?')}")
    return found


class DashboardProvider(ops.Object):
    """Publishes the charm's dashboards on every `grafana_dashboard` relation (leader only)."""

    def __init__(self, charm: ops.CharmBase, relation_name: str = "grafana-dashboard"):
        super().__init__(charm, relation_name)
        self._charm = charm
        self.relation_name = relation_name
        observe = charm.framework.observe
        events = charm.on[relation_name]
        observe(events.relation_joined, self._on_publish)
        observe(events.relation_changed, self._on_relation_changed)
        observe(charm.on.leader_elected, self._on_publish)
        observe(charm.on.upgrade_charm, self._on_publish)

    @property
    def folder(self) -> Path:
        return self._charm.charm_dir / FOLDER

    def _on_publish(self, _: ops.EventBase) -> None:
        self.publish()

    def _on_relation_changed(self, event: ops.RelationChangedEvent) -> None:
        self.publish()
        for error in grafana_errors(event.relation.data[event.app].get(EVENT_KEY)):
            logger.warning("Grafana (%s) refused a dashboard: %s", event.app.name, error)

    def publish(self) -> str | None:
        """Write the dashboards into every relation's app databag; the value, or None when this
        unit is not the leader or the dashboards cannot be loaded (logged: nothing is written)."""
        if not self._charm.unit.is_leader():
            return None
        relations = self._charm.model.relations[self.relation_name]
        if not relations:
            return None
        try:
            value = databag_value(load_dashboards(self.folder), self._charm.meta.name)
        except DashboardError as exc:
            logger.error("no dashboard for Grafana: %s (repack the charm)", exc)
            return None
        for relation in relations:
            data = relation.data[self._charm.app]
            if data.get(KEY) != value:
                data[KEY] = value
        return value
