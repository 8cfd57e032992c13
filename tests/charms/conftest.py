"""Fixtures of the charm-rendering suites: the real otelcol and Loki charms, run offline.

They read the pinned upstream snapshots in ../shared/charm-sources (or $LOADGATE_CHARM_SOURCES);
without them the suite fails with that reason (it never skips). Virtualenvs and rendered code
are cached under the loadgate cache (about 10 s per charm lock the first time).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgate.stack import tls
from loadgate.charms import render, sources
from support.charm_render import LOKI_VERSION, OTELCOL_VERSION



@pytest.fixture(scope="session")
def snapshots() -> Path:
    folder = sources.sources_dir()
    if folder is None:
        pytest.fail(
            "no charm snapshots: expected ../shared/charm-sources beside the checkout or "
            f"${sources.ENV_SOURCES_DIR}"
        )
    return folder


@pytest.fixture(scope="session")
def otelcol_main(snapshots: Path) -> sources.CharmSource:
    return sources.resolve(sources.parse("otelcol", "rev221", snapshots))


@pytest.fixture(scope="session")
def otelcol_rev160(snapshots: Path) -> sources.CharmSource:
    return sources.resolve(sources.parse("otelcol", "rev160", snapshots))


@pytest.fixture(scope="session")
def loki_pinned(snapshots: Path) -> sources.CharmSource:
    return sources.resolve(sources.default_spec("loki", snapshots))


@pytest.fixture(scope="session")
def ca() -> tls.TLSMaterial:
    return tls.generate()


@pytest.fixture(scope="session")
def pipeline(
    otelcol_main: sources.CharmSource,
    loki_pinned: sources.CharmSource,
    ca: tls.TLSMaterial,
    tmp_path_factory: pytest.TempPathFactory,
) -> render.RenderedPipeline:
    return render.render_pipeline(
        otelcol_main,
        loki_pinned,
        tmp_path_factory.mktemp("render") / "pipeline",
        ca_cert=ca.ca_cert_pem.decode(),
        ca_key=ca.ca_key_pem.decode(),
        otelcol_options={},
        loki_options={},
        otelcol_version=OTELCOL_VERSION,
        loki_version=LOKI_VERSION,
    )


@pytest.fixture(scope="session")
def prometheus_pinned(snapshots: Path) -> sources.CharmSource:
    return sources.resolve(sources.default_spec("prometheus", snapshots))


@pytest.fixture(scope="session")
def signals_pipeline(
    otelcol_main: sources.CharmSource,
    loki_pinned: sources.CharmSource,
    prometheus_pinned: sources.CharmSource,
    ca: tls.TLSMaterial,
    tmp_path_factory: pytest.TempPathFactory,
) -> render.RenderedPipeline:
    """The collector related as for every signal: Prometheus (remote write) and Tempo
    (tracing) written by their provider libraries from the Prometheus charm's lib/."""
    return render.render_pipeline(
        otelcol_main,
        loki_pinned,
        tmp_path_factory.mktemp("render") / "signals",
        ca_cert=ca.ca_cert_pem.decode(),
        ca_key=ca.ca_key_pem.decode(),
        otelcol_options={},
        loki_options={},
        otelcol_version=OTELCOL_VERSION,
        loki_version=LOKI_VERSION,
        signals=("logs", "metrics", "traces"),
        provider_lib=prometheus_pinned.path / "lib",
    )
