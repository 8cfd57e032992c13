"""The lower layers of loadgate import only downward (issue 32): records/ stores and reads the
figures measure/ and judge/ define, measure/ knows nothing of the stack, charms/ nothing of
the stack that runs what they render, and the TLS clients need neither the stack nor
`cryptography`. A package's rank here is its floor: an import between two of them must go to
a lower one (same rank: neither imports the other). test_import_cycles.py finds loops; this
holds the order of these layers, loop or not."""

from __future__ import annotations

from pathlib import Path

from support.imports import imports

import loadgate

SRC = Path(loadgate.__file__).parent

RANKS = {
    # standard library and third parties only, or the contract shared with the k6 charm
    "contract": 0,
    "paths": 0,
    "procfs": 0,
    "tlsclient": 0,
    "yamlfile": 0,
    # reading the pipeline; the charms' own code
    "measure": 1,
    "charms": 1,
    # judging a run's figures
    "judge": 2,
    # the records of runs; the local stack
    "records": 3,
    "stack": 3,
}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "loadgate" else None


def _own_package(file: Path) -> str:
    rel = file.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def upward_imports() -> list[str]:
    found: list[str] = []
    for file in sorted(SRC.rglob("*.py")):
        own = _own_package(file)
        if own not in RANKS:
            continue
        for module, _ in imports(file, SRC.parent):
            other = _package(module)
            if other in RANKS and other != own and RANKS[other] >= RANKS[own]:
                found.append(f"{file.relative_to(SRC)} -> {module}")
    return found


def test_the_lower_layers_import_only_downward() -> None:
    assert upward_imports() == []


def test_every_lower_package_is_ranked_and_exists() -> None:
    present = {p.stem if p.is_file() else p.name for p in SRC.iterdir()}
    assert set(RANKS) <= present


def test_the_tls_clients_need_neither_the_stack_nor_cryptography() -> None:
    used = {module.split(".")[0] for module, _ in imports(SRC / "tlsclient.py", SRC.parent)}
    assert used == {"__future__", "ssl", "pathlib", "httpx"}
