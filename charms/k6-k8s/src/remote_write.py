"""The requirer side of `prometheus_remote_write`: where k6 pushes its metrics.

Prometheus (the provider) writes one JSON object per unit into its unit databag under
`remote_write`, e.g. `{"url": "http://prometheus-0.prometheus-endpoints.cos.svc:9090/api/v1/write"}`.
k6 publishes nothing back: it forwards no alert rules (it is never scraped, so the generic
`absent(up)` rules of the Charmhub library would only raise false alarms).
"""

from __future__ import annotations

import json
import logging
from urllib.parse import urlsplit

import ops

logger = logging.getLogger(__name__)

KEY = "remote_write"


class RemoteWriteRequirer(ops.Object):
    def __init__(self, charm: ops.CharmBase, relation_name: str = "send-remote-write"):
        super().__init__(charm, relation_name)
        self._charm = charm
        self.relation_name = relation_name

    @property
    def urls(self) -> list[str]:
        """Every valid remote-write URL the related Prometheus units publish, sorted."""
        found: set[str] = set()
        for relation in self._charm.model.relations[self.relation_name]:
            for unit in relation.units:
                raw = relation.data[unit].get(KEY)
                if not raw:
                    continue
                url = _url_of(raw)
                if url is None:
                    logger.warning("ignoring bad %s from %s: %r", KEY, unit.name, raw)
                else:
                    found.add(url)
        return sorted(found)

    @property
    def url(self) -> str | None:
        """The URL k6 writes to (k6 takes one): the first of `urls`."""
        urls = self.urls
        return urls[0] if urls else None


def _url_of(raw: str) -> str | None:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    url = data.get("url") if isinstance(data, dict) else None
    if not isinstance(url, str):
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return url
