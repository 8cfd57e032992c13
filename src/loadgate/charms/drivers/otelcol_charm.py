"""Driver of the opentelemetry-collector-k8s charm: what it needs to run outside Kubernetes."""

from __future__ import annotations

import contextlib
import types
from unittest import mock

import ops
from kit import Request, always, patch_if_present
from ops import testing
from sandbox import Journal

_CONTAINER = "otelcol"
_RESOURCES_PATCH = "charms.observability_libs.v0.kubernetes_compute_resources_patch"


def containers(request: Request) -> list[testing.Container]:
    execs = {
        testing.Exec(["update-ca-certificates", "--fresh"], return_code=0),
        testing.Exec(["/usr/bin/otelcol", "--version"], stdout=request.version_output),
    }
    return [testing.Container(_CONTAINER, can_connect=True, execs=execs)]


def patch(
    stack: contextlib.ExitStack, charm: types.ModuleType, request: Request, journal: Journal
) -> None:
    """No Kubernetes API (resource-limit patch, lightkube), the unit's in-cluster name."""
    del charm, journal
    try:
        __import__(_RESOURCES_PATCH)
    except ImportError:
        pass  # an old revision without resource limits
    else:
        stack.enter_context(
            mock.patch.multiple(
                f"{_RESOURCES_PATCH}.KubernetesComputeResourcesPatch",
                _namespace=request.model_name,
                _patch=always,
                is_ready=always,
                get_status=mock.Mock(return_value=ops.ActiveStatus()),
            )
        )
    patch_if_present(stack, "lightkube.core.client", "GenericSyncClient")
    stack.enter_context(mock.patch("socket.getfqdn", return_value=request.fqdn))
