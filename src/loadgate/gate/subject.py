"""The charm under test: which packed charms the gate deploys, and which one it gates.

A charm repository's CI packs its charm and names it in `$CHARM_PATH` (the convention of the
otelcol and Loki charms' tox and of the `canonical/observability` workflows). The gate reads the
packed charm's own metadata to learn which charm it is, and deploys it in place of the bundle
application that runs that charm (`opentelemetry-collector-k8s` as `otelcol`, `loki-k8s` as
`loki`). The options `--otelcol-charm`, `--loki-charm`, `--k6-charm` (and
`$LOADGATE_<APP>_CHARM`) still win for their application.

The charm under test (the subject) is the application `$CHARM_PATH` names, else the one packed
charm given for otelcol or Loki, else otelcol from its channel (`--otelcol-revision`). The
saturation gate must measure it: its component (the collector for otelcol, Loki for loki) is what
must give way first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from loadgate.bundle import charm_file
from loadgate.judge.bottleneck import COLLECTOR, LOKI
from loadgate.juju.deploy import CHARM_OF_APP

ENV_CHARM_PATH = "CHARM_PATH"
_ENV_KEEP_MODELS = "KEEP_MODELS"
CHARM_ENV = {
    "otelcol": "LOADGATE_OTELCOL_CHARM",
    "loki": "LOADGATE_LOKI_CHARM",
    "k6": "LOADGATE_K6_CHARM",
}
# The applications a charm under test can be, and the component that must give way first when
# the pipeline is saturated (judge/bottleneck.py's names).
_COMPONENT_OF_APP = {"otelcol": COLLECTOR, "loki": LOKI}
_APP_OF_CHARM = {charm: app for app, charm in CHARM_OF_APP.items() if app in _COMPONENT_OF_APP}


class SubjectError(ValueError):
    """A packed charm option or `$CHARM_PATH` names no usable charm (the message says which)."""


@dataclass(frozen=True)
class Given:
    """A packed charm given for an application, and the option or variable that gave it."""

    app: str
    path: Path
    source: str


@dataclass(frozen=True)
class Subject:
    """The bundle application under test and where that choice came from."""

    app: str
    source: str

    @property
    def component(self) -> str:
        return _COMPONENT_OF_APP[self.app]


def _packed(value: str, source: str) -> Path:
    path = Path(value).expanduser()
    if not path.is_file() or path.suffix != ".charm":
        raise SubjectError(f"{source}: must name a packed .charm file; got {value!r}")
    return path.resolve()


def _charm_path_app(path: Path) -> str:
    """The application `$CHARM_PATH`'s charm runs as, from the charm's own metadata."""
    try:
        name = charm_file.read(path).name
    except charm_file.CharmFileError as exc:
        raise SubjectError(f"${ENV_CHARM_PATH}: {exc}") from None
    if name not in _APP_OF_CHARM:
        allowed = ", ".join(f"{c} (as {a})" for c, a in sorted(_APP_OF_CHARM.items()))
        raise SubjectError(
            f"${ENV_CHARM_PATH}: {path} is the charm {name!r}, which the load gate does not "
            f"deploy; it gates {allowed}: unset {ENV_CHARM_PATH} or give --otelcol-charm / "
            "--loki-charm"
        )
    return _APP_OF_CHARM[name]


def given_charms(options: Mapping[str, str | None], env: Mapping[str, str]) -> dict[str, Given]:
    """app -> the packed charm to deploy for it: `--<app>-charm` first, then
    `$LOADGATE_<APP>_CHARM`, then `$CHARM_PATH` for the application its charm runs as."""
    out: dict[str, Given] = {}
    charm_path = env.get(ENV_CHARM_PATH, "").strip()
    if charm_path:
        path = _packed(charm_path, f"${ENV_CHARM_PATH}")
        app = _charm_path_app(path)
        out[app] = Given(app, path, f"${ENV_CHARM_PATH}")
    for app, env_name in CHARM_ENV.items():
        option = options.get(app)
        value = option or env.get(env_name)
        if not value:
            continue
        source = f"--{app}-charm" if option else f"${env_name}"
        out[app] = Given(app, _packed(value, source), source)
    return out


def subject_of(given: Mapping[str, Given], env: Mapping[str, str]) -> Subject:
    """The application under test: `$CHARM_PATH`'s, else the one of otelcol and loki given a
    packed charm, else otelcol from its channel."""
    if env.get(ENV_CHARM_PATH, "").strip():
        for item in given.values():
            if item.source == f"${ENV_CHARM_PATH}":
                return Subject(item.app, f"${ENV_CHARM_PATH} ({item.path.name})")
        charm_path = Path(env[ENV_CHARM_PATH].strip()).expanduser().resolve()
        app = _charm_path_app(charm_path)
        return Subject(app, f"${ENV_CHARM_PATH} ({charm_path.name}; {given[app].source} wins)")
    local = [g for g in given.values() if g.app in _COMPONENT_OF_APP]
    if len(local) == 1:
        return Subject(local[0].app, local[0].source)
    if len(local) > 1:
        return Subject("otelcol", "both otelcol and loki given: otelcol is gated")
    return Subject("otelcol", "otelcol from its channel")


def keep_models(option: bool, env: Mapping[str, str]) -> bool:
    """`--keep-models`, or `$KEEP_MODELS` set at all (as the charms' own conftests read it)."""
    return option or env.get(_ENV_KEEP_MODELS) is not None
