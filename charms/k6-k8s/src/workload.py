"""The k6 workload: scripts, CA bundle, the Pebble layer of one run, and what became of it.

Takes an `ops.pebble.Client`, so the same code drives the charm's container and, in tests, a
real Pebble daemon on the build machine. k6 runs as the Pebble service `k6` (started on demand,
never restarted); completion is noticed through the http check `k6-running` on k6's REST API
(it goes down when k6 exits, so Juju emits pebble-check-failed), by update-status, and on demand.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ops import pebble

import runs
from loadgate_contract.k6args import SCENARIO_FILES, Segment, build_command
from loadgate_contract.spec import RunSpec
from loadgate_contract.summary import ClientFigures, SummaryError, parse_summary
from runs import Outcome, RunRecord

SERVICE = "k6"
CHECK = "k6-running"
LAYER = "k6"
SUMMARY_FILE = "summary.json"
LOG_FILE = "k6.log"
RECORD_FILE = "run.json"
LAST_FILE = "last"
LOG_TAIL_LINES = 15


class WorkloadError(RuntimeError):
    """The workload cannot do what was asked; the message says why."""


def scripts_problem(source: Path) -> str | None:
    """Why the charm's scenario folder cannot be used, or None when it holds every scenario."""
    repack = "the charm was packed without them: repack it (scripts/pack-k6-charm)"
    if not source.is_dir():
        return f"the k6 scenario folder {source} is missing; {repack}"
    missing = [n for n in SCENARIO_FILES.values() if not (source / n).is_file()]
    if missing:
        return f"the k6 scenario folder {source} lacks {', '.join(missing)}; {repack}"
    return None


@dataclass(frozen=True)
class Paths:
    """Where things live in the workload container (a temp dir in tests)."""

    k6_bin: str = "/usr/bin/k6"
    scripts: str = "/etc/k6/scripts"
    runs: str = "/var/lib/k6/runs"
    ca_bundle: str = "/etc/k6/ca/bundle.pem"
    system_ca: str = "/etc/ssl/certs/ca-certificates.crt"

    def run_dir(self, run_id: str) -> str:
        return str(PurePosixPath(self.runs) / run_id)

    def in_run(self, run_id: str, name: str) -> str:
        return str(PurePosixPath(self.runs) / run_id / name)


def service_command(argv: list[str]) -> str:
    """Pebble's service `command` for an argv: Pebble shlex-splits it back into the same argv."""
    for arg in argv:
        if arg in ("[", "]"):
            raise WorkloadError(f"argument {arg!r} would start Pebble's default-arguments syntax")
    return shlex.join(argv)


class K6Workload:
    def __init__(
        self,
        client: pebble.Client,
        paths: Paths | None = None,
        *,
        api_address: str = "127.0.0.1:6565",
        check_period: str = "5s",
        check_threshold: int = 2,
    ):
        self.client = client
        self.paths = paths or Paths()
        self.api_address = api_address
        self.check_period = check_period
        self.check_threshold = check_threshold

    # ---- files ---------------------------------------------------------------------------
    def push_scripts(self, source: Path) -> list[str]:
        """Copy the charm's scenario folder into the container; returns the container paths.

        Raises WorkloadError, pushing nothing, when the folder is missing or lacks a scenario.
        """
        problem = scripts_problem(source)
        if problem:
            raise WorkloadError(problem)
        pushed: list[str] = []
        for path in sorted(source.rglob("*")):
            if path.is_file():
                dest = str(PurePosixPath(self.paths.scripts) / path.relative_to(source).as_posix())
                self.client.push(dest, path.read_bytes(), make_dirs=True)
                pushed.append(dest)
        return pushed

    def write_ca_bundle(self, certificates: Iterable[str]) -> str | None:
        """The container's public CAs plus the related ones, in one file for SSL_CERT_FILE.

        Returns its path, or None (and removes the file) when there is no related CA.
        """
        pems = sorted({c.strip() for c in certificates if c.strip()})
        if not pems:
            self._remove(self.paths.ca_bundle)
            return None
        system = self._read(self.paths.system_ca) or ""
        bundle = "\n".join([system.strip(), *pems]).strip() + "\n"
        self.client.push(self.paths.ca_bundle, bundle, make_dirs=True, permissions=0o644)
        return self.paths.ca_bundle

    def ca_bundle(self) -> str | None:
        return self.paths.ca_bundle if self._read(self.paths.ca_bundle) is not None else None

    # ---- a run -----------------------------------------------------------------------------
    def service_state(self) -> str:
        """The service state: active, inactive, error, or unknown (not in the plan)."""
        infos = self.client.get_services([SERVICE])
        if not infos:
            return "unknown"
        current = infos[0].current
        return current.value if isinstance(current, pebble.ServiceStatus) else str(current)

    def is_running(self) -> bool:
        return self.service_state() == "active"

    def layer(self, spec: RunSpec, argv: list[str], env: dict[str, str]) -> pebble.LayerDict:
        return {
            "summary": f"k6 load run {spec.run_id}",
            "services": {
                SERVICE: {
                    "override": "replace",
                    "summary": f"k6 run {spec.run_id}",
                    "command": service_command(argv),
                    "startup": "disabled",
                    "on-success": "ignore",
                    "on-failure": "ignore",
                    # k6 writes its summary on SIGTERM; give it time before SIGKILL.
                    "kill-delay": "30s",
                    "environment": env,
                },
            },
            "checks": {
                CHECK: {
                    "override": "replace",
                    "period": self.check_period,
                    "timeout": "3s",
                    "threshold": self.check_threshold,
                    "http": {"url": f"http://{self.api_address}/v1/status"},
                },
            },
        }

    def start(
        self,
        spec: RunSpec,
        *,
        target: str,
        instance: str,
        segment: Segment,
        remote_write_url: str | None = None,
        ca_file: str | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> RunRecord:
        """Start k6 for the spec's run in the background. Refuses while a run is going on.

        `extra_env` goes into k6's process environment as it is (e.g. the model's proxy).
        """
        if self.is_running():
            raise WorkloadError(f"run {self.last_run_id()} is going on; stop it with stop-load")
        previous = self.last_run_id()
        if previous is not None:
            self.outcome(previous)  # records how the previous run ended before the plan changes
        if self.record(spec.run_id) is not None:
            raise WorkloadError(f"run-id {spec.run_id!r} was used before on this unit")
        command = build_command(
            spec,
            k6_bin=self.paths.k6_bin,
            scripts_dir=self.paths.scripts,
            target=target,
            summary_path=self.paths.in_run(spec.run_id, SUMMARY_FILE),
            instance=instance,
            remote_write_url=remote_write_url,
            ca_file=ca_file,
            segment=segment,
            api_address=self.api_address,
            log_file=self.paths.in_run(spec.run_id, LOG_FILE),
        )
        env = {**dict(extra_env or {}), **command.env}
        record = RunRecord(
            run_id=spec.run_id,
            params=spec.to_params(),
            segment=(segment.index, segment.count),
            instance=instance,
            started=time.time(),
        )
        self.client.make_dir(self.paths.run_dir(spec.run_id), make_parents=True)
        self._save(record)
        self.client.push(str(PurePosixPath(self.paths.runs) / LAST_FILE), spec.run_id)
        self.client.add_layer(LAYER, self.layer(spec, command.argv, env), combine=True)
        # k6 exiting within a second (e.g. a script error) is a ChangeError: outcome() tells.
        with contextlib.suppress(pebble.ChangeError):
            self.client.start_services([SERVICE])
        self._checks(start=True)
        return record

    def stop(self) -> str | None:
        """Stop the current run (recorded as stopped); returns its run id, None if none ran."""
        run_id = self.last_run_id()
        if run_id is None or not self.is_running():
            return None
        record = self.record(run_id)
        if record is not None:
            record.stopped = True
            self._save(record)
        self.client.stop_services([SERVICE])
        return run_id

    # ---- outcome -----------------------------------------------------------------------------
    def last_run_id(self) -> str | None:
        text = self._read(str(PurePosixPath(self.paths.runs) / LAST_FILE))
        if text is None:
            return None
        return text.strip() or None

    def record(self, run_id: str) -> RunRecord | None:
        text = self._read(self.paths.in_run(run_id, RECORD_FILE))
        return RunRecord.from_json(text) if text is not None else None

    def figures(self, run_id: str) -> tuple[ClientFigures | None, str]:
        """The run's summary figures, or None and why not."""
        text = self._read(self.paths.in_run(run_id, SUMMARY_FILE))
        if text is None:
            return None, "no summary file"
        try:
            return parse_summary(json.loads(text)), ""
        except (json.JSONDecodeError, SummaryError) as exc:
            return None, f"unreadable summary: {exc}"

    def log_tail(self, run_id: str, lines: int = LOG_TAIL_LINES) -> str:
        text = self._read(self.paths.in_run(run_id, LOG_FILE))
        if not text:
            return "(k6 wrote no log lines)"
        return "\n".join(text.splitlines()[-lines:])

    def outcome(self, run_id: str | None = None) -> Outcome | None:
        """How the run (default the last) stands; a terminal outcome is recorded in run.json."""
        run_id = run_id or self.last_run_id()
        if run_id is None:
            return None
        record = self.record(run_id)
        if record is None:
            return None
        figures, problem = self.figures(run_id)
        if record.status is not None:
            return Outcome(run_id, record.status, figures, record.detail, record)
        if run_id != self.last_run_id():
            status, detail = runs.ERROR, "outcome unknown: a later run replaced its service"
        else:
            spec = RunSpec.from_params(record.params)
            status, detail = runs.classify(
                self.service_state(),
                stopped=record.stopped,
                figures=figures,
                duration_s=spec.duration_s,
                summary_problem=problem,
            )
        if status == runs.ERROR:
            detail = f"{detail}\n{self.log_tail(run_id)}"
        if status in runs.TERMINAL:
            record.status, record.detail, record.finished = status, detail, time.time()
            self._save(record)
            self._checks(start=False)
        return Outcome(run_id, status, figures, detail, record)

    # ---- helpers -----------------------------------------------------------------------------
    def _save(self, record: RunRecord) -> None:
        self.client.push(self.paths.in_run(record.run_id, RECORD_FILE), record.to_json())

    def _checks(self, *, start: bool) -> None:
        """Run the completion check only during a run (Pebble without start/stop: always)."""
        try:
            if start:
                self.client.start_checks([CHECK])
            else:
                self.client.stop_checks([CHECK])
        except pebble.APIError:
            pass  # an older Pebble: the check keeps running and goes down between runs

    def _read(self, path: str) -> str | None:
        try:
            with self.client.pull(path) as stream:
                return stream.read()
        except pebble.PathError as exc:
            if exc.kind == "not-found":
                return None
            raise

    def _remove(self, path: str) -> None:
        try:
            self.client.remove_path(path)
        except pebble.PathError as exc:
            if exc.kind != "not-found":
                raise
