"""The k6 command for a RunSpec: an argv list and the process environment, never a shell string."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .scenarios import ALL
from .spec import ARRIVAL_EXECUTORS, RunSpec

SCENARIO_FILES = {s.name: s.script for s in ALL}
# k6 allocates a short-lived string per request: a higher GC target costs a little memory and
# saves about a fifth of k6's CPU (measured with `loadgate bench generator`).
K6_GOGC = "400"


@dataclass(frozen=True)
class Segment:
    """This instance's share of the load when several k6 processes split one run."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"segment index {self.index} out of range for {self.count} instances")

    @property
    def segment(self) -> str:
        return f"{_fraction(self.index, self.count)}:{_fraction(self.index + 1, self.count)}"

    @property
    def sequence(self) -> str:
        return ",".join(_fraction(i, self.count) for i in range(self.count + 1))

    @property
    def share(self) -> float:
        """This instance's fraction of the load (every segment is 1/count)."""
        return 1 / self.count


def _fraction(numerator: int, denominator: int) -> str:
    if numerator == 0:
        return "0"
    if numerator == denominator:
        return "1"
    return f"{numerator}/{denominator}"


@dataclass(frozen=True)
class K6Command:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict[str, str])


def _env_name(param: str) -> str:
    """The variable a scenario reads a parameter from: logs-per-request -> LOAD_LOGS_PER_REQUEST."""
    return "LOAD_" + param.upper().replace("-", "_")


def _script_env(
    spec: RunSpec,
    target: str,
    summary_path: str,
    instance: str = "k6",
    histogram: bool = False,
    hosts: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The LOAD_* variables the scenario reads (see k6/lib/config.js): the common ones and
    those of its own parameters (contract/scenarios.py). `hosts` resolves names to addresses
    in k6 (its `hosts` option), so a TLS target is verified for its name on another address."""
    env = {
        "LOAD_TARGET": target.rstrip("/"),
        "LOAD_EXECUTOR": spec.executor,
        "LOAD_VUS": str(spec.vus),
        "LOAD_DURATION": spec.duration,
        "LOAD_REQUESTS_PER_ITERATION": str(spec.requests_per_iteration),
        "LOAD_P99_MS": _num(spec.p99_ms),
        "LOAD_MAX_ERROR_RATE": _num(spec.max_error_rate),
        "LOAD_MIN_LOGS_PER_MINUTE": str(spec.effective_min_logs_per_minute),
        "LOAD_RUN_ID": spec.run_id,
        "LOAD_INSTANCE": instance,
        "LOAD_LABELS": ",".join(f"{k}={v}" for k, v in sorted(spec.labels.items())),
        "LOAD_SUMMARY": summary_path,
    }
    for param in spec.kind.params:
        env[_env_name(param)] = str(getattr(spec, param.replace("-", "_")))
    if histogram:
        env["LOAD_HISTOGRAM"] = "1"
    if hosts:
        env["LOAD_HOSTS"] = ",".join(f"{name}={addr}" for name, addr in sorted(hosts.items()))
    if spec.executor in ARRIVAL_EXECUTORS:
        env["LOAD_RATE"] = str(spec.rate)
        env["LOAD_PREALLOCATED_VUS"] = str(spec.preallocated_vus)
        env["LOAD_MAX_VUS"] = str(spec.max_vus)
    return env


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _remote_write_env(url: str, push_interval: str = "5s") -> dict[str, str]:
    """k6's own settings for its Prometheus remote-write output, with native histograms."""
    return {
        "K6_PROMETHEUS_RW_SERVER_URL": url,
        "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true",
        "K6_PROMETHEUS_RW_PUSH_INTERVAL": push_interval,
        "K6_PROMETHEUS_RW_STALE_MARKERS": "true",
    }


def build_command(
    spec: RunSpec,
    *,
    k6_bin: str | Path,
    scripts_dir: str | Path,
    target: str,
    summary_path: str | Path,
    instance: str = "k6",
    remote_write_url: str | None = None,
    ca_file: str | Path | None = None,
    segment: Segment | None = None,
    api_address: str | None = None,
    log_file: str | Path | None = None,
    hosts: Mapping[str, str] | None = None,
) -> K6Command:
    """argv and environment for `k6 run` of the spec's scenario.

    Script parameters travel as `-e KEY=VALUE` arguments; k6's own settings (remote write, CA
    trust through SSL_CERT_FILE, the Go GC target) as process environment. With a segment of
    several instances, the records-per-minute threshold is this instance's share of the run's,
    and request durations are also counted in histogram buckets so that the instances' p99 can
    be combined; `log_file` sends k6's own log lines (errors, warnings) to that file instead of
    stderr; `hosts` maps names to addresses inside k6 (with `ca_file`, a TLS target reached on
    loopback is verified for the name its certificate holds).
    """
    script = Path(scripts_dir) / SCENARIO_FILES[spec.scenario]
    argv = [str(k6_bin), "run", "--no-color", "--no-usage-report"]
    argv.append(f"--address={api_address}" if api_address else "--address=")
    if log_file:
        argv.append(f"--log-output=file={log_file}")
    split = segment is not None and segment.count > 1
    variables = _script_env(spec, target, str(summary_path), instance, histogram=split, hosts=hosts)
    if segment is not None and split:
        share = math.floor(spec.effective_min_logs_per_minute * segment.share)
        variables["LOAD_MIN_LOGS_PER_MINUTE"] = str(share)
    for key, value in variables.items():
        argv += ["-e", f"{key}={value}"]
    env: dict[str, str] = {"GOGC": K6_GOGC}
    if remote_write_url:
        argv += ["-o", "experimental-prometheus-rw"]
        env.update(_remote_write_env(remote_write_url))
    if segment is not None and segment.count > 1:
        argv += [
            "--execution-segment", segment.segment,
            "--execution-segment-sequence", segment.sequence,
        ]  # fmt: skip
    if ca_file:
        env["SSL_CERT_FILE"] = str(ca_file)
    argv.append(str(script))
    return K6Command(argv=argv, env=env)
