"""The report's content: one row per run (per revision) from the result files, the Markdown
table and the plots (the command, `loadgate report`, is loadgate.cli.report)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COLUMNS = (
    "run", "date", "labels", "target", "profile", "executor", "rate/min", "accepted/min",
    "p99 ms", "errors", "sent", "stored", "ledger", "verdict",
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    run_id: str
    started_at: float
    labels: dict[str, str]
    target: str
    profile: str
    executor: str
    rate: int | None
    accepted_per_minute: float
    p99_ms: float | None
    error_rate: float
    sent: int
    stored: int | None
    balanced: bool
    verdict: str

    @property
    def label_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.labels.items())) or "-"

    @property
    def short_name(self) -> str:
        """What a plot calls this run: its revision label when it has one."""
        return self.labels.get("revision") or self.run_id[-6:]

    def cells(self) -> list[str]:
        return [
            self.run_id,
            time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.started_at)),
            self.label_text,
            self.target,
            self.profile,
            self.executor,
            "-" if self.rate is None else f"{self.rate:,}",
            f"{self.accepted_per_minute:,.0f}",
            "-" if self.p99_ms is None else f"{self.p99_ms:.2f}",
            f"{self.error_rate * 100:.2f}%",
            f"{self.sent:,}",
            "-" if self.stored is None else f"{self.stored:,}",
            "balanced" if self.balanced else "NOT balanced",
            self.verdict,
        ]


def row_of(data: dict[str, Any]) -> Row:
    spec = data.get("spec") or {}
    client = data.get("client") or {}
    delivered = data.get("delivered") or {}
    env = data.get("environment") or {}
    profile = (env.get("profile") or {}).get("name") or "-"
    arrival = spec.get("executor") in ("constant-arrival-rate", "ramping-arrival-rate")
    return Row(
        run_id=str(data.get("run_id")),
        started_at=float(data.get("started_at") or 0),
        labels=dict(data.get("labels") or {}),
        target=str(data.get("target") or "-"),
        profile=str(profile),
        executor=str(spec.get("executor") or "-"),
        rate=int(spec["rate"]) if arrival and spec.get("rate") is not None else None,
        accepted_per_minute=float(client.get("records_per_minute") or 0.0),
        p99_ms=client.get("p99_ms"),
        error_rate=float(client.get("error_rate") or 0.0),
        sent=int(client.get("records_sent") or 0),
        stored=delivered.get("records"),
        balanced=bool((data.get("ledger") or {}).get("balanced")),
        verdict=str(data.get("verdict") or "-"),
    )


def markdown(rows: Sequence[Row]) -> str:
    """The accumulated table as Markdown, oldest run first."""
    lines = [
        "# loadgate results",
        "",
        "One row per run. `accepted/min` and `p99 ms` come from k6; `stored` is a LogQL count "
        "of the run's records in Loki; `ledger` says whether sent = accepted = exported = stored.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[Row], out: Path) -> list[Path]:
    """Accepted log records per minute and p99 per run, as PNG files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.short_name for r in rows]
    colours = ["tab:green" if r.verdict == "PASS" else "tab:red" for r in rows]
    written: list[Path] = []
    figures: list[tuple[str, list[float], str]] = [
        ("throughput", [r.accepted_per_minute for r in rows], "log records per minute (k6)"),
        ("p99", [r.p99_ms or 0.0 for r in rows], "p99 request duration, ms (k6)"),
    ]
    for name, values, ylabel in figures:
        fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(rows) + 2), 4))
        ax.bar(range(len(rows)), values, color=colours)
        ax.set_xticks(range(len(rows)), names, rotation=45, ha="right")
        ax.set_ylabel(ylabel)
        ax.set_title("per run: green PASS, red FAIL", fontsize=10)
        fig.tight_layout()
        path = out / f"report-{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
