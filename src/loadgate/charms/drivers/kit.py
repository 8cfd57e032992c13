"""What every charm driver shares: the request, the charm class, the run, the TLS exchange, the
output. Runs inside the charm's own virtualenv with its own `ops` (standard library + ops +
cryptography, which every TLS-capable charm's lock carries)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import importlib
import json
import shutil
import sys
import time
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import ops
from ops import testing
from sandbox import Journal

_CHARM_FILES = ("charmcraft.yaml", "metadata.yaml", "config.yaml", "actions.yaml")


@dataclasses.dataclass
class Request:
    """The render request (request.json), built and validated by loadgate."""

    driver: str
    charm_dir: Path
    work_dir: Path
    app: str
    unit_id: int
    model_name: str
    model_uuid: str
    fqdn: str
    config: dict[str, Any]
    relations: list[dict[str, Any]]
    exchanges: list[dict[str, Any]]
    version_output: str
    now: dt.datetime

    @classmethod
    def load(cls, path: Path) -> Request:
        raw = json.loads(path.read_text())
        return cls(
            driver=raw["driver"],
            charm_dir=Path(raw["charm_dir"]),
            work_dir=Path(raw["work_dir"]),
            app=raw["app"],
            unit_id=int(raw["unit_id"]),
            model_name=raw["model"]["name"],
            model_uuid=raw["model"]["uuid"],
            fqdn=raw["fqdn"],
            config=dict(raw.get("config") or {}),
            relations=list(raw.get("relations") or []),
            exchanges=list(raw.get("exchanges") or []),
            version_output=raw.get("version_output", ""),
            now=dt.datetime.fromisoformat(raw["now"]),
        )

    @property
    def out_dir(self) -> Path:
        return self.work_dir / "out"

    @property
    def sandbox_dir(self) -> Path:
        return self.work_dir / "host"


def import_charm(charm_dir: Path) -> types.ModuleType:
    """The charm's `charm` module, imported the way Juju runs it (src/ and lib/ on the path)."""
    sys.path[:0] = [str(charm_dir / "src"), str(charm_dir / "lib")]
    return importlib.import_module("charm")


def charm_class(module: types.ModuleType) -> type[ops.CharmBase]:
    """The CharmBase subclass the module defines (the one `ops.main` would run)."""
    found = [
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and issubclass(v, ops.CharmBase)
        and v is not ops.CharmBase
        and v.__module__ == module.__name__
    ]
    if len(found) != 1:
        names = [c.__name__ for c in found]
        raise SystemExit(f"expected one charm class in {module.__file__}, found {names}")
    return found[0]


def virtual_root(charm_dir: Path, work_dir: Path) -> Path:
    """A charm directory of our own: the charm's metadata and its src/ data folders (alert
    rules, dashboards), so whatever the charm writes under its own folder stays in work_dir."""
    root = work_dir / "charm-root"
    root.mkdir(parents=True)
    for name in _CHARM_FILES:
        if (charm_dir / name).is_file():
            shutil.copy(charm_dir / name, root / name)
    for folder in (charm_dir / "src").iterdir():
        if folder.is_dir() and folder.name != "__pycache__":
            shutil.copytree(folder, root / "src" / folder.name)
    return root


def patch_if_present(stack: contextlib.ExitStack, module: str, attribute: str) -> None:
    """Replace `module.attribute` by a mock when the charm's venv has that module (a
    Kubernetes API client, say)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return
    stack.enter_context(mock.patch(f"{module}.{attribute}"))


def relation(spec: Mapping[str, Any]) -> testing.Relation:
    units = {int(k): dict(v) for k, v in (spec.get("remote_units_data") or {}).items()}
    return testing.Relation(
        endpoint=spec["endpoint"],
        interface=spec.get("interface"),
        remote_app_name=spec.get("remote_app_name", "remote"),
        remote_app_data=dict(spec.get("remote_app_data") or {}),
        remote_units_data=units or {0: {}},
    )


def frozen_clock(now: dt.datetime) -> types.ModuleType:
    """A stand-in for the `datetime` module whose `datetime.now()` and `utcnow()` say `now`."""

    class FrozenDatetime(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> FrozenDatetime:  # type: ignore[override]
            moment = now.astimezone(tz) if tz else now.replace(tzinfo=None)
            return cls.fromtimestamp(moment.timestamp(), tz)

        @classmethod
        def utcnow(cls) -> FrozenDatetime:  # type: ignore[override]
            return cls.fromtimestamp(now.timestamp(), dt.UTC).replace(tzinfo=None)

    shim = types.ModuleType("datetime")
    shim.__dict__.update({k: v for k, v in vars(dt).items() if not k.startswith("__")})
    shim.datetime = FrozenDatetime  # type: ignore[attr-defined]
    return shim


def _answer(
    request: Request, exchange: Mapping[str, Any], out: testing.State, rel: testing.Relation
) -> testing.Relation:
    """The provider's answer to what the charm published on an exchange relation."""
    import providers

    current = _relation_of(out, rel.id)
    own_app = request.app
    if exchange["kind"] == "tls-certificates":
        if "certificate_signing_requests" not in current.local_unit_data:
            raise SystemExit(f"{rel.endpoint}: the charm asked for no certificate (no CSR)")
        app_data, unit_data = providers.tls_certificates(
            own_app,
            current.local_app_data,
            own_unit_data(current.local_unit_data),
            exchange["ca_cert"],
            exchange["ca_key"],
            int(exchange.get("days", 30)),
        )
    elif exchange["kind"] == "certificate_transfer":
        app_data, unit_data = providers.certificate_transfer(
            own_app, current.local_app_data, exchange["certificates"]
        )
    elif exchange["kind"] == "prometheus_remote_write":
        app_data, unit_data = providers.prometheus_remote_write(
            exchange["provider_lib"],
            rel.remote_app_name,
            own_app,
            exchange["server_url"],
            exchange["endpoint_path"],
        )
    elif exchange["kind"] == "tracing":
        if "receivers" not in current.local_app_data:
            raise SystemExit(f"{rel.endpoint}: the charm requested no tracing protocol")
        app_data, unit_data = providers.tracing(
            exchange["provider_lib"],
            rel.remote_app_name,
            own_app,
            current.local_app_data,
            exchange["receiver_urls"],
        )
    else:
        raise SystemExit(f"unknown exchange kind {exchange['kind']!r}")
    return dataclasses.replace(current, remote_app_data=app_data, remote_units_data={0: unit_data})


def _relation_of(state: testing.State, relation_id: int) -> testing.Relation:
    found = state.get_relation(relation_id)
    if not isinstance(found, testing.Relation):
        raise SystemExit(f"relation {relation_id} is not a regular relation")
    return found


def always(*_: Any, **__: Any) -> bool:
    """A stand-in that says yes (a Kubernetes patch that is always applied and ready)."""
    return True


def own_unit_data(data: Mapping[str, str]) -> dict[str, str]:
    """A unit databag without the network keys Juju fills in."""
    return {
        k: v
        for k, v in data.items()
        if not k.startswith("egress-") and k not in ("ingress-address", "private-address")
    }


def run(
    request: Request,
    ctx: testing.Context[Any],
    state: testing.State,
    journal: Journal,
) -> testing.State:
    """Without exchanges, config-changed. With them, as Juju would: relation-created of each
    exchange relation (the charm publishes what it asks for), the provider answers, then
    relation-changed of each."""
    began = time.perf_counter()
    runs = 0
    out = state
    exchanges = {e["endpoint"]: e for e in request.exchanges}
    rels = [r for r in state.relations if r.endpoint in exchanges]
    if not rels:
        out = ctx.run(ctx.on.config_changed(), out)
        runs += 1
    for rel in rels:
        out = ctx.run(ctx.on.relation_created(_relation_of(out, rel.id)), out)
        runs += 1
    for rel in rels:
        answered = _answer(request, exchanges[rel.endpoint], out, _relation_of(out, rel.id))
        others = [r for r in out.relations if r.id != answered.id]
        out = ctx.run(
            ctx.on.relation_changed(answered, remote_unit=0),
            dataclasses.replace(out, relations=[answered, *others]),
        )
        runs += 1
    timings = {"ctx_run_s": round(time.perf_counter() - began, 3), "events": runs}
    _dump(request, ctx, out, journal, timings)
    return out


def _received(rel: testing.RelationBase) -> dict[str, Any]:
    """What the remote side of a regular relation wrote (a provider's answer)."""
    if not isinstance(rel, testing.Relation):
        return {}
    units = {str(k): own_unit_data(v) for k, v in rel.remote_units_data.items()}
    return {"remote_app_data": dict(rel.remote_app_data), "remote_units_data": units}


def _dump(
    request: Request,
    ctx: testing.Context[Any],
    out: testing.State,
    journal: Journal,
    timings: dict[str, Any],
) -> None:
    out_dir = request.out_dir
    containers: dict[str, Any] = {}
    for container in out.containers:
        fs = container.get_filesystem(ctx)
        dest = out_dir / "containers" / container.name
        files = sorted("/" + p.relative_to(fs).as_posix() for p in fs.rglob("*") if p.is_file())
        shutil.copytree(fs, dest, dirs_exist_ok=True)
        containers[container.name] = {"plan": container.plan.to_dict(), "files": files}
    relations = [
        {
            "endpoint": r.endpoint,
            "local_app_data": dict(r.local_app_data),
            "local_unit_data": own_unit_data(r.local_unit_data),
            **_received(r),
        }
        for r in out.relations
    ]
    status = out.unit_status
    result = {
        "status": {"name": status.name, "message": status.message},
        "workload_version": out.workload_version,
        "containers": containers,
        "relations": relations,
        "journal": journal.to_dict(),
        "python": ".".join(str(v) for v in sys.version_info[:3]),
        "ops": ops.__version__,
        "timings": timings,
    }
    (out_dir / "result.json").write_text(json.dumps(result, indent=1, sort_keys=True))
