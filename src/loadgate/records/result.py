"""RunResult: everything a run measured and judged, written as results/<run_id>/result.json,
and read back from it (`read`, `read_all`): the one reader of result.json."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from loadgate.contract.gates import Gate
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge.ledger import Ledger
from loadgate.measure.cpu import CpuFigures
from loadgate.measure.other_traffic import OtherTraffic
from loadgate.measure.pipeline import PipelineFigures
from loadgate.measure.resources import ResourceFigures
from loadgate.measure.saturation import SaturationFigures
from loadgate.records import fields as f
from loadgate.records import files

_RESULT_FORMAT = "loadgate-result/1"
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class Delivery:
    """Records read back from Loki, after waiting for the collector's queue to drain."""

    records: int | None
    query: str
    drained: bool
    drain_seconds: float
    source: str = "Loki LogQL instant query"
    # The collector's own log records Loki holds from the counters' window (the charm's
    # internal-telemetry loop: job otelcol-internal), apart from the run's.
    own_stored: int | None = field(default=0, metadata=f.json_key("collector_own_records"))
    own_query: str = field(default="", metadata=f.json_key("collector_own_query"))
    other: OtherTraffic | None = field(default=None, metadata=f.json_key("other_traffic"))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "records": self.records,
            "query": self.query,
            "drained": self.drained,
            "drain_seconds": round(self.drain_seconds, 1),
            "source": self.source,
            "collector_own_records": self.own_stored,
            "collector_own_query": self.own_query,
        }
        if self.other is not None:  # records before issue 18 have none
            d["other_traffic"] = self.other.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: object, where: str = "delivered") -> Delivery:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class RunResult:
    """result.json. Its `labels` are the spec's, written beside it for other readers."""

    FORMAT: ClassVar[str] = _RESULT_FORMAT
    FILE: ClassVar[str] = RESULT_FILE

    run_id: str
    target: str
    spec: RunSpec
    started_at: float
    ended_at: float
    client: ClientFigures
    pipeline: PipelineFigures | None
    delivered: Delivery | None
    ledger: Ledger
    gates: list[Gate]
    verdict: str
    environment: dict[str, Any] = field(default_factory=dict[str, Any])
    notes: list[str] = field(default_factory=list[str])
    # Service -> its restarts during the run (Prometheus) and its supervisor's view (Pebble).
    restarts: dict[str, Any] = field(default_factory=dict[str, Any])
    # What could not be measured because the stack broke (Prometheus or Loki down): the run's
    # figures are incomplete and `loadgate run` exits 2.
    problems: list[str] = field(default_factory=list[str])
    # What the load generator used (k6's CPU seconds, the machine's cores, VUs), where the
    # target measures it; a figure it cannot measure is absent or None.
    generator: dict[str, Any] = field(default_factory=dict[str, Any])
    # Bottleneck attribution: {"figures": ..., "attribution": ...} (judge.run_figures).
    bottleneck: dict[str, Any] | None = None
    # The run's CPU from the kernel (a target that sees its processes; None elsewhere).
    cpu: CpuFigures | None = None
    # The load from k6's first request to its last (runner.target.LoadWindow.to_dict).
    load_window: dict[str, Any] | None = None
    # The pipeline's throughput over its steady window (measure.saturation).
    saturation: SaturationFigures | None = None
    # What the stack's resource limits and backend faults did (runs that had them).
    resources: ResourceFigures | None = None

    @property
    def complete(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": _RESULT_FORMAT,
            "run_id": self.run_id,
            "target": self.target,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "labels": dict(self.spec.labels),
            "spec": self.spec.to_dict(),
            "client": self.client.to_dict(),
            "pipeline": self.pipeline.to_dict() if self.pipeline else None,
            "delivered": self.delivered.to_dict() if self.delivered else None,
            "ledger": self.ledger.to_dict(),
            "gates": [g.to_dict() for g in self.gates],
            "verdict": self.verdict,
            "environment": self.environment,
            "restarts": self.restarts,
            "notes": list(self.notes),
            "problems": list(self.problems),
            "generator": dict(self.generator),
            "bottleneck": self.bottleneck,
            **self._optional(),
        }

    def _optional(self) -> dict[str, Any]:
        """Blocks older records do not have: written only when measured."""
        out: dict[str, Any] = {}
        if self.cpu is not None:
            out["cpu"] = asdict(self.cpu)
            if not self.cpu.probe_jobs and self.cpu.probe_ns_per_job is None:
                del out["cpu"]["probe_ns_per_job"], out["cpu"]["probe_jobs"]  # no probe ran
        if self.load_window is not None:
            out["load_window"] = dict(self.load_window)
        if self.saturation is not None:
            out["saturation"] = asdict(self.saturation)
        if self.resources is not None:  # only on runs whose stack had limits or faults
            out["resources"] = self.resources.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: object, where: str = "result") -> RunResult:
        """The result `to_dict` wrote, each field checked; RecordError names a bad one."""
        return f.read(cls, data, where)


def run_dir(results_root: Path, run_id: str) -> Path:
    return results_root / run_id


def write_atomic(path: Path, text: str) -> Path:
    """Write a record so a reader never sees half of it: a temporary file beside it, renamed
    over it (its folder is made when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


def write(result: RunResult, results_root: Path) -> Path:
    path = run_dir(results_root, result.run_id) / RESULT_FILE
    return write_atomic(path, json.dumps(result.to_dict(), indent=2, sort_keys=False) + "\n")


def read(path: Path) -> RunResult:
    """The result in a result.json; RecordError names the file and the field."""
    return files.read(RunResult, path)


def read_all(root: Path) -> files.Found[RunResult]:
    """Every result.json under `root` (at any depth), oldest first; one of another format is
    skipped with a note."""
    found = files.read_all(RunResult, root)
    ordered = sorted(found.records, key=lambda r: (r.started_at, r.run_id))
    return files.Found(tuple(ordered), found.skipped)
