"""Is there a Juju controller to test against? One reason when not, so a suite skips once."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Sequence

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)


def skip_reason(
    controller: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
    run: Runner = _run,
) -> str | None:
    """None when a controller answers; otherwise why the Juju suites cannot run."""
    juju = which("juju")
    if juju is None:
        return "no Juju controller reachable: the `juju` CLI is not on PATH"
    try:
        listed = run([juju, "controllers", "--format", "json"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no Juju controller reachable: `juju controllers` failed: {exc}"
    if listed.returncode != 0:
        return f"no Juju controller reachable: `juju controllers` failed: {_tail(listed.stderr)}"
    try:
        data = json.loads(listed.stdout or "{}")
    except json.JSONDecodeError:
        return "no Juju controller reachable: `juju controllers` did not answer JSON"
    controllers = (data.get("controllers") or {}) if isinstance(data, dict) else {}
    if not controllers:
        return "no Juju controller reachable: `juju controllers` lists none (bootstrap one)"
    name = controller or data.get("current-controller")
    if not name:
        return "no Juju controller reachable: no current controller (pass --controller)"
    if name not in controllers:
        return (
            f"no Juju controller reachable: controller {name!r} is not one of {sorted(controllers)}"
        )
    try:
        shown = run([juju, "models", "--controller", name, "--format", "json"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no Juju controller reachable: controller {name!r} did not answer: {exc}"
    if shown.returncode != 0:
        detail = _tail(shown.stderr)
        return f"no Juju controller reachable: controller {name!r} did not answer: {detail}"
    return None


def _tail(text: str | None, limit: int = 200) -> str:
    lines = (text or "").strip().splitlines()
    return lines[-1][:limit] if lines else "(no output)"
