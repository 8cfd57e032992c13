"""The peer relation `k6-peers` read and written: the leader's run request and the unit reports."""

from __future__ import annotations

import ops

from peers import RunRequest, UnitReport

PEER_RELATION = "k6-peers"


class Cluster:
    def __init__(self, model: ops.Model, relation_name: str = PEER_RELATION):
        self.model = model
        self.relation_name = relation_name

    @property
    def relation(self) -> ops.Relation | None:
        return self.model.get_relation(self.relation_name)

    @property
    def unit_names(self) -> list[str]:
        """This unit and its peers (unordered)."""
        names = [self.model.unit.name]
        if self.relation is not None:
            names += [u.name for u in self.relation.units]
        return names

    def request(self) -> RunRequest | None:
        rel = self.relation
        return RunRequest.from_databag(rel.data[self.model.app]) if rel is not None else None

    def set_request(self, request: RunRequest) -> None:
        """Leader only: publish the run request to every unit."""
        rel = self.relation
        if rel is not None:
            rel.data[self.model.app].update(request.to_databag())

    def publish(self, report: UnitReport) -> None:
        rel = self.relation
        if rel is not None:
            rel.data[self.model.unit].update(report.to_databag())

    def own_report(self) -> UnitReport | None:
        """What this unit last published (kept by Juju across pod restarts)."""
        rel = self.relation
        return UnitReport.from_databag(rel.data[self.model.unit]) if rel is not None else None

    def reports(self) -> dict[str, UnitReport]:
        """The peers' reports (not this unit's own), by unit name."""
        rel = self.relation
        if rel is None:
            return {}
        found: dict[str, UnitReport] = {}
        for unit in rel.units:
            report = UnitReport.from_databag(rel.data[unit])
            if report is not None:
                found[unit.name] = report
        return found
