"""series.json: a run's pipeline over time (`measure.timeseries.RunSeries`, which fetches it),
written beside the run's result.json. It is read as any record (`files.read`, `read_all`)."""

from __future__ import annotations

import json
from pathlib import Path

from loadgate.measure.timeseries import RunSeries
from loadgate.records.result import write_atomic


def write(folder: Path, data: RunSeries) -> Path:
    """Write `data` as `folder`/series.json."""
    text = json.dumps(data.to_dict(), indent=1, allow_nan=False) + "\n"
    return write_atomic(folder / RunSeries.FILE, text)
