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
  `shortfall` of the offered rate) in a run that failed a gate or missed that share, while
  using `cpu_near` of its CPU share or more: with CPU to spare, k6 was waiting on slow
  responses, which is not the generator giving way;
- **none** when the run passed every gate, took what it was offered (accepted at least
  `shortfall` of the offered rate), nothing downstream shows a sign and the figures that would
  show one were measured: the pipeline kept up with the offered load, and its summary says so.
  k6 dropping a few iterations or using all its VUs in such a run is a note, not a bottleneck:
  only a run that fell short or failed explains what gave way;
- **unknown** otherwise, saying which figure was missing or which figures contradict each
  other (e.g. Loki discarded more lines than it received). Unknown is allowed; a wrong answer
  is not.

A CPU limit of None means the machine's cores (the local stack); a CPU share is used only when
k6's CPU seconds and the run's duration are known.

Those are otlp-logs' rules. A scenario's chain (judge/claims.py `Chain`, from its measures)
says what else holds: otlp-metrics' store is **prometheus** (named when the collector's
remote-write exporter failed to send points: Prometheus refused them or was unreachable; its
queue is the remote-write queue); otlp-traces' is **traces**, the traces backend (named when the
collector's traces exporter failed to send spans); loki-push's load does not pass the collector
(generator -> Loki: no collector claims, and Loki's figures alone decide whether Loki is
clean); logql-query's neither, and it reads from Loki: **loki** also when Loki answered
queries with counts off what was pushed (wrong_answers), or when the p99 gate on its queries
failed while k6 had CPU to spare (k6 timed them at Loki itself). The unit in the claims is the
scenario's (records, points, lines, spans, queries).
"""

from __future__ import annotations

from loadgate.judge.bottleneck import (
    COLLECTOR,
    COMPONENTS,
    GENERATOR,
    LOKI,
    NONE,
    PROMETHEUS,
    TRACES,
    UNKNOWN,
    VERDICTS,
    Attribution,
    BottleneckFigures,
    Claim,
    Thresholds,
)
from loadgate.judge.claims import (
    Chain,
    backend_claims,
    chain_of,
    collector_claims,
    contradictions,
    generator_signs,
    k6_cores,
    missing_of,
    num,
    pct,
)

__all__ = [  # what callers use of attribution, wherever it is defined
    "COLLECTOR", "COMPONENTS", "GENERATOR", "LOKI", "NONE", "PROMETHEUS", "TRACES", "UNKNOWN",
    "VERDICTS",
    "Attribution", "BottleneckFigures", "Chain", "Claim", "Thresholds", "attribute", "chain_of",
]  # fmt: skip

_LOKI_CLEAN = ("loki_discarded", "collector_send_failed")  # the logs chain's backend_clean()
_COLLECTOR_CLEAN = ("queue_max", "queue_capacity", "collector_refused")
_CLIENT_CLEAN = ("failed_gates", "offered_per_min", "accepted_per_min", "dropped_iterations")


def _context_notes(fig: BottleneckFigures, th: Thresholds, chain: Chain) -> list[str]:
    """What else a reader should know: the machine's cores spent, other traffic."""
    notes: list[str] = []
    k6_cpu = k6_cores(fig)
    if k6_cpu is not None and fig.collector_cpu_mean is not None and fig.machine_cores:
        busy = k6_cpu[0] + fig.collector_cpu_mean
        if busy >= th.cpu_near * fig.machine_cores:
            notes.append(
                f"k6 and the collector together used {busy:.2f} of the machine's "
                f"{fig.machine_cores:g} cores"
            )
    if fig.other_traffic_per_min:
        notes.append(
            f"the collector also carried {fig.other_traffic_per_min:,.0f} {chain.unit}/min of "
            "other traffic"
        )
    return notes


def _collector_verdict(fig: BottleneckFigures, th: Thresholds, chain: Chain,
                       claims: tuple[Claim, ...], notes: list[str]) -> Attribution:  # fmt: skip
    """The collector shows pressure and its store does not: the collector, when the store's
    side was measured."""
    missing = missing_of(fig, chain.backend_clean())
    if missing:
        notes.insert(
            0, f"the collector shows pressure, but {chain.backend_name}'s side was not measured"
        )
        return Attribution(UNKNOWN, claims, missing, tuple(notes))
    if chain.backend == LOKI and fig.loki_push_p99_ms is not None:
        notes.append(
            f"its Loki exporter waited on Loki's pushes (p99 {num(fig.loki_push_p99_ms)} ms, "
            f"below the {num(th.loki_latency_ms)} ms at which Loki is named): compare it "
            "with a passing step's before blaming the collector's own work"
        )
    return Attribution(COLLECTOR, claims, notes=tuple(notes))


def _generator_verdict(fig: BottleneckFigures, th: Thresholds, chain: Chain,
                       claims: tuple[Claim, ...], notes: list[str]) -> Attribution:  # fmt: skip
    """k6 fell short and nothing downstream shows pressure: the generator when it used its
    CPU, else unknown (it waited on slow responses)."""
    k6_cpu = k6_cores(fig)
    if k6_cpu is None:
        missing = missing_of(fig, ("k6_cpu_s", "duration_s")) or ("machine_cores",)
        notes.insert(0, "k6 fell short, but its CPU use is unknown")
        return Attribution(UNKNOWN, claims, missing, tuple(notes))
    used, limit = k6_cpu
    if used >= th.cpu_near * limit:
        cpu = Claim(
            GENERATOR,
            f"k6 used {used:.2f} of its {limit:g} cores",
            "k6_cpu_s/duration_s",
            round(used, 3),
            f">= {th.cpu_near * limit:.2f} cores ({pct(th.cpu_near)} of its share)",
        )
        return Attribution(GENERATOR, (*claims, cpu), notes=tuple(notes))
    p99 = f" (p99 {num(fig.p99_ms)} ms)" if fig.p99_ms is not None else ""
    which = f"collector or {chain.backend_name}" if chain.collector else chain.backend_name
    notes.insert(
        0,
        f"k6 fell short with CPU to spare ({used:.2f} of {limit:g} cores): it waited on "
        f"slow responses{p99}, and no {which} figure shows which gave way",
    )
    return Attribution(UNKNOWN, claims, notes=tuple(notes))


def attribute(
    fig: BottleneckFigures, th: Thresholds | None = None, chain: Chain | None = None
) -> Attribution:
    """What gave way first in a run with these figures, along its chain (default: otlp-logs',
    generator -> collector -> Loki); see the module's rules."""
    th, chain = th or Thresholds(), chain or Chain()
    contradicting = contradictions(fig)
    if contradicting:
        return Attribution(UNKNOWN, notes=tuple(f"contradictory: {c}" for c in contradicting))
    backend = backend_claims(fig, th, chain)
    collector = collector_claims(fig, th, chain)
    signs = generator_signs(fig, th, chain.unit)
    claims = tuple(backend + collector + signs)
    notes = _context_notes(fig, th, chain)
    if backend:
        if collector:
            notes.append(f"the collector's signs follow from {chain.backend_name}'s back-pressure")
        return Attribution(chain.backend, claims, notes=tuple(notes))
    if collector:
        return _collector_verdict(fig, th, chain, claims, notes)
    kept_up = _kept_up(fig, th)
    if signs and not kept_up:
        return _generator_verdict(fig, th, chain, claims, notes)
    if signs:  # a passing run that took what it was offered: k6's hiccups are notes
        notes.insert(0, _unheld_note(signs, th))
    missing = missing_of(fig, _CLIENT_CLEAN + chain.collector_clean() + chain.backend_clean())
    if missing:
        return Attribution(UNKNOWN, missing=missing, notes=tuple(notes))
    if fig.failed_gates:
        notes.insert(
            0,
            f"the run failed {', '.join(fig.failed_gates)}, but no figure shows which "
            "component gave way",
        )
        return Attribution(UNKNOWN, claims, notes=tuple(notes))
    notes.insert(0, _kept_up_note(fig, chain))
    return Attribution(NONE, notes=tuple(notes))


def _kept_up(fig: BottleneckFigures, th: Thresholds) -> bool:
    """Whether the run passed every gate and took what it was offered: accepted at least
    `shortfall` of the offered rate (both known)."""
    offered, accepted = fig.offered_per_min, fig.accepted_per_min
    return (
        fig.failed_gates == ()
        and bool(offered)
        and accepted is not None
        and accepted >= th.shortfall * (offered or 0)
    )


def _kept_up_note(fig: BottleneckFigures, chain: Chain) -> str:
    """What a run that gave way nowhere shows: the pipeline kept up with the offered load."""
    text = "the pipeline kept up with the offered load"
    offered, accepted = fig.offered_per_min, fig.accepted_per_min
    if offered and accepted is not None:
        text += f" ({accepted:,.0f} of {offered:,.0f} {chain.unit}/min accepted)"
    return text


def _unheld_note(signs: list[Claim], th: Thresholds) -> str:
    """k6's signs in a run that kept up anyway: what they were, and why they name nothing."""
    texts = "; ".join(c.text for c in signs)
    return (
        f"{texts}; a run may miss up to {pct(1 - th.shortfall)} of the offered load, so "
        "that names no bottleneck"
    )
