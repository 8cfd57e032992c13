"""The signs of giving way that attribution weighs (judge/attribution.py), each a Claim citing
its figure and threshold, per component of the run's chain: the generator, the collector when
the load passes it, and the store downstream (Loki, Prometheus for metrics, the traces backend
for traces), named by the scenario's measures (measure/scenarios.py). A load that reads from
its store (logql-query) makes the store's query path part of the chain: its slow or wrong
answers are the store's."""

from __future__ import annotations

from dataclasses import dataclass, fields

from loadgate.judge.bottleneck import (
    COLLECTOR,
    GENERATOR,
    LOKI,
    PROMETHEUS,
    TRACES,
    BottleneckFigures,
    Claim,
    Thresholds,
)
from loadgate.measure import scenarios as scenario_measures

_BACKEND_NAMES = {LOKI: "Loki", PROMETHEUS: "Prometheus", TRACES: "the traces backend"}
# The collector's exporter towards each backend, and its queue, as the claims say them.
EXPORTERS = {LOKI: ("Loki exporter", "sending queue"), PROMETHEUS: ("remote-write exporter",
             "remote-write queue"), TRACES: ("traces exporter", "sending queue")}  # fmt: skip


@dataclass(frozen=True)
class Chain:
    """The components a run's load went through: the store downstream (`backend`), whether
    it passed the collector, and what the figures count. The default is otlp-logs'."""

    backend: str = LOKI
    collector: bool = True
    unit: str = "records"
    reads: bool = False  # the load reads from the store (its query path is on the chain)

    @property
    def backend_name(self) -> str:
        return _BACKEND_NAMES[self.backend]

    @property
    def exporter(self) -> str:
        return EXPORTERS[self.backend][0]

    @property
    def queue(self) -> str:
        return EXPORTERS[self.backend][1]

    def backend_clean(self) -> tuple[str, ...]:
        """The store's figures that must be measured and clean to blame the collector."""
        if self.backend in (PROMETHEUS, TRACES):
            return ("collector_send_failed",)
        return (
            ("loki_discarded", "collector_send_failed") if self.collector else ("loki_discarded",)
        )

    def collector_clean(self) -> tuple[str, ...]:
        return ("queue_max", "queue_capacity", "collector_refused") if self.collector else ()


def chain_of(scenario: str) -> Chain:
    """The chain of a scenario's runs (a scenario loadgate does not know: otlp-logs')."""
    measures = scenario_measures.BY_NAME.get(scenario)
    if measures is None:
        return Chain()
    kind = measures.scenario
    return Chain(measures.backend, measures.through_collector, kind.short, measures.reads)


def num(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def pct(ratio: float) -> str:
    return f"{ratio * 100:.0f} %"


def contradictions(fig: BottleneckFigures) -> list[str]:
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
        found.append(f"queue high-water mark {num(queue)} is above its capacity {num(capacity)}")
    offered, accepted = fig.offered_per_min, fig.accepted_per_min
    if offered is not None and accepted is not None and accepted > offered * 1.05:
        found.append(f"accepted {num(accepted)}/min, more than the {num(offered)}/min offered")
    if fig.vus_max is not None and fig.vus_limit is not None and fig.vus_max > fig.vus_limit:
        found.append(f"k6 had {fig.vus_max} VUs, above its ceiling of {fig.vus_limit}")
    return found


def backend_claims(fig: BottleneckFigures, th: Thresholds, chain: Chain) -> list[Claim]:
    """The store pushing back: Loki discarding lines or slow to push to, or the collector's
    exporter failing to send to it."""
    if chain.backend in (PROMETHEUS, TRACES):
        return _exporter_claims(fig, chain)
    claims = _loki_claims(fig, th, chain.collector)
    return claims + (_query_claims(fig, th) if chain.reads else [])


def _exporter_claims(fig: BottleneckFigures, chain: Chain) -> list[Claim]:
    """A backend the collector's exporter failed to send to (Prometheus, the traces one)."""
    if not fig.collector_send_failed:
        return []
    text = (
        f"the collector's {chain.exporter} failed to send {fig.collector_send_failed:,} "
        f"{chain.unit} ({chain.backend_name} refused them or was unreachable)"
    )
    failed = fig.collector_send_failed
    return [Claim(chain.backend, text, "collector_send_failed", failed, "> 0")]


def _query_claims(fig: BottleneckFigures, th: Thresholds) -> list[Claim]:
    """Loki's query path: answers that did not match what was pushed, or queries slower than
    their gate (k6 timed them at Loki itself: nothing else was on their way, unless k6 itself
    was short of CPU, when the latency is not Loki's to answer for)."""
    claims: list[Claim] = []
    if fig.wrong_answers:
        text = f"Loki answered {fig.wrong_answers:,} queries with counts off what was pushed"
        claims.append(Claim(LOKI, text, "wrong_answers", fig.wrong_answers, "> 0"))
    failed = fig.failed_gates or ()
    cores = k6_cores(fig)
    k6_busy = cores is not None and cores[0] >= th.cpu_near * cores[1]
    if "p99_ms" in failed and fig.p99_ms is not None and not k6_busy:
        text = f"Loki's queries took {num(fig.p99_ms)} ms at p99 (its query path)"
        claims.append(Claim(LOKI, text, "p99_ms", fig.p99_ms, "the run's p99_ms gate failed"))
    return claims


def _loki_claims(fig: BottleneckFigures, th: Thresholds, collector: bool = True) -> list[Claim]:
    claims: list[Claim] = []
    if fig.loki_discarded:
        share = (
            f" of {fig.loki_received:,} received ({pct(fig.loki_discarded / fig.loki_received)})"
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
    if collector and fig.collector_send_failed:
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
                f"Loki's push p99 was {num(fig.loki_push_p99_ms)} ms",
                "loki_push_p99_ms",
                fig.loki_push_p99_ms,
                f">= {num(th.loki_latency_ms)} ms",
            )
        )
    return claims


def _cpu_limit(limit: float | None, cores: float | None) -> float | None:
    value = limit if limit is not None else cores
    return value if value is not None and value > 0 else None


def _queue_full_claim(fig: BottleneckFigures, th: Thresholds, chain: Chain) -> Claim | None:
    """The collector's queue full (at least `queue_full` of its capacity), or None."""
    if fig.queue_max is None or not fig.queue_capacity:
        return None
    full = th.queue_full * fig.queue_capacity
    if not fig.queue_max >= full:
        return None
    return Claim(
        COLLECTOR,
        f"its {chain.queue} was full ({num(fig.queue_max)} of {num(fig.queue_capacity)})",
        "queue_max",
        fig.queue_max,
        f">= {num(full)} ({pct(th.queue_full)} of {num(fig.queue_capacity)})",
    )


def _collector_cpu_claim(fig: BottleneckFigures, th: Thresholds) -> Claim | None:
    """The collector's CPU near its limit (or the machine's cores), or None."""
    limit = _cpu_limit(fig.collector_cpu_limit, fig.machine_cores)
    if fig.collector_cpu_max is None or limit is None:
        return None
    near = th.cpu_near * limit
    if not fig.collector_cpu_max >= near:
        return None
    return Claim(
        COLLECTOR,
        f"its CPU reached {fig.collector_cpu_max:.2f} of {limit:g} cores",
        "collector_cpu_max",
        fig.collector_cpu_max,
        f">= {near:.2f} cores ({pct(th.cpu_near)} of its limit)",
    )


def collector_claims(fig: BottleneckFigures, th: Thresholds, chain: Chain) -> list[Claim]:
    if not chain.collector:
        return []
    claims: list[Claim] = []
    unit = chain.unit
    queue = _queue_full_claim(fig, th, chain)
    if queue is not None:
        claims.append(queue)
    if fig.collector_refused:
        claims.append(
            Claim(
                COLLECTOR,
                f"it refused {fig.collector_refused:,} {unit}",
                "collector_refused",
                fig.collector_refused,
                "> 0",
            )
        )
    if fig.collector_enqueue_failed:
        claims.append(
            Claim(
                COLLECTOR,
                f"{fig.collector_enqueue_failed:,} {unit} did not fit in its queue",
                "collector_enqueue_failed",
                fig.collector_enqueue_failed,
                "> 0",
            )
        )
    cpu = _collector_cpu_claim(fig, th)
    if cpu is not None:
        claims.append(cpu)
    if fig.memory_limiter_refused:
        claims.append(
            Claim(
                COLLECTOR,
                f"its memory limiter refused {fig.memory_limiter_refused:,} {unit}",
                "memory_limiter_refused",
                fig.memory_limiter_refused,
                "> 0",
            )
        )
    return claims


def _shortfall(fig: BottleneckFigures, th: Thresholds, unit: str) -> Claim | None:
    if fig.offered_per_min and fig.accepted_per_min is not None:
        floor = th.shortfall * fig.offered_per_min
        if fig.accepted_per_min < floor:
            return Claim(
                GENERATOR,
                f"{num(fig.accepted_per_min)} {unit}/min accepted of "
                f"{num(fig.offered_per_min)} offered",
                "accepted_per_min",
                fig.accepted_per_min,
                f"< {num(floor)} ({pct(th.shortfall)} of offered)",
            )
    return None


def generator_signs(fig: BottleneckFigures, th: Thresholds, unit: str) -> list[Claim]:
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
    shortfall = _shortfall(fig, th, unit)
    if shortfall is not None:
        claims.append(shortfall)
    return claims


def k6_cores(fig: BottleneckFigures) -> tuple[float, float] | None:
    """k6's mean CPU in cores and its limit, when both are known."""
    limit = _cpu_limit(fig.k6_cpu_limit, fig.machine_cores)
    if fig.k6_cpu_s is None or not fig.duration_s or limit is None:
        return None
    return fig.k6_cpu_s / fig.duration_s, limit


def missing_of(fig: BottleneckFigures, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in names if getattr(fig, name) is None)
