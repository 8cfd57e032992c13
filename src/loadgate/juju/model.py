"""Deploying the bundle into a model and driving actions, over jubilant."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jubilant
import yaml

from .settings import OtelcolPin

BUNDLE_APPS = (
    "otelcol", "loki", "ca", "prometheus", "grafana", "alertmanager", "catalogue", "traefik", "k6",
)  # fmt: skip
K6_IMAGE = "docker.io/grafana/k6:1.8.1"
DEPLOY_TIMEOUT = 30 * 60.0
ACTION_TIMEOUT = 5 * 60.0


class ActionError(RuntimeError):
    """An action failed or could not run; the message says which, where and why."""


def overlay_dir() -> Path:
    """A folder for generated overlays that the Juju CLI can read.

    The strictly confined juju snap cannot read /tmp or hidden folders of $HOME; it can read
    ~/snap/juju/common, where jubilant also copies local charms.
    """
    juju = shutil.which("juju")
    if juju and os.path.realpath(juju).startswith("/snap/"):
        folder = Path.home() / "snap" / "juju" / "common" / "loadgate-overlays"
        folder.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=folder))
    return Path(tempfile.mkdtemp(prefix="loadgate-overlays-"))


def pin_overlay(pin: OtelcolPin) -> dict[str, Any]:
    """The overlay that puts otelcol on the pinned channel (and revision)."""
    app: dict[str, Any] = {"channel": pin.channel}
    if pin.revision is not None:
        app["revision"] = pin.revision
    return {"applications": {"otelcol": app}}


def local_k6_overlay(charm_path: Path, image: str = K6_IMAGE) -> dict[str, Any]:
    """The overlay that deploys `k6` from a packed charm file, with its OCI image."""
    return {
        "applications": {
            "k6": {"charm": str(charm_path.resolve()), "resources": {"k6-image": image}}
        }
    }


def write_overlay(overlay: Mapping[str, Any], folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(dict(overlay), sort_keys=False))
    return path


def deploy_bundle(juju: jubilant.Juju, bundle: Path, overlays: Sequence[Path] = ()) -> None:
    """`juju deploy <bundle> --trust --overlay ...` (trust applies to apps with `trust: true`)."""
    juju.deploy(str(bundle.resolve()), trust=True, overlays=[str(p.resolve()) for p in overlays])


def wait_ready(
    juju: jubilant.Juju, apps: Iterable[str] = BUNDLE_APPS, timeout: float = DEPLOY_TIMEOUT
) -> jubilant.Status:
    """Wait until every app is active and its agents idle; raise on an app in error."""
    names = tuple(apps)
    return juju.wait(
        lambda s: jubilant.all_active(s, *names) and jubilant.all_agents_idle(s, *names),
        error=lambda s: jubilant.any_error(s, *names),
        timeout=timeout,
    )


def run_action(
    juju: jubilant.Juju,
    unit: str,
    action: str,
    params: Mapping[str, Any] | None = None,
    wait: float = ACTION_TIMEOUT,
) -> dict[str, Any]:
    """Run an action and return its results; a failed action raises ActionError."""
    try:
        task = juju.run(unit, action, dict(params or {}), wait=wait)
    except jubilant.TaskError as exc:
        task = exc.task
        detail = task.message or task.stderr.strip() or str(task.results)
        raise ActionError(f"{unit} {action} failed ({task.status}): {detail}") from None
    except jubilant.CLIError as exc:
        raise ActionError(f"{unit} {action} could not run: {exc.stderr.strip()}") from None
    except TimeoutError:
        raise ActionError(f"{unit} {action} did not finish within {wait:.0f}s") from None
    return dict(task.results)


def scale(juju: jubilant.Juju, app: str, units: int, timeout: float = DEPLOY_TIMEOUT) -> None:
    """Scale a Kubernetes application to `units` units and wait for it to settle."""
    current = len(juju.status().apps[app].units)
    if units > current:
        juju.add_unit(app, num_units=units - current)
    elif units < current:
        juju.remove_unit(app, num_units=current - units)
    juju.wait(
        lambda s: (
            len(s.apps[app].units) == units
            and jubilant.all_active(s, app)
            and jubilant.all_agents_idle(s, app)
        ),
        error=lambda s: jubilant.any_error(s, app),
        timeout=timeout,
    )
