"""Waiting for the model, driving actions and scaling, over jubilant (deploy.py deploys)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import jubilant

BUNDLE_APPS = (
    "otelcol", "loki", "ca", "prometheus", "grafana", "alertmanager", "catalogue", "traefik", "k6",
)  # fmt: skip
# The traces backend of otlp-traces, added by overlays/traces-standin.yaml.
TRACES_STANDIN_APP = "traces-standin"
_DEPLOY_TIMEOUT = 30 * 60.0
_ACTION_TIMEOUT = 5 * 60.0


class ActionError(RuntimeError):
    """An action failed or could not run; the message says which, where and why."""


def wait_ready(
    juju: jubilant.Juju, apps: Iterable[str] = BUNDLE_APPS, timeout: float = _DEPLOY_TIMEOUT
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
    wait: float = _ACTION_TIMEOUT,
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


def scale(juju: jubilant.Juju, app: str, units: int, timeout: float = _DEPLOY_TIMEOUT) -> None:
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
