"""Another application's logs beside a run: OTLP/HTTP JSON to the collector under a service name
of its own, two requests a second of `burst` records each, each stamped when sent. Neither k6
nor loadgate: what a collector in a real model also carries (tests/local/test_other_traffic.py,
benchmarks/beside_other_traffic.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

EVERY_S = 0.5  # between requests


class OtherClient:
    """Sends until stopped (a context manager); counts records acknowledged and not."""

    def __init__(self, url: str, burst: int):
        self.url = url
        self.burst = burst
        self.sent = 0
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def body(self) -> dict[str, Any]:
        now = str(time.time_ns())
        records = [
            {"timeUnixNano": now, "body": {"stringValue": f"other app line {self.sent + i}"}}
            for i in range(self.burst)
        ]
        resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "other-app"}}]}
        return {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": records}]}]}

    def _run(self) -> None:
        with httpx.Client(timeout=5.0) as client:
            while not self._stop.wait(EVERY_S):
                try:
                    ok = client.post(self.url, json=self.body()).status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    self.sent += self.burst
                else:
                    self.failed += self.burst

    def __enter__(self) -> OtherClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
