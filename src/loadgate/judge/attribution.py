"""Bottleneck attribution: what gave way first in a run, each claim citing its figure.

The pipeline is a chain, generator (k6) -> collector (receiver, sending queue, Loki exporter)
-> Loki, and pressure travels upstream: Loki refusing pushes makes the exporter retry, the
queue fill and the receiver refuse. So the verdict names the component furthest downstream that
shows a sign of giving way, and a sign upstream of it counts as its consequence:

- **loki** when Loki discarded lines (rate limited or rejected), the collector's exporter failed
  to send records (push errors), or Loki's push latency (when measured) is at or above
  `Thresholds.loki_latency_ms`;
- **collector** when its sending queue reached `queue_full` of its capacity, it refused
  records, records failed to enter the queue, its CPU reached `cpu_near` of its limit, or its
  memory limiter refused data; and only when Loki's figures (discarded lines and failed sends)
  were measured and clean: a full queue with Loki's side unknown could be Loki's back-pressure;
- **generator** when k6 fell short (dropped iterations, VUs exhausted, or accepted below
  `shortfall` of the offered rate) while using `cpu_near` of its CPU share or more: with CPU to
  spare, k6 was waiting on slow responses, which is not the generator giving way;
- **none** when nothing shows a sign and the figures that would show one were measured;
- **unknown** otherwise, saying which figure was missing or which figures contradict each
  other (e.g. Loki discarded more lines than it received). Unknown is allowed; a wrong answer
  is not.

A CPU limit of None means the machine's cores (the local stack); a CPU share is used only when
k6's CPU seconds and the run's duration are known.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from loadgate.records import fields as f

GENERATOR = "generator"
COLLECTOR = "collector"
LOKI = "loki"
NONE = "none"
UNKNOWN = "unknown"
VERDICTS = (GENERATOR, COLLECTOR, LOKI, NONE, UNKNOWN)
COMPONENTS = (GENERATOR, COLLECTOR, LOKI)


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

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            fl.name: getattr(self, fl.name)
            if fl.name in _INT_FIELDS
            else f.real(getattr(self, fl.name))
            for fl in fields(self)
            if fl.name != "failed_gates"
        }
        d["failed_gates"] = list(self.failed_gates) if self.failed_gates is not None else None
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
    }
)


@dataclass(frozen=True)
class Thresholds:
    queue_full: float = 0.95  # queue high-water mark / capacity
    cpu_near: float = 0.90  # CPU / its limit
    shortfall: float = 0.95  # accepted / offered below this: the generator fell short
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


def _num(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def _pct(ratio: float) -> str:
    return f"{ratio * 100:.0f} %"


def _contradictions(fig: BottleneckFigures) -> list[str]:
    """Figures that cannot all be true: an attribution resting on them could be wrong."""
    found: list[str] = []
    for fl in fields(fig):
        value = getattr(fig, fl.name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            found.append(f"{fl.name} is negative ({value})")
    discarded, received = fig.loki_discarded, fig.loki_received
    if discarded is not None and received is not None and discarded > received:
        found.append(f"Loki discarded more lines ({discarded:,}) than it received ({received:,})")
    queue, capacity = fig.queue_max, fig.queue_capacity
    if queue is not None and capacity is not None and (capacity <= 0 or queue > capacity):
        found.append(f"queue high-water mark {_num(queue)} is above its capacity {_num(capacity)}")
    offered, accepted = fig.offered_per_min, fig.accepted_per_min
    if offered is not None and accepted is not None and accepted > offered * 1.05:
        found.append(f"accepted {_num(accepted)}/min, more than the {_num(offered)}/min offered")
    if fig.vus_max is not None and fig.vus_limit is not None and fig.vus_max > fig.vus_limit:
        found.append(f"k6 had {fig.vus_max} VUs, above its ceiling of {fig.vus_limit}")
    return found


def _loki_claims(fig: BottleneckFigures, th: Thresholds) -> list[Claim]:
    claims: list[Claim] = []
    if fig.loki_discarded:
        share = (
            f" of {fig.loki_received:,} received ({_pct(fig.loki_discarded / fig.loki_received)})"
            if fig.loki_received
            else ""
        )
        claims.append(
            Claim(
                LOKI,
                f"Loki discarded {fig.loki_discarded:,} lines{share} (rate limited or rejected)",
                "loki_discarded",
                fig.loki_discarded,
                "> 0",
            )
        )
    if fig.collector_send_failed:
        claims.append(
            Claim(
                LOKI,
                f"the collector's Loki exporter failed to send {fig.collector_send_failed:,} "
                "records (push errors)",
                "collector_send_failed",
                fig.collector_send_failed,
                "> 0",
            )
        )
    if fig.loki_push_p99_ms is not None and fig.loki_push_p99_ms >= th.loki_latency_ms:
        claims.append(
            Claim(
                LOKI,
                f"Loki's push p99 was {_num(fig.loki_push_p99_ms)} ms",
                "loki_push_p99_ms",
                fig.loki_push_p99_ms,
                f">= {_num(th.loki_latency_ms)} ms",
            )
        )
    return claims


def _cpu_limit(limit: float | None, cores: float | None) -> float | None:
    value = limit if limit is not None else cores
    return value if value is not None and value > 0 else None


def _collector_claims(fig: BottleneckFigures, th: Thresholds) -> list[Claim]:
    claims: list[Claim] = []
    if fig.queue_max is not None and fig.queue_capacity:
        full = th.queue_full * fig.queue_capacity
        if fig.queue_max >= full:
            claims.append(
                Claim(
                    COLLECTOR,
                    f"its sending queue was full ({_num(fig.queue_max)} of "
                    f"{_num(fig.queue_capacity)})",
                    "queue_max",
                    fig.queue_max,
                    f">= {_num(full)} ({_pct(th.queue_full)} of {_num(fig.queue_capacity)})",
                )
            )
    if fig.collector_refused:
        claims.append(
            Claim(
                COLLECTOR,
                f"it refused {fig.collector_refused:,} records",
                "collector_refused",
                fig.collector_refused,
                "> 0",
            )
        )
    if fig.collector_enqueue_failed:
        claims.append(
            Claim(
                COLLECTOR,
                f"{fig.collector_enqueue_failed:,} records did not fit in its queue",
                "collector_enqueue_failed",
                fig.collector_enqueue_failed,
                "> 0",
            )
        )
    limit = _cpu_limit(fig.collector_cpu_limit, fig.machine_cores)
    if fig.collector_cpu_max is not None and limit is not None:
        near = th.cpu_near * limit
        if fig.collector_cpu_max >= near:
            claims.append(
                Claim(
                    COLLECTOR,
                    f"its CPU reached {fig.collector_cpu_max:.2f} of {limit:g} cores",
                    "collector_cpu_max",
                    fig.collector_cpu_max,
                    f">= {near:.2f} cores ({_pct(th.cpu_near)} of its limit)",
                )
            )
    if fig.memory_limiter_refused:
        claims.append(
            Claim(
                COLLECTOR,
                f"its memory limiter refused {fig.memory_limiter_refused:,} records",
                "memory_limiter_refused",
                fig.memory_limiter_refused,
                "> 0",
            )
        )
    return claims


def _shortfall(fig: BottleneckFigures, th: Thresholds) -> Claim | None:
    if fig.offered_per_min and fig.accepted_per_min is not None:
        floor = th.shortfall * fig.offered_per_min
        if fig.accepted_per_min < floor:
            return Claim(
                GENERATOR,
                f"{_num(fig.accepted_per_min)} records/min accepted of "
                f"{_num(fig.offered_per_min)} offered",
                "accepted_per_min",
                fig.accepted_per_min,
                f"< {_num(floor)} ({_pct(th.shortfall)} of offered)",
            )
    return None


def _generator_signs(fig: BottleneckFigures, th: Thresholds) -> list[Claim]:
    """k6 falling short: dropped iterations, VUs exhausted, accepted below the offered rate."""
    claims: list[Claim] = []
    if fig.dropped_iterations:
        claims.append(
            Claim(
                GENERATOR,
                f"k6 dropped {fig.dropped_iterations:,} iterations",
                "dropped_iterations",
                fig.dropped_iterations,
                "> 0",
            )
        )
    if fig.vus_max is not None and fig.vus_limit is not None and fig.vus_max >= fig.vus_limit:
        claims.append(
            Claim(
                GENERATOR,
                f"k6 used all {fig.vus_limit} VUs it may have",
                "vus_max",
                fig.vus_max,
                f">= {fig.vus_limit} (vus_limit)",
            )
        )
    shortfall = _shortfall(fig, th)
    if shortfall is not None:
        claims.append(shortfall)
    return claims


def _k6_cpu(fig: BottleneckFigures) -> tuple[float, float] | None:
    """k6's mean CPU in cores and its limit, when both are known."""
    limit = _cpu_limit(fig.k6_cpu_limit, fig.machine_cores)
    if fig.k6_cpu_s is None or not fig.duration_s or limit is None:
        return None
    return fig.k6_cpu_s / fig.duration_s, limit


def _missing(fig: BottleneckFigures, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in names if getattr(fig, name) is None)


LOKI_CLEAN = ("loki_discarded", "collector_send_failed")
COLLECTOR_CLEAN = ("queue_max", "queue_capacity", "collector_refused")
CLIENT_CLEAN = ("failed_gates", "offered_per_min", "accepted_per_min", "dropped_iterations")


def attribute(fig: BottleneckFigures, th: Thresholds | None = None) -> Attribution:
    """What gave way first in a run with these figures; see the module's rules."""
    th = th or Thresholds()
    contradictions = _contradictions(fig)
    if contradictions:
        return Attribution(UNKNOWN, notes=tuple(f"contradictory: {c}" for c in contradictions))
    loki = _loki_claims(fig, th)
    collector = _collector_claims(fig, th)
    signs = _generator_signs(fig, th)
    k6_cpu = _k6_cpu(fig)
    claims = tuple(loki + collector + signs)
    notes: list[str] = []
    if k6_cpu is not None and fig.collector_cpu_mean is not None and fig.machine_cores:
        busy = k6_cpu[0] + fig.collector_cpu_mean
        if busy >= th.cpu_near * fig.machine_cores:
            notes.append(
                f"k6 and the collector together used {busy:.2f} of the machine's "
                f"{fig.machine_cores:g} cores"
            )
    if fig.other_traffic_per_min:
        notes.append(
            f"the collector also carried {fig.other_traffic_per_min:,.0f} records/min of other "
            "traffic"
        )

    if loki:
        if collector:
            notes.append("the collector's signs follow from Loki's back-pressure")
        return Attribution(LOKI, claims, notes=tuple(notes))
    if collector:
        missing = _missing(fig, LOKI_CLEAN)
        if missing:
            notes.insert(0, "the collector shows pressure, but Loki's side was not measured")
            return Attribution(UNKNOWN, claims, missing, tuple(notes))
        if fig.loki_push_p99_ms is not None:
            notes.append(
                f"its Loki exporter waited on Loki's pushes (p99 {_num(fig.loki_push_p99_ms)} ms, "
                f"below the {_num(th.loki_latency_ms)} ms at which Loki is named): compare it "
                "with a passing step's before blaming the collector's own work"
            )
        return Attribution(COLLECTOR, claims, notes=tuple(notes))
    if signs:
        if k6_cpu is None:
            missing = _missing(fig, ("k6_cpu_s", "duration_s")) or ("machine_cores",)
            notes.insert(0, "k6 fell short, but its CPU use is unknown")
            return Attribution(UNKNOWN, claims, missing, tuple(notes))
        used, limit = k6_cpu
        if used >= th.cpu_near * limit:
            cpu = Claim(
                GENERATOR,
                f"k6 used {used:.2f} of its {limit:g} cores",
                "k6_cpu_s/duration_s",
                round(used, 3),
                f">= {th.cpu_near * limit:.2f} cores ({_pct(th.cpu_near)} of its share)",
            )
            return Attribution(GENERATOR, (*claims, cpu), notes=tuple(notes))
        p99 = f" (p99 {_num(fig.p99_ms)} ms)" if fig.p99_ms is not None else ""
        notes.insert(
            0,
            f"k6 fell short with CPU to spare ({used:.2f} of {limit:g} cores): it waited on "
            f"slow responses{p99}, and no collector or Loki figure shows which gave way",
        )
        return Attribution(UNKNOWN, claims, notes=tuple(notes))
    missing = _missing(fig, CLIENT_CLEAN + COLLECTOR_CLEAN + LOKI_CLEAN)
    if missing:
        return Attribution(UNKNOWN, claims, missing, tuple(notes))
    if fig.failed_gates:
        notes.insert(
            0,
            f"the run failed {', '.join(fig.failed_gates)}, but no figure shows which "
            "component gave way",
        )
        return Attribution(UNKNOWN, claims, notes=tuple(notes))
    return Attribution(NONE, claims, notes=tuple(notes))
