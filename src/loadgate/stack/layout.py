"""Files and folders of one local stack's run directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import pebble_daemon, runlock


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def tls(self) -> Path:
        return self.root / "tls"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pebble(self) -> Path:
        return self.root / "pebble"

    @property
    def pebble_socket(self) -> Path:
        return pebble_daemon.socket_path(self.pebble)

    @property
    def state_file(self) -> Path:
        return self.root / "stack.json"

    @property
    def lock_file(self) -> Path:
        """The run lock (see runlock.py): kept when the run directory is rewritten."""
        return runlock.lock_path(self.root)

    @property
    def k6_file(self) -> Path:
        """Which k6 process a run started, and for which loadgate process (orphan checks)."""
        return self.root / "k6.json"

    @property
    def cgroups_file(self) -> Path:
        """The control groups the stack made (cgroups.py), written before its services start:
        `down` and the next `up` remove them even when stack.json was never written."""
        return self.root / "cgroups.json"

    @property
    def collector_config(self) -> Path:
        return self.config / "otelcol.yaml"

    @property
    def loki_config(self) -> Path:
        return self.config / "loki.yaml"

    @property
    def prometheus_config(self) -> Path:
        return self.config / "prometheus.yaml"

    @property
    def collector_storage(self) -> Path:
        return self.data / "otelcol-storage"

    @property
    def loki_data(self) -> Path:
        return self.data / "loki"

    @property
    def prometheus_data(self) -> Path:
        return self.data / "prometheus"

    @property
    def ca_cert(self) -> Path:
        return self.tls / "ca.crt"

    @property
    def server_cert(self) -> Path:
        return self.tls / "server.crt"

    @property
    def server_key(self) -> Path:
        return self.tls / "server.key"

    def folders(self) -> list[Path]:
        return [
            self.config,
            self.tls,
            self.logs,
            self.pebble,
            self.collector_storage,
            self.loki_data,
            self.prometheus_data,
        ]
