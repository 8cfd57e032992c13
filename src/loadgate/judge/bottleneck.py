"""What bottleneck attribution reads and says (judge/attribution.py decides): the figures, the
thresholds, the claims and the verdict, as result.json records them."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from loadgate.contract import typed as f
from loadgate.contract.params import ACCEPTED_SHARE
from loadgate.measure.saturation import FULL_CLAIM_SHARE

GENERATOR = "generator"
COLLECTOR = "collector"
LOKI = "loki"
PROMETHEUS = "prometheus"  # the store of otlp-metrics (remote write)
TRACES = "traces"  # the traces backend of otlp-traces (locally a stand-in, not Tempo)
NONE = "none"
UNKNOWN = "unknown"
VERDICTS = (GENERATOR, COLLECTOR, LOKI, PROMETHEUS, TRACES, NONE, UNKNOWN)
COMPONENTS = (GENERATOR, COLLECTOR, LOKI, PROMETHEUS, TRACES)


@dataclass(frozen=True)
class BottleneckFigures:
    """The figures attribution reads; None when a run did not measure one."""

    offered_per_min: float | None = None  # log records per minute the spec offered
    accepted_per_min: float | None = None  # k6 log records accepted per minute
    duration_s: float | None = None  # the load's duration
    error_rate: float | None = None  # k6 failed requests / requests
    p99_ms: float | None = None  # k6 request duration p99
    failed_gates: tuple[str, ...] | None = None  # names of the gates that failed, () when none
    machine_cores: float | None = None
    k6_cpu_s: float | None = None  # k6 process CPU time (user + sys) over the run
    k6_cpu_limit: float | None = None  # cores k6 may use; None: machine_cores
    dropped_iterations: int | None = None
    vus_max: int | None = None  # VUs k6 had at most
    vus_limit: int | None = None  # the VU ceiling it was given (RunSpec.max_vus)
    queue_max: float | None = None  # sending queue high-water mark
    queue_capacity: float | None = None  # sending_queue queue_size
    collector_refused: int | None = None  # records the receiver refused
    collector_enqueue_failed: int | None = None  # records that did not fit in the queue
    collector_send_failed: int | None = None  # records the Loki exporter failed to send
    memory_limiter_refused: int | None = None  # data the memory limiter refused
    collector_cpu_max: float | None = None  # cores
    collector_cpu_mean: float | None = None  # cores
    collector_cpu_limit: float | None = None  # cores; None: machine_cores
    loki_received: int | None = None  # lines Loki's distributor received
    loki_discarded: int | None = None  # lines Loki discarded (rate limited, too old, ...)
    loki_push_p99_ms: float | None = None  # Loki push request latency p99, when measured
    other_traffic_per_min: float | None = None  # other records/min the collector carried
    # Answers that did not match what was pushed by then (logql-query; None elsewhere).
    wrong_answers: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            fl.name: getattr(self, fl.name)
            if fl.name in _INT_FIELDS
            else f.real(getattr(self, fl.name))
            for fl in fields(self)
            if fl.name != "failed_gates"
        }
        d["failed_gates"] = list(self.failed_gates) if self.failed_gates is not None else None
        if self.wrong_answers is None:  # only the scenarios that check answers have it
            del d["wrong_answers"]
        return d

    @classmethod
    def from_dict(cls, data: object, where: str = "figures") -> BottleneckFigures:
        return f.read(cls, data, where)


_INT_FIELDS = frozenset(
    {
        "dropped_iterations",
        "vus_max",
        "vus_limit",
        "collector_refused",
        "collector_enqueue_failed",
        "collector_send_failed",
        "memory_limiter_refused",
        "loki_received",
        "loki_discarded",
        "wrong_answers",
    }
)


@dataclass(frozen=True)
class Thresholds:
    """Where a figure becomes a sign of giving way (attribution's own, but the two shares
    other rules read too, defined with those: measure/saturation.py, contract/params.py)."""

    queue_full: float = FULL_CLAIM_SHARE  # queue high-water mark / capacity
    cpu_near: float = 0.90  # CPU / its limit, cores over cores
    shortfall: float = ACCEPTED_SHARE  # accepted / offered below this: the generator fell short
    loki_latency_ms: float = 1000.0  # Loki push p99 at or above this: Loki is slow


@dataclass(frozen=True)
class Claim:
    """One sign of giving way: the component, a sentence, the figure it rests on."""

    component: str = field(metadata=f.one_of(COMPONENTS))
    text: str
    figure: str  # a BottleneckFigures field, or a ratio of two ("queue_max/queue_capacity")
    value: float
    threshold: str  # e.g. ">= 950 (95 % of 1000)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "text": self.text,
            "figure": self.figure,
            "value": f.real(self.value),
            "threshold": self.threshold,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "claim") -> Claim:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class Attribution:
    """The verdict, the claims behind it (and signs elsewhere), missing figures, notes."""

    verdict: str = field(metadata=f.one_of(VERDICTS))
    claims: tuple[Claim, ...] = ()
    missing: tuple[str, ...] = ()  # figures whose absence made the answer unknown
    notes: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """One line: the verdict and the claims (or reasons) behind it."""
        if self.verdict in COMPONENTS:
            own = [c.text for c in self.claims if c.component == self.verdict]
            return f"{self.verdict}: {'; '.join(own)}"
        reasons = list(self.notes)
        if self.missing:
            reasons.insert(0, f"not measured: {', '.join(self.missing)}")
        return f"{self.verdict}: {'; '.join(reasons)}" if reasons else self.verdict

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "summary": self.summary,
            "claims": [c.to_dict() for c in self.claims],
            "missing": list(self.missing),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "attribution") -> Attribution:
        return f.read(cls, data, where)
