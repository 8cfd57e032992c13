"""Driver of the loki-k8s charm: what it needs to run outside Kubernetes."""

from __future__ import annotations

import contextlib
import os
import types
from unittest import mock

import ops
from kit import Request, always, frozen_clock, patch_if_present
from ops import testing
from sandbox import Journal, host_path_class

_CONTAINER = "loki"
# The charm writes CA certificates into its own container (the host here) and refreshes its
# trust store: both go to the sandbox.
_HOST_PREFIXES = ("/usr/local/share/ca-certificates", "/etc/ssl/certs")


def containers(request: Request) -> list[testing.Container]:
    # The Loki rock's base layer defines the `loki` service; the charm reads it.
    base = ops.pebble.Layer(
        {
            "services": {
                "loki": {"override": "replace", "command": "/usr/bin/loki", "startup": "disabled"}
            }
        }
    )
    loki = testing.Container(
        _CONTAINER,
        can_connect=True,
        execs={
            testing.Exec(["update-ca-certificates", "--fresh"], return_code=0),
            testing.Exec(["/usr/bin/loki", "-version"], stdout=request.version_output),
        },
        layers={"rock": base},
        service_statuses={"loki": ops.pebble.ServiceStatus.INACTIVE},
    )
    return [loki, testing.Container("node-exporter", can_connect=True)]


def patch(
    stack: contextlib.ExitStack, charm: types.ModuleType, request: Request, journal: Journal
) -> None:
    """No Kubernetes API, no shipping of the charm's own logs, a seeded clock (the schema's
    `from` date is "today" on a fresh install), the host trust store in the sandbox."""
    os.environ["CHARM_LOGGING_ENABLED"] = "0"
    if hasattr(charm, "KubernetesComputeResourcesPatch"):
        stack.enter_context(
            mock.patch.multiple(
                "charm.KubernetesComputeResourcesPatch",
                _namespace=mock.PropertyMock(return_value=request.model_name),
                _patch=always,
                is_ready=always,
            )
        )
    patch_if_present(stack, "lightkube.core.client", "GenericSyncClient")
    stack.enter_context(mock.patch("socket.getfqdn", return_value=request.fqdn))
    if hasattr(charm, "datetime"):
        stack.enter_context(mock.patch.object(charm, "datetime", frozen_clock(request.now)))
    if hasattr(charm, "Path"):
        sandboxed = host_path_class(request.sandbox_dir, _HOST_PREFIXES, journal)
        stack.enter_context(mock.patch.object(charm, "Path", sandboxed))
