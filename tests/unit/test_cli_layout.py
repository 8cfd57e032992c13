"""The command line is a package of its own (loadgate.cli): domain code never imports it, its
command modules never import the package back (no circle), and each command is one module."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType
from typing import cast

from support.imports import imports

import loadgate
from loadgate import cli

SRC = Path(loadgate.__file__).parent
CLI = SRC / "cli"
# What commands share: the consoles and exit codes, the shared flags, the seams.
SHARED = {"common", "flags", "seams"}
# A command's terminal output may live beside it: `<command>_output.py`; so may what it does
# on a Juju model: `<command>_juju.py`, and the reading of its input: `<command>_input.py`.
OUTPUT_MODULES = {f.stem for f in CLI.glob("*_output.py")}
JUJU_MODULES = {f.stem for f in CLI.glob("*_juju.py")}
INPUT_MODULES = {f.stem for f in CLI.glob("*_input.py")}
COMMAND_MODULES = {f.stem for f in CLI.glob("*.py")} - {
    "__init__",
    "__main__",
    *SHARED,
    *OUTPUT_MODULES,
    *JUJU_MODULES,
    *INPUT_MODULES,
}


def test_each_output_module_belongs_to_a_command() -> None:
    assert OUTPUT_MODULES  # compare_output, search_output
    assert {m.removesuffix("_output") for m in OUTPUT_MODULES} <= COMMAND_MODULES
    assert {m.removesuffix("_juju") for m in JUJU_MODULES} <= COMMAND_MODULES  # search_juju
    assert {m.removesuffix("_input") for m in INPUT_MODULES} <= COMMAND_MODULES  # compare_input


def is_cli(module: str) -> bool:
    return module == "loadgate.cli" or module.startswith("loadgate.cli.")


def cli_imports(file: Path, src: Path = SRC) -> set[str]:
    """What of loadgate.cli `file` imports (a module, or a name of one), lazy imports too."""
    found: set[str] = set()
    for module, names in imports(file, src.parent):
        found |= {m for m in (module, *(f"{module}.{n}" for n in names)) if is_cli(m)}
    return found


def test_the_scanner_sees_a_lazy_relative_import_of_the_cli(tmp_path: Path) -> None:
    """The old circle, as a domain module had it: `from ..cli import console` in a function."""
    fake = tmp_path / "loadgate" / "targets" / "fake.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "import json\n"
        "from ..runner import RunError\n"
        "def f() -> None:\n"
        "    from ..cli import console\n"
        "    from .. import cli\n"
    )
    assert cli_imports(fake, tmp_path / "loadgate") == {"loadgate.cli", "loadgate.cli.console"}
    assert ("loadgate.runner", ("RunError",)) in set(imports(fake, tmp_path))


# The `loadgate` script: it imports the command line when run, to name a missing extra.
SCRIPT = SRC / "entry.py"


def test_no_module_outside_the_cli_package_imports_it() -> None:
    found = {
        str(file.relative_to(SRC)): cli_imports(file)
        for file in SRC.rglob("*.py")
        if CLI not in file.parents and file != SCRIPT
    }
    assert len(found) > 50
    assert {f: sorted(m) for f, m in found.items() if m} == {}
    assert cli_imports(SCRIPT) == {"loadgate.cli", "loadgate.cli.main"}  # main, nothing else


def test_command_modules_do_not_import_the_package_back() -> None:
    """Only `__init__` and `__main__` take names from `loadgate.cli` itself; a command imports
    `common` and sibling command modules, so no import needs the package half-made."""
    for file in CLI.glob("*.py"):
        if file.stem in ("__init__", "__main__"):
            continue
        for module, names in imports(file, SRC.parent):
            if module == "loadgate.cli":
                assert names, f"{file.name}: import loadgate.cli"
                assert set(names) <= COMMAND_MODULES | SHARED, f"{file.name}: {names}"
            assert not (module == "loadgate" and "cli" in names), f"{file.name}: from .. import cli"


def test_common_imports_no_command() -> None:
    assert cli_imports(CLI / "common.py") == set()


def test_one_module_per_command_each_registering_its_handler() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # pyright: ignore[reportPrivateUsage]
    choices = cast(dict[str, argparse.ArgumentParser], sub.choices)
    assert list(choices) == [
        "binaries", "stack", "run", "search", "compare", "calibrate", "matrix", "bench",
        "check-bundle", "charms", "report",
    ]  # fmt: skip
    modules = [m for m in cli.COMMANDS if isinstance(m, ModuleType)]
    assert len(modules) == len(cli.COMMANDS)
    assert {m.__name__.removeprefix("loadgate.cli.") for m in modules} == COMMAND_MODULES
    for module, (name, p) in zip(modules, choices.items(), strict=True):
        handler = p.get_default("handler")
        assert callable(handler), name
        assert handler.__module__ == module.__name__, name
