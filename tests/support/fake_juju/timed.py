"""The k6 charm and the log streams of a timed world (state["pipeline"], world.Timed): a run
lasts its duration, the collector takes what pipeline.py says it takes, and get-results
reports what k6 would have seen (requests refused while the queue was full are failed ones).

Only the standard library: the fake `juju` program imports this on every call.
"""

from __future__ import annotations

import math
from typing import Any

from .pipeline import Pipeline, Stream

K6_JOB = "loadgate-k6"
# The stream of a client that pushes to Loki directly (world.Timed.direct_per_min).
DIRECT = "direct"


def timeline(state: dict[str, Any], model: dict[str, Any]) -> Pipeline | None:
    """The pipeline of a model in a timed world (None: the world is not timed)."""
    p = state.get("pipeline")
    if not p:
        return None
    streams = [
        Stream(r["run_id"], r["start"], r["start"] + r["duration_s"], r["per_min"], r["lpr"])
        for r in model["runs"]
        if "start" in r
    ]
    if p["other_app"] in model["apps"] and p["other_per_min"]:
        streams.append(Stream(p["other_job"], p["origin"], math.inf, p["other_per_min"]))
    return Pipeline(streams, p["capacity_per_min"], p["queue_records"], p["origin"])


def streams(state: dict[str, Any], model_name: str, model: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's log streams in Loki: labels, the text every line holds, the pipeline stream
    they come from (DIRECT: none). The run's lines carry its marker (k6/lib/payload.js); the
    other application's are labelled as the collector's Loki exporter labels them (job from
    its service.name, its juju_* attributes)."""
    p = state["pipeline"]
    out = [
        {
            "labels": {"job": K6_JOB, "service_name": K6_JOB},
            "marker": f"run={r['run_id']} ",
            "stream": r["run_id"],
        }
        for r in model["runs"]
        if "start" in r
    ]
    if p["other_app"] in model["apps"]:
        labels = {
            "job": p["other_job"],
            "service_name": p["other_job"],
            "juju_application": p["other_app"],
            "juju_model": model_name,
        }
        out.append({"labels": labels, "marker": "", "stream": p["other_job"]})
    if p.get("direct_per_min"):
        labels = {"job": p["direct_job"], "service_name": p["direct_job"]}
        out.append({"labels": labels, "marker": "", "stream": DIRECT})
    return out


def direct_lines(state: dict[str, Any], lo: float, hi: float) -> int:
    """Lines the direct client pushed to Loki stamped in (lo, hi]."""
    p = state["pipeline"]

    def upto(t: float) -> int:
        return math.floor(max(0.0, t - p["origin"]) * p.get("direct_per_min", 0) / 60.0 + 1e-9)

    return max(0, upto(hi) - upto(lo))


def start(run: dict[str, Any], params: dict[str, Any], now: float) -> None:
    """A run in a timed world starts now and offers its rate for its duration."""
    run["start"] = now
    run["per_min"] = float(params.get("rate", 60000))


def results(line: Pipeline, run: dict[str, Any], leader: bool, now: float) -> dict[str, Any] | None:
    """get-results of a run in a timed world, once it has ended (None: still running)."""
    end = run["start"] + run["duration_s"]
    if now < end + 2.0:  # k6 stops, the charm reads its summary
        return None
    sent = line.offered(run["run_id"], end)
    accepted = line.accepted(run["run_id"], end)
    lpr, seconds = run["lpr"], run["duration_s"]
    requests, failed = sent // lpr, (sent - accepted) // lpr
    units = len(run["units"])
    if not leader:  # a unit's own segment
        requests, failed, accepted, sent = (x // units for x in (requests, failed, accepted, sent))
    client = {
        "requests": str(requests),
        "failed": str(failed),
        "error-rate": str(failed / requests if requests else 0.0),
        "p99-ms": "42.5",
        "records-sent": str(sent),
        "records-accepted": str(accepted),
        "records-per-minute": str(accepted / seconds * 60.0),
        "duration-s": str(seconds),
        "dropped-iterations": "0",
        "instances": str(units if leader else 1),
    }
    return {"client": client}
