"""What a model really runs, read from `juju status`, against what the run asked for.

A result row is labelled with the charm, revision and channel the model reports, never with what
was asked: a reused model (`--model`) may hold another revision than the pin. A run that asked
for a revision, a channel or a local charm and finds something else is refused, with the
deployed and the requested charm in the message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import jubilant

from .deploy import CHARM_OF_APP, LocalCharm
from .settings import OtelcolPin

_RISKS = ("stable", "candidate", "beta", "edge")


class MismatchError(ValueError):
    """The model runs another charm, revision or channel than the run asks for."""


@dataclass(frozen=True)
class DeployedCharm:
    app: str
    charm: str  # the charm's name
    origin: str  # charmhub | local
    revision: int
    channel: str  # "" for a local charm

    @property
    def local(self) -> bool:
        return self.origin == "local"

    def describe(self) -> str:
        if self.local:
            return f"local charm {self.charm} (local revision {self.revision})"
        return f"{self.charm} revision {self.revision} from channel {self.channel or '(none)'}"


def _normalize_channel(channel: str) -> str:
    """`edge` -> `latest/edge`; `3.7/edge/fix` stays; `""` stays."""
    if channel in _RISKS:
        return f"latest/{channel}"
    return channel


def read(status: jubilant.Status, app: str) -> DeployedCharm:
    if app not in status.apps:
        raise MismatchError(f"the model has no application {app!r}")
    a = status.apps[app]
    name = a.charm_name or a.charm.removeprefix("local:").removeprefix("ch:")
    return DeployedCharm(
        app=app,
        charm=name,
        origin=a.charm_origin,
        revision=a.charm_rev,
        channel=_normalize_channel(a.charm_channel),
    )


@dataclass(frozen=True)
class Request:
    """What the run asks an application to run: a local charm, or a Charmhub channel and
    optionally a revision (None: whatever the channel head was)."""

    app: str
    local: LocalCharm | None = None
    channel: str | None = None
    revision: int | None = None

    @classmethod
    def otelcol(cls, pin: OtelcolPin | None, local: LocalCharm | None) -> Request:
        if local is not None:
            return cls("otelcol", local=local)
        if pin is None:
            return cls("otelcol")
        return cls("otelcol", channel=pin.channel, revision=pin.revision)

    def describe(self) -> str:
        if self.local is not None:
            return f"the local charm {self.local.path}"
        parts = [CHARM_OF_APP.get(self.app, self.app)]
        if self.revision is not None:
            parts.append(f"revision {self.revision}")
        if self.channel:
            parts.append(f"from channel {self.channel}")
        return " ".join(parts)


def _mismatch(deployed: DeployedCharm, want: Request) -> str | None:
    """Why the deployed charm is not the requested one (None when it is)."""
    wanted_name = want.local.name if want.local else CHARM_OF_APP.get(want.app)
    problems: list[str] = []
    if wanted_name and deployed.charm != wanted_name:
        problems.append(f"charm {deployed.charm}, not {wanted_name}")
    if want.local is not None:
        if not deployed.local:
            problems.append(f"a charm from {deployed.origin}, not a local charm")
    else:
        if (want.channel or want.revision is not None) and deployed.local:
            problems.append("a local charm, not one from Charmhub")
        if want.revision is not None and deployed.revision != want.revision:
            problems.append(f"revision {deployed.revision}, not {want.revision}")
        if want.channel and deployed.channel != _normalize_channel(want.channel):
            problems.append(f"channel {deployed.channel or '(none)'}, not {want.channel}")
    if not problems:
        return None
    return (
        f"{deployed.app} runs {deployed.describe()}; the run asks for {want.describe()} "
        f"({'; '.join(problems)})"
    )


def check(status: jubilant.Status, requests: Iterable[Request]) -> dict[str, DeployedCharm]:
    """Every requested application as deployed; MismatchError naming each difference."""
    found: dict[str, DeployedCharm] = {}
    problems: list[str] = []
    for want in requests:
        try:
            deployed = read(status, want.app)
        except MismatchError as exc:
            problems.append(str(exc))
            continue
        found[want.app] = deployed
        reason = _mismatch(deployed, want)
        if reason:
            problems.append(reason)
    if problems:
        raise MismatchError("; ".join(problems))
    return found


def labels(
    deployed: Mapping[str, DeployedCharm], local: Mapping[str, LocalCharm] | None = None
) -> dict[str, str]:
    """Result-row labels from what the model runs.

    otelcol from Charmhub: `revision` (its revision, as `loadgate report` groups rows) and
    `otelcol_channel`; a local charm: `<app>_charm=local`, `<app>_local_revision` and, when the
    file is known, `<app>_sha256` (the first 12 hex digits of the .charm file's SHA-256).
    """
    out: dict[str, str] = {}
    for app, d in sorted(deployed.items()):
        if d.local:
            out[f"{app}_charm"] = "local"
            out[f"{app}_local_revision"] = str(d.revision)
            given = (local or {}).get(app)
            if given is not None:
                out[f"{app}_sha256"] = given.short_hash
            continue
        if app == "otelcol":
            out["revision"] = str(d.revision)
            out["otelcol_channel"] = d.channel
        else:
            out[f"{app}_revision"] = str(d.revision)
            out[f"{app}_channel"] = d.channel
    return out


def refuse_conflicting_labels(asked: Mapping[str, str], found: Mapping[str, str]) -> None:
    """A label the user gave that contradicts what the model runs (e.g. `revision=201` on a
    model running revision 1) is refused: the row would be mislabelled."""
    wrong = [
        f"{key}={asked[key]} but the model runs {key}={found[key]}"
        for key in sorted(set(asked) & set(found))
        if asked[key] != found[key]
    ]
    if wrong:
        raise MismatchError("; ".join(wrong))
