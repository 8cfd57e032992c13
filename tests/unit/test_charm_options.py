"""`--charm-config k=v`: checked against the options the charm declares, typed as Juju does."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgate.charms import options

CHARMCRAFT = """\
config:
  options:
    queue_size: {type: int, default: 1000}
    processors: {type: string, default: ""}
    tls_insecure_skip_verify: {type: boolean, default: false}
    ingestion-rate-mb: {type: float, default: 4.0}
"""


def test_values_are_typed_by_the_declaration(tmp_path: Path) -> None:
    procs = tmp_path / "processors.yaml"
    procs.write_text("batch:\n  timeout: 5s\n")
    got = options.parse(
        CHARMCRAFT,
        ["queue_size=5000", f"processors=@{procs}", "tls_insecure_skip_verify=false",
         "ingestion-rate-mb=8"],
        "--charm-config",
        "opentelemetry-collector-k8s",
    )  # fmt: skip
    assert got == {
        "queue_size": 5000,
        "processors": "batch:\n  timeout: 5s\n",
        "tls_insecure_skip_verify": False,
        "ingestion-rate-mb": 8.0,
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("queue_size=big", "queue_size: must be a whole number"),
        ("queue_size", "expected KEY=VALUE"),
        ("nope=1", "has no option 'nope'; its options: ingestion-rate-mb, processors"),
        ("tls_insecure_skip_verify=maybe", "must be true or false"),
        ("ingestion-rate-mb=nan", "must be a finite number"),
        ("processors=@/does/not/exist", "cannot read /does/not/exist"),
    ],
)
def test_bad_options_name_the_flag_and_option(pair: str, message: str) -> None:
    with pytest.raises(options.OptionError, match="--charm-config") as err:
        options.parse(CHARMCRAFT, [pair], "--charm-config", "opentelemetry-collector-k8s")
    assert message in str(err.value)
