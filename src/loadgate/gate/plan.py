"""What the gate deploys and runs, resolved from its options and environment (no model needed).

The plan is resolved once per pytest session, at the first gate test, so that a bad option or
`$CHARM_PATH` fails the gate's tests with the reason and leaves the charm's own tests alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadgate import paths
from loadgate.contract.scenarios import OTLP_TRACES
from loadgate.juju import deploy, model, settings
from loadgate.juju import deployed as deployed_mod

from .subject import Subject, given_charms, subject_of

TRACES_OVERLAY = "traces-standin.yaml"
# Loki's ingestion limits raised through the Loki charm's own options, so that a saturation run
# of an otelcol revision measures the collector, not Loki's default 4 MB/s.
LOKI_LIMITS_OVERLAY = "loki-unthrottled.yaml"


class PlanError(ValueError):
    """An option, a settings file or `$CHARM_PATH` is wrong (the message names which)."""


@dataclass(frozen=True)
class Asked:
    """The gate's options and environment as given."""

    env: Mapping[str, str]
    charm_options: Mapping[str, str | None] = field(default_factory=dict[str, str | None])
    resources: Sequence[str] = ()
    otelcol_revision: str | None = None
    otelcol_channel: str | None = None
    bundle: str | None = None
    overlays: Sequence[str] = ()
    gates_file: Path | None = None
    revisions_file: Path | None = None
    scenarios: Sequence[str] = ()


@dataclass(frozen=True)
class Plan:
    """The deployment and the runs: bundle, overlays, charms, the otelcol pin, the gated
    scenarios, those the session's tests run (what the deployment must serve) and the charm
    under test."""

    bundle: Path
    overlays: tuple[Path, ...]
    local_charms: Mapping[str, deploy.LocalCharm]
    pin: settings.OtelcolPin
    gates_file: Path
    scenarios: tuple[str, ...]
    subject: Subject
    serves: tuple[str, ...] = ()  # the scenarios the deployment serves (default: all gated)

    @property
    def served(self) -> tuple[str, ...]:
        return self.serves or self.scenarios

    @property
    def apps(self) -> tuple[str, ...]:
        """The applications the served scenarios need: the bundle's, and the traces backend
        stand-in when otlp-traces is served."""
        extra = (model.TRACES_STANDIN_APP,) if OTLP_TRACES.name in self.served else ()
        return (*model.BUNDLE_APPS, *extra)

    def requests(self) -> list[deployed_mod.Request]:
        local = self.local_charms
        out = [deployed_mod.Request.otelcol(self.pin, local.get("otelcol"))]
        out += [
            deployed_mod.Request(a, local=c) for a, c in sorted(local.items()) if a != "otelcol"
        ]
        return out


def chosen_scenarios(listed: Sequence[str], asked: Sequence[str], gates: Path) -> tuple[str, ...]:
    """`asked` (--gate-scenario), in gates.yaml's order, each one it lists; none: all."""
    unknown = [name for name in asked if name not in listed]
    if unknown:
        raise PlanError(
            f"--gate-scenario: {unknown[0]!r} is not gated by {gates}; allowed: {', '.join(listed)}"
        )
    return tuple(name for name in listed if name in asked) if asked else tuple(listed)


def overlays_for(given: Sequence[Path], scenarios: Sequence[str], subject: Subject) -> list[Path]:
    """The overlays to deploy: those given, then loadgate's own that the run needs and no given
    overlay replaces: the traces stand-in when otlp-traces is gated, Loki's raised limits when
    the charm under test is not Loki."""
    out = list(given)
    names = {p.name for p in given}
    own = [TRACES_OVERLAY] if OTLP_TRACES.name in scenarios else []
    if subject.app != "loki":
        own.append(LOKI_LIMITS_OVERLAY)
    out += [paths.overlays_dir() / name for name in own if name not in names]
    return out


def _local_charms(asked: Asked) -> tuple[dict[str, deploy.LocalCharm], Subject]:
    given = given_charms(asked.charm_options, asked.env)
    resources = deploy.parse_resource_options(asked.resources)
    unknown = sorted(set(resources) - set(given))
    if unknown:
        raise PlanError(
            f"--resource: {', '.join(unknown)} is not deployed from a packed charm "
            f"(give --{unknown[0]}-charm)"
        )
    charms = {
        app: deploy.local_charm(app, g.path, resources.get(app), option=g.source)
        for app, g in given.items()
    }
    return charms, subject_of(given, asked.env)


def resolve(asked: Asked, tree: Path, runs: Sequence[str] | None = None) -> Plan:
    """The plan; PlanError with the field or option at fault. `tree` is the test tree's root
    (its tests/integration/gates.yaml and revisions.yaml come before loadgate's own); `runs`,
    the scenarios the session's tests run (None: unknown, every gated one), is what the
    deployment serves (the traces stand-in only when otlp-traces runs)."""
    gates = asked.gates_file or settings_file(tree, "gates.yaml")
    revisions = asked.revisions_file or settings_file(tree, "revisions.yaml")
    try:
        charms, subject = _local_charms(asked)
        pin = settings.resolve_otelcol(asked.otelcol_revision, asked.otelcol_channel, revisions)
        scenarios = chosen_scenarios(settings.gate_scenarios(gates), asked.scenarios, gates)
    except (ValueError, deploy.DeployError) as exc:  # SettingsError, SubjectError are too
        raise PlanError(str(exc)) from None
    serves = tuple(name for name in scenarios if runs is None or name in runs)
    given = [Path(p) for p in asked.overlays]
    return Plan(
        bundle=Path(asked.bundle) if asked.bundle else paths.bundle_file(),
        overlays=tuple(overlays_for(given, serves, subject)),
        local_charms=charms,
        pin=pin,
        gates_file=gates,
        scenarios=scenarios,
        subject=subject,
        serves=serves,
    )


def settings_file(tree: Path, name: str) -> Path:
    """The test tree's own tests/integration/<name>, else loadgate's packaged default."""
    local = tree / "tests" / "integration" / name
    return local if local.is_file() else paths.integration_defaults_dir() / name
