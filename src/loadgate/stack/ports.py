"""Loopback ports of the local stack: defaults, a movable base, and a check that they are free."""

from __future__ import annotations

import errno
import socket
from dataclasses import asdict, dataclass

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Ports:
    otlp_grpc: int = 4317
    otlp_http: int = 4318
    otelcol_metrics: int = 8888
    otelcol_health: int = 13133
    loki_http: int = 3100
    loki_grpc: int = 9095
    prometheus: int = 9090

    @classmethod
    def from_base(cls, base: int | None) -> Ports:
        """The default ports, or consecutive ports from `base` (base, base+1, ... base+6)."""
        if base is None:
            return cls()
        if not 1024 <= base <= 65535 - 7:
            raise ValueError(f"base port: must be between 1024 and {65535 - 7}, got {base}")
        names = list(asdict(cls()).keys())
        return cls(**{name: base + i for i, name in enumerate(names)})

    def items(self) -> list[tuple[str, int]]:
        return list(asdict(self).items())

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return True
            raise
    return False


def busy_ports(ports: Ports, host: str = HOST) -> list[tuple[str, int]]:
    """The named ports that something else already listens on."""
    return [(name, port) for name, port in ports.items() if port_in_use(port, host)]
