"""Hand changes: the collector settings no otelcol charm option gives, made by hand on top of
what the charm rendered (after localizing), each one named and recorded.

What the charm has an option for stays a charm option (`queue_size`, `processors` (memory
limiter, batch), `cpu`, `memory`: presets as the bundle's overlays). What it has none for:

- `file-storage=off`: the sending queue in memory (the charm always puts it on `file_storage`);
- `num-consumers=N`: the sending queue's consumers (the collector's default is 10);
- `gomemlimit=400MiB`: the Go runtime's soft memory limit (`GOMEMLIMIT` in the collector
  service's environment);
- `gc-trace=on`: `GODEBUG=gctrace=1`, one line per garbage collection in the service's log,
  which a run counts (GC rate, heap sizes);
- `exporter=loki|standin|debug|nop`: where the logs go: Loki (the charm's exporter), a second
  collector standing in for Loki (`otlphttp` over TLS: stack/standin.py), or isolated
  (`debug` to the collector's stdout, or `nop`);
- `cpu-cost=N`: a known regression on demand, more collector CPU per log record: a `transform`
  processor first in every logs pipeline that takes OTLP, computing N SHA-256 digests of each
  record's body into the processor's cache (never exported: what reaches Loki is unchanged).
  The cost grows with N and with the body's size, not with time, so it lowers what the
  collector takes per CPU second in proportion, with none of a CPU quota's throttling;
- `cpu-steal=N`: a known regression on demand of the machine, not of the collector: a worker on
  the pipeline's CPUs, held by a CFS quota at N % of them, spins while each run loads
  (steal_service.py), so the collector and Loki run on N % less CPU at an unchanged cost per
  record. The collector's config is not touched.

Pure: `parse` and `from_mapping` check the values (errors name the key and what is allowed),
`apply` changes a localized config and the collector's Pebble services.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .localize import Change, component_type

_EXPORTERS = ("loki", "standin", "debug", "nop")
# The exporter a stand-in or an isolated collector sends its logs with, by `exporter` value.
_EXPORTER_IDS = {
    "standin": "otlphttp/loki-standin",
    "debug": "debug/isolated",
    "nop": "nop/isolated",
}
# The `exporter` label regex of the pipeline under test's exporter (measure.pipeline.Scope).
_SCOPE_EXPORTER = {"loki": "loki.*", "standin": "otlphttp.*", "debug": "debug.*", "nop": "nop.*"}
_MAX_CONSUMERS = 1000
_MAX_CPU_COST = 200
_MAX_CPU_STEAL = 90
_COST_PROCESSOR = "transform/loadgate-cpu-cost"
_ON_OFF = {"on": True, "off": False, "true": True, "false": False}
_GOMEMLIMIT_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_GOMEMLIMIT = re.compile(r"(?P<n>[0-9]+)(?P<unit>B|KiB|MiB|GiB|TiB)?", re.ASCII)

ALLOWED: dict[str, str] = {
    "file-storage": "on or off (off: the sending queue in memory)",
    "num-consumers": f"an integer from 1 to {_MAX_CONSUMERS}",
    "gomemlimit": "Go's form: a number of bytes with B, KiB, MiB, GiB or TiB, e.g. 400MiB",
    "gc-trace": "on or off (GODEBUG=gctrace=1: the run counts garbage collections)",
    "exporter": ", ".join(_EXPORTERS) + " (standin: a second collector; debug, nop: isolated)",
    "cpu-cost": f"an integer from 0 to {_MAX_CPU_COST}: SHA-256 digests of each log record's "
    "body, more collector CPU per record (0: none)",
    "cpu-steal": f"an integer from 0 to {_MAX_CPU_STEAL}: the percent of the pipeline's CPUs a "
    "worker takes while each run loads (0: none)",
}


class HandError(ValueError):
    """A hand change is malformed; the message names the key and what is allowed."""


@dataclass(frozen=True)
class HandChanges:
    """The hand changes asked for (the defaults change nothing)."""

    file_storage: bool = True
    num_consumers: int | None = None
    gomemlimit: str | None = None
    gc_trace: bool = False
    exporter: str = "loki"
    cpu_cost: int = 0
    cpu_steal: int = 0

    @property
    def empty(self) -> bool:
        return self == HandChanges()

    @property
    def scope_exporter(self) -> str:
        return _SCOPE_EXPORTER[self.exporter]

    def pairs(self) -> list[str]:
        """The changes as `--hand` takes them (only those that change something)."""
        out: list[str] = []
        if not self.file_storage:
            out.append("file-storage=off")
        if self.num_consumers is not None:
            out.append(f"num-consumers={self.num_consumers}")
        if self.gomemlimit is not None:
            out.append(f"gomemlimit={self.gomemlimit}")
        if self.gc_trace:
            out.append("gc-trace=on")
        if self.exporter != "loki":
            out.append(f"exporter={self.exporter}")
        if self.cpu_cost:
            out.append(f"cpu-cost={self.cpu_cost}")
        if self.cpu_steal:
            out.append(f"cpu-steal={self.cpu_steal}")
        return out

    def text(self) -> str:
        return " ".join(self.pairs()) or "none"

    def to_dict(self) -> dict[str, Any]:
        return {
            "file_storage": self.file_storage,
            "num_consumers": self.num_consumers,
            "gomemlimit": self.gomemlimit,
            "gc_trace": self.gc_trace,
            "exporter": self.exporter,
            "cpu_cost": self.cpu_cost,
            "cpu_steal": self.cpu_steal,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HandChanges:
        """What `to_dict` wrote (stack.json); bad values raise HandError."""
        return from_mapping({k.replace("_", "-"): v for k, v in data.items() if v is not None})


def gomemlimit_bytes(text: str) -> int:
    """Bytes in Go's GOMEMLIMIT form (`400MiB`, `1GiB`, `1048576`); HandError otherwise."""
    m = _GOMEMLIMIT.fullmatch(text.strip())
    if m is None or int(m["n"]) <= 0:
        raise HandError(f"gomemlimit: {ALLOWED['gomemlimit']}; got {text!r}")
    return int(m["n"]) * _GOMEMLIMIT_UNITS[m["unit"] or "B"]


def _value(key: str, raw: object) -> Any:
    """One key's value, checked (raw: text, or a YAML scalar)."""
    text = ("on" if raw else "off") if isinstance(raw, bool) else str(raw).strip()
    bad = HandError(f"{key}: must be {ALLOWED[key]}; got {text!r}")
    if key in ("file-storage", "gc-trace"):
        if text.lower() not in _ON_OFF:
            raise bad
        return _ON_OFF[text.lower()]
    if key == "num-consumers":
        if isinstance(raw, bool) or not text.isdigit() or not 1 <= int(text) <= _MAX_CONSUMERS:
            raise bad
        return int(text)
    if key in ("cpu-cost", "cpu-steal"):
        most = _MAX_CPU_COST if key == "cpu-cost" else _MAX_CPU_STEAL
        if isinstance(raw, bool) or not text.isdigit() or int(text) > most:
            raise bad
        return int(text)
    if key == "gomemlimit":
        gomemlimit_bytes(text)
        return text
    if text not in _EXPORTERS:
        raise bad
    return text


def from_mapping(data: Mapping[str, Any]) -> HandChanges:
    """Hand changes from `key: value` (keys as `--hand` spells them, `_` allowed for `-`)."""
    values: dict[str, Any] = {}
    for raw_key, raw in data.items():
        key = str(raw_key).replace("_", "-")
        if key not in ALLOWED:
            raise HandError(f"unknown key {raw_key!r}; allowed: {', '.join(ALLOWED)}")
        values[key.replace("-", "_")] = _value(key, raw)
    return HandChanges(**values)


def parse(pairs: Sequence[str], flag: str = "--hand") -> HandChanges:
    """`--hand K=V` values (repeatable; a key given twice is refused)."""
    seen: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not value.strip():
            raise HandError(f"{flag}: expected KEY=VALUE, got {pair!r}; keys: {', '.join(ALLOWED)}")
        if key in seen:
            raise HandError(f"{flag}: {key} given twice")
        seen[key] = value
    try:
        return from_mapping(seen)
    except HandError as exc:
        raise HandError(f"{flag}: {exc}") from None


@dataclass(frozen=True)
class StandinTarget:
    """Where the Loki stand-in listens, and how the collector verifies it."""

    url: str
    server_name: str
    ca_file: str


@dataclass(frozen=True)
class Applied:
    config: dict[str, Any]
    services: dict[str, Any]
    changes: list[Change] = field(default_factory=list[Change])


def _loki_exporters(cfg: Mapping[str, Any]) -> list[str]:
    return [name for name in cfg.get("exporters") or {} if component_type(name) == "loki"]


def apply(
    config: Mapping[str, Any],
    services: Mapping[str, Any],
    hand: HandChanges,
    standin: StandinTarget | None = None,
) -> Applied:
    """`config` (the localized collector config) and `services` (the collector's Pebble
    services) with the hand changes made, and each change. Raises HandError when the config
    has no Loki exporter to change, or a stand-in is asked for without its target."""
    cfg = copy.deepcopy(dict(config))
    svcs = copy.deepcopy(dict(services))
    changes: list[Change] = []
    lokis = _loki_exporters(cfg)
    touches_queue = not hand.file_storage or hand.num_consumers is not None
    if (touches_queue or hand.exporter != "loki") and not lokis:
        raise HandError("the rendered collector config has no Loki exporter to change")
    for name in lokis:
        _queue(cfg["exporters"][name], f"exporters.{name}", hand, changes)
    if hand.exporter != "loki":
        _swap_exporter(cfg, lokis, hand, standin, changes)
    if hand.cpu_cost:
        _cpu_cost(cfg, hand.cpu_cost, changes)
    if hand.cpu_steal:
        changes.append(Change("services.cpu-steal", None, f"{hand.cpu_steal} %",
                              f"hand: cpu-steal={hand.cpu_steal}, a worker takes that share of "
                              "the pipeline's CPUs while each run loads"))  # fmt: skip
    _environment(svcs, hand, changes)
    return Applied(cfg, svcs, changes)


def _queue(exporter: dict[str, Any], where: str, hand: HandChanges, changes: list[Change]) -> None:
    queue = exporter.setdefault("sending_queue", {})
    if not hand.file_storage and "storage" in queue:
        changes.append(Change(f"{where}.sending_queue.storage", queue.pop("storage"), None,
                              "hand: file-storage=off, the queue in memory"))  # fmt: skip
    if hand.num_consumers is not None:
        before = queue.get("num_consumers")
        queue["num_consumers"] = hand.num_consumers
        changes.append(Change(f"{where}.sending_queue.num_consumers", before,
                              hand.num_consumers, "hand: num-consumers"))  # fmt: skip


def _swap_exporter(
    cfg: dict[str, Any],
    lokis: list[str],
    hand: HandChanges,
    standin: StandinTarget | None,
    changes: list[Change],
) -> None:
    new_id = _EXPORTER_IDS[hand.exporter]
    first = cfg["exporters"][lokis[0]]
    if hand.exporter == "standin":
        if standin is None:
            raise HandError("exporter=standin: the stack has no Loki stand-in to send to")
        new: dict[str, Any] = {
            "endpoint": standin.url,
            "tls": {"ca_file": standin.ca_file, "server_name_override": standin.server_name},
            # The same queue and retries the charm gives its Loki exporter.
            "sending_queue": copy.deepcopy(first.get("sending_queue") or {}),
            "retry_on_failure": copy.deepcopy(first.get("retry_on_failure") or {}),
        }
        why = "hand: exporter=standin, a second collector stands in for Loki"
    elif hand.exporter == "debug":
        # Its own stdout, not the collector's logger: those logs would loop through the
        # collector's own-logs pipeline (the charm sets the same for its debug exporters).
        new = {"verbosity": "basic", "use_internal_logger": False}
        why = "hand: exporter=debug, an isolated collector (no backend, no sending queue)"
    else:
        new = {}
        why = "hand: exporter=nop, an isolated collector (no backend, no sending queue)"
    for name in lokis:
        changes.append(Change(f"exporters.{name}", "loki", None, why))
        del cfg["exporters"][name]
    cfg["exporters"][new_id] = new
    changes.append(Change(f"exporters.{new_id}", None, new_id, why))
    for pname, pipeline in (cfg.get("service", {}).get("pipelines") or {}).items():
        exporters = list(pipeline.get("exporters") or [])
        if any(e in lokis for e in exporters):
            kept = [e for e in exporters if e not in lokis]
            pipeline["exporters"] = [*kept, new_id]
            changes.append(Change(f"service.pipelines.{pname}.exporters", exporters,
                                  pipeline["exporters"], why))  # fmt: skip
    _loop_breaker(cfg, lokis, new_id, changes)


def _loop_breaker(
    cfg: dict[str, Any], lokis: list[str], new_id: str, changes: list[Change]
) -> None:
    """The charm's internal-telemetry loop breaker names its logs exporters: the new one's
    failures are dropped as the Loki exporter's were."""
    for name, proc in (cfg.get("processors") or {}).items():
        if not name.startswith("filter/internal-telemetry-loop-breaker"):
            continue
        records = (proc.get("logs") or {}).get("log_record") or []
        renamed = list(records)
        for old in lokis:
            renamed = [r.replace(f'"{old}"', f'"{new_id}"') for r in renamed]
        if renamed != records:
            proc["logs"]["log_record"] = renamed
            changes.append(Change(f"processors.{name}.logs.log_record", records, renamed,
                                  "hand: the loop breaker follows the exporter"))  # fmt: skip


def _cpu_cost(cfg: dict[str, Any], digests: int, changes: list[Change]) -> None:
    """A transform processor first in each logs pipeline with an OTLP receiver: `digests`
    SHA-256 digests of each record's body into the cache (records of another body type are
    passed on unchanged: `error_mode: ignore`)."""
    pipelines = cfg.get("service", {}).get("pipelines") or {}
    targets = [
        name for name, p in pipelines.items()
        if component_type(name) == "logs"
        and any(component_type(r) == "otlp" for r in p.get("receivers") or [])
    ]  # fmt: skip
    if not targets:
        raise HandError("cpu-cost: the rendered collector config has no logs pipeline taking OTLP")
    statement = 'set(log.cache["loadgate_cost"], SHA256(log.body))'
    cfg.setdefault("processors", {})[_COST_PROCESSOR] = {
        "error_mode": "ignore",
        "log_statements": [{"context": "log", "statements": [statement] * digests}],
    }
    why = f"hand: cpu-cost={digests}, {digests} SHA-256 digests of each record's body"
    changes.append(Change(f"processors.{_COST_PROCESSOR}", None, digests, why))
    for name in targets:
        before = list(pipelines[name].get("processors") or [])
        pipelines[name]["processors"] = [_COST_PROCESSOR, *before]
        changes.append(Change(f"service.pipelines.{name}.processors", before,
                              pipelines[name]["processors"], why))  # fmt: skip


def _environment(services: dict[str, Any], hand: HandChanges, changes: list[Change]) -> None:
    env: dict[str, str] = {}
    if hand.gomemlimit is not None:
        env["GOMEMLIMIT"] = hand.gomemlimit
    if hand.gc_trace:
        env["GODEBUG"] = "gctrace=1"
    if not env:
        return
    for name, svc in services.items():
        environment = svc.setdefault("environment", {})
        for key, value in env.items():
            before = environment.get(key)
            environment[key] = value
            changes.append(Change(f"services.{name}.environment.{key}", before, value,
                                  f"hand: {key}"))  # fmt: skip
