"""A matrix file (`loadgate matrix FILE`), read and checked: experiments (stack settings) x
scenarios (run parameters) x rates. Pure: text in, a `MatrixFile` out, or a `MatrixFileError`
naming every bad field with its line and what is allowed (nothing is started).

```yaml
matrix: memory-limiter          # the id (default: the file's name); --matrix-id wins
description: three memory limiters under one memory limit
stack:                          # settings every experiment starts from
  limits: {memory: 400Mi}
experiments:
  - name: percent
    profile: memory-limiter-percent      # a bundle overlay (charm options), or hand-nop
    hand: {file_storage: off}            # what no charm option gives (stack/hand.py)
  - name: mib-file-storage
    profile: memory-limiter-mib
scenarios:
  - name: heavy                          # run parameters, as `loadgate run` takes them
    executor: constant-vus
    vus: 50
    duration: 60s
    logs_per_request: 50
rates: [60000, saturate, search]         # optional: else each scenario's own load
search: {precision: 0.1, budget: 120}    # the plan of `search` cells
drain_timeout: 90
```
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from loadgate.capacity.matrix.stack import STACK_KEYS, Bad, check, to_flags
from loadgate.capacity.matrix.yaml_lines import Located, YamlError, load, mapping_items
from loadgate.capacity.matrix.yaml_lines import Path as YPath
from loadgate.capacity.matrix.yaml_lines import name as path_name
from loadgate.capacity.search.rule import SearchPlan, plan_problems
from loadgate.contract.params import ARRIVAL_EXECUTORS, BY_NAME
from loadgate.contract.spec import RunSpec, SpecError
from loadgate.stack.choice import StackFlags

NAME_RULE = "1-24 characters of a-z, 0-9 and '-', starting with a letter or digit"
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,23}", re.ASCII)
SATURATE, SEARCH = "saturate", "search"
_RESERVED_LABELS = ("matrix", "experiment", "cell")
_MAX_DRAIN_TIMEOUT = 3600.0

_TOP_KEYS: dict[str, str] = {
    "matrix": f"the matrix's id ({NAME_RULE})",
    "description": "text",
    "stack": "stack settings every experiment starts from",
    "experiments": "a list of experiments, each a name and stack settings",
    "scenarios": "a list of scenarios, each a name and run parameters",
    "rates": "a list of records/min, saturate or search",
    "search": "the plan of search cells",
    "drain_timeout": f"seconds to wait for each run's queue to drain (0-{_MAX_DRAIN_TIMEOUT:g})",
}
_EXPERIMENT_KEYS: dict[str, str] = {"name": NAME_RULE, "description": "text", **STACK_KEYS}
_SEARCH_KEYS: dict[str, str] = {
    "start_rate": "start_rate", "min_rate": "min_rate", "max_rate": "max_rate",
    "precision": "precision", "growth": "growth", "probe": "probe_s", "hold": "hold_s",
    "max_steps": "max_steps", "budget": "budget_s",
}  # fmt: skip
_RUN_KEYS = tuple(k for k in BY_NAME if k not in ("run-id", "target"))


class MatrixFileError(ValueError):
    """A bad matrix file: every problem, each naming the field, its line and what is allowed."""

    def __init__(self, where: str, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__(f"{where}: invalid matrix file:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class Experiment:
    name: str
    flags: StackFlags  # the stack settings as the stack flags (no base port)
    description: str = ""
    line: int | None = None

    def settings(self) -> dict[str, Any]:
        """The settings that were given (for the record, the table and the definition hash)."""
        out: dict[str, Any] = {}
        for f in fields(StackFlags):
            value = getattr(self.flags, f.name)
            if value != f.default and f.name != "base_port":
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class Scenario:
    name: str
    spec: RunSpec  # checked; its run id and labels are set per cell
    description: str = ""
    line: int | None = None

    @property
    def load_text(self) -> str:
        """Its own load, for people: `60,000/min` or `50 VUs`."""
        if self.spec.executor in ARRIVAL_EXECUTORS:
            return f"{self.spec.rate:,}/min"
        return f"{self.spec.vus} VUs"


@dataclass(frozen=True)
class Load:
    """A column of the matrix: a rate, `saturate`, `search`, or (None) the scenario's own."""

    rate: int | None = None
    kind: str = "scenario"  # rate, saturate, search or scenario

    @property
    def key(self) -> str:
        return {"rate": f"r{self.rate}", SATURATE: "sat", SEARCH: "search"}.get(self.kind, "own")

    def text(self, scenario: Scenario) -> str:
        if self.kind == "rate":
            return f"{self.rate:,}/min"
        return self.kind if self.kind != "scenario" else scenario.load_text


@dataclass(frozen=True)
class MatrixFile:
    matrix_id: str
    experiments: tuple[Experiment, ...]
    scenarios: tuple[Scenario, ...]
    loads: tuple[Load, ...]
    search: SearchPlan = field(default_factory=SearchPlan)
    drain_timeout: float = 60.0
    description: str = ""
    source: str = ""
    digest: str = ""  # sha256 of the file's text


def definition_digest(*parts: object) -> str:
    """A stable hash of what a cell runs (JSON of its parts, keys sorted)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Problems:
    def __init__(self, doc: Located):
        self.doc = doc
        self.items: list[str] = []

    def add(self, path: YPath, why: str) -> None:
        line = self.doc.line(path)
        self.items.append(f"{path_name(path)}{f' (line {line})' if line else ''}: {why}")

    def unknown_keys(
        self, path: YPath, value: Mapping[str, Any], allowed: Mapping[str, str]
    ) -> None:
        for key in value:
            if key not in allowed:
                self.add((*path, key), f"unknown key; allowed: {', '.join(allowed)}")


def parse(text: str, source: str, base_dir: Path | None = None) -> MatrixFile:
    """The matrix in `text` (from `source`, whose folder `base_dir` resolves `@file` option
    values). Raises MatrixFileError naming every problem."""
    try:
        doc = load(text)
    except YamlError as exc:
        raise MatrixFileError(source, [str(exc)]) from None
    problems = _Problems(doc)
    data = doc.data
    if not isinstance(data, dict):
        raise MatrixFileError(source, ["the file must be a mapping with " + ", ".join(_TOP_KEYS)])
    top = dict(mapping_items(data))
    problems.unknown_keys((), top, _TOP_KEYS)
    default_id = re.sub(r"[^a-z0-9-]", "-", Path(source).stem.lower())[:24] or "matrix"
    matrix_id = _name(problems, ("matrix",), top.get("matrix", default_id))
    shared = _stack(problems, ("stack",), top.get("stack") or {}, base_dir, {})
    experiments = _experiments(problems, top.get("experiments"), shared, base_dir)
    scenarios = _scenarios(problems, top.get("scenarios"))
    loads = _loads(problems, top.get("rates"), scenarios)
    plan = _search(problems, top.get("search") or {})
    drain = _number(
        problems, ("drain_timeout",), top.get("drain_timeout", 60.0), _MAX_DRAIN_TIMEOUT
    )
    if problems.items:
        raise MatrixFileError(source, problems.items)
    return MatrixFile(
        matrix_id, tuple(experiments), tuple(scenarios), tuple(loads), plan, drain,
        str(top.get("description") or ""), source, hashlib.sha256(text.encode()).hexdigest(),
    )  # fmt: skip


def _name(problems: _Problems, path: YPath, value: object) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        problems.add(path, f"must be {NAME_RULE}; got {value!r}")
        return "x"
    return value


def _number(problems: _Problems, path: YPath, value: object, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= high:
        problems.add(path, f"must be a number of seconds from 0 to {high:g}; got {value!r}")
        return 60.0
    return float(value)


def _list(problems: _Problems, path: YPath, value: object, what: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        problems.add(path, f"must be a non-empty list of {what}")
        return []
    return list(value)  # pyright: ignore[reportUnknownArgumentType]


def _named_items(
    problems: _Problems, key: str, value: object, what: str, allowed: Mapping[str, str]
) -> list[tuple[YPath, str, dict[str, Any]]]:
    """The entries of a list of mappings with unique `name`s."""
    out: list[tuple[YPath, str, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(_list(problems, (key,), value, what)):
        path: YPath = (key, i)
        if not isinstance(item, dict):
            problems.add(path, f"must be a mapping with {', '.join(allowed)}")
            continue
        entry = dict(mapping_items(item))
        problems.unknown_keys(path, entry, allowed)
        entry_name = _name(problems, (*path, "name"), entry.get("name"))
        if entry_name in seen:
            problems.add((*path, "name"), f"{entry_name!r} is already {key}[{seen[entry_name]}]")
        seen[entry_name] = i
        out.append((path, entry_name, entry))
    return out


def _experiments(
    problems: _Problems, value: object, shared: dict[str, Any], base_dir: Path | None
) -> list[Experiment]:
    out: list[Experiment] = []
    for path, exp_name, entry in _named_items(
        problems, "experiments", value, "experiments", _EXPERIMENT_KEYS
    ):
        settings = {k: v for k, v in entry.items() if k in STACK_KEYS}
        merged = _stack(problems, path, settings, base_dir, shared)
        flags, flag_problems = to_flags(merged)
        for key, why in flag_problems:
            problems.add((*path, key), why)
        out.append(Experiment(exp_name, flags, str(entry.get("description") or ""),
                              problems.doc.line(path)))  # fmt: skip
    return out


def _stack(
    problems: _Problems,
    path: YPath,
    value: object,
    base_dir: Path | None,
    shared: Mapping[str, Any],
) -> dict[str, Any]:
    """Stack settings checked one by one, merged over `shared` (mappings key by key)."""
    if not isinstance(value, dict):
        problems.add(path, f"must be a mapping of {', '.join(STACK_KEYS)}")
        return dict(shared)
    given = dict(mapping_items(value))
    if path == ("stack",):
        problems.unknown_keys(path, given, STACK_KEYS)
    out = dict(shared)
    for key, raw in given.items():
        if key not in STACK_KEYS:
            continue
        checked = check(key, raw, base_dir)
        if isinstance(checked, Bad):
            problems.add((*path, key), f"{checked.why}; allowed: {STACK_KEYS[key]}")
            continue
        if isinstance(checked, dict) and isinstance(out.get(key), dict):
            checked = {**out[key], **checked}
        out[key] = checked
    return out


def _scenarios(problems: _Problems, value: object) -> list[Scenario]:
    allowed = {"name": NAME_RULE, "description": "text"}
    allowed.update({k.replace("-", "_"): BY_NAME[k].help for k in _RUN_KEYS})
    out: list[Scenario] = []
    for path, scn_name, entry in _named_items(problems, "scenarios", value, "scenarios", allowed):
        params = {
            k: v for k, v in entry.items() if k in allowed and k not in ("name", "description")
        }
        labels = params.get("labels")
        if isinstance(labels, dict):
            params["labels"] = ",".join(f"{k}={v}" for k, v in mapping_items(labels))
        try:
            # The run id is the cell's (plan): a fixed stand-in until then.
            spec = RunSpec.from_params({**params, "run-id": scn_name}, loopback_only=True)
        except SpecError as exc:
            for param, why in exc.problems:
                problems.add((*path, param.replace("-", "_")), why)
            continue
        taken = sorted(set(spec.labels) & set(_RESERVED_LABELS))
        if taken:
            problems.add((*path, "labels"), f"{', '.join(taken)} are set by the matrix")
        out.append(Scenario(scn_name, spec, str(entry.get("description") or ""),
                            problems.doc.line(path)))  # fmt: skip
    return out


def _loads(problems: _Problems, value: object, scenarios: list[Scenario]) -> list[Load]:
    if value is None:
        return [Load()]
    out: list[Load] = []
    for i, item in enumerate(_list(problems, ("rates",), value, "rates")):
        path: YPath = ("rates", i)
        if item in (SATURATE, SEARCH):
            load = Load(kind=str(item))
        elif isinstance(item, int) and not isinstance(item, bool) and item >= 1:
            load = Load(rate=item, kind="rate")
        else:
            problems.add(path, f"must be records per minute (a positive integer), {SATURATE} or "
                         f"{SEARCH}; got {item!r}")  # fmt: skip
            continue
        if load in out:
            problems.add(path, f"{item!r} is given twice")
        out.append(load)
        if load.kind == "rate":
            for scn in scenarios:
                if scn.spec.executor not in ARRIVAL_EXECUTORS:
                    problems.add(path, f"a rate needs an arrival-rate executor; scenario "
                                 f"{scn.name} runs {scn.spec.executor}")  # fmt: skip
    return out


def _search(problems: _Problems, value: object) -> SearchPlan:
    if not isinstance(value, dict):
        problems.add(("search",), f"must be a mapping of {', '.join(_SEARCH_KEYS)}")
        return SearchPlan()
    given = dict(mapping_items(value))
    problems.unknown_keys(("search",), given, _SEARCH_KEYS)
    plan = replace(
        SearchPlan(), **{_SEARCH_KEYS[k]: v for k, v in given.items() if k in _SEARCH_KEYS}
    )
    back = {v: k for k, v in _SEARCH_KEYS.items()}
    for name, why in plan_problems(plan):
        problems.add(("search", back.get(name, name)), why)
    return plan
