"""Static checks of bundles/bundle.yaml and its overlays, and of the checker itself."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fake_juju.charms import copy_bundles, k6_charm, upstream_charm

from loadgate import paths
from loadgate.bundle import catalog as charm_catalog
from loadgate.bundle import check as bc
from loadgate.bundle import cos_lite
from loadgate.cli import main
from loadgate.juju import settings
from loadgate.stack.profile import PROFILES

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "bundles" / "bundle.yaml"
OVERLAYS = ROOT / "bundles" / "overlays"
UPSTREAM = ROOT / "src" / "loadgate" / "data" / "upstream-charms.yaml"
K6_CHARMCRAFT = ROOT / "charms" / "k6-k8s" / "charmcraft.yaml"
CI_OVERLAY = OVERLAYS / "ci-small-storage.yaml"


@pytest.fixture(scope="module")
def catalog() -> charm_catalog.Catalog:
    return charm_catalog.build(UPSTREAM, [K6_CHARMCRAFT])


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's bundles/ with the packed k6 charm next to the bundle (as
    scripts/pack-k6-charm leaves it): the bundle file in that copy."""
    return copy_bundles(tmp_path_factory.mktemp("packed") / "bundles")


def _bundle() -> dict[str, Any]:
    return yaml.safe_load(BUNDLE.read_text())


def _problems_of(
    catalog: charm_catalog.Catalog,
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    overlays: tuple[Path, ...] = (),
) -> list[str]:
    """Problems of a broken copy of the real bundle (with the packed k6 charm beside it)."""
    doc = copy.deepcopy(_bundle())
    change(doc)
    path = tmp_path / "bundle.yaml"
    path.write_text(yaml.safe_dump(doc))
    if not (tmp_path / paths.K6_CHARM_FILE).exists():
        k6_charm(tmp_path / paths.K6_CHARM_FILE)
    return [str(p) for p in bc.check_files(path, overlays, catalog)]


def _relation(doc: dict[str, Any], old: list[str], new: list[str]) -> None:
    index = doc["relations"].index(old)
    doc["relations"][index] = new


# ---- the real files ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overlays",
    bc.default_combinations(BUNDLE),
    ids=lambda combo: "+".join(p.stem for p in combo) or "bundle",
)
def test_bundle_with_each_overlay_is_valid(
    catalog: charm_catalog.Catalog, packed: Path, overlays: list[Path]
) -> None:
    assert [str(p) for p in bc.check_files(packed, overlays, catalog)] == []


def test_every_overlay_is_checked() -> None:
    checked = {p for combo in bc.default_combinations(BUNDLE) for p in combo}
    assert checked == set(OVERLAYS.glob("*.yaml"))
    assert [] in bc.default_combinations(BUNDLE)  # the bundle alone: `juju deploy ./bundle.yaml`
    assert len(checked) >= 5


def test_the_bundle_deploys_our_packed_k6_charm_as_written() -> None:
    """`juju deploy ./bundle.yaml` from bundles/: k6 is the file scripts/pack-k6-charm writes,
    with its OCI image; `k6-k8s` on Charmhub (another charm) is never asked for."""
    k6 = _bundle()["applications"]["k6"]
    charmcraft = yaml.safe_load(K6_CHARMCRAFT.read_text())
    assert k6["charm"] == f"./{paths.K6_CHARM_FILE}"
    assert f"{charmcraft['name']}.charm" == paths.K6_CHARM_FILE
    assert charmcraft["name"] == "loadgate-k6-k8s"
    image = charmcraft["resources"]["k6-image"]["upstream-source"]
    assert k6["resources"] == {"k6-image": image}
    assert "channel" not in k6
    assert set(k6["storage"]) == set(charmcraft.get("storage") or {})


def test_a_missing_packed_charm_says_to_pack_it(
    catalog: charm_catalog.Catalog, tmp_path: Path
) -> None:
    copy_bundles(tmp_path / "bundles", packed=False)
    problems = [str(p) for p in bc.check_files(tmp_path / "bundles" / "bundle.yaml", [], catalog)]
    assert problems == [
        f"k6: local charm {tmp_path / 'bundles' / paths.K6_CHARM_FILE} does not exist: "
        "run scripts/pack-k6-charm in a loadgate checkout (or python -m loadgate.gate.k6_charm "
        "pack)"
    ]


def test_bundle_has_the_pipeline_the_issue_asks_for(packed: Path) -> None:
    doc, _ = bc.load(packed)
    apps = doc["applications"]
    assert apps["loki"]["scale"] == 1  # COS Lite's one unit: the collector exports one copy
    assert bc.track_of(apps["otelcol"]["channel"]) in ("dev", "0.130")  # has receive-otlp
    assert bc.track_of(apps["loki"]["channel"]) == "3.7"
    for name, app in apps.items():
        if name != "k6":
            assert "/" in app["channel"], f"{name}: channel not pinned to a track"
    relations = {frozenset(r) for r in doc["relations"]}
    wanted = [
        ["k6:send-otlp", "otelcol:receive-otlp"],
        ["k6:receive-ca-cert", "ca:send-ca-cert"],
        ["k6:send-remote-write", "prometheus:receive-remote-write"],
        ["otelcol:send-loki-logs", "loki:logging"],
        ["otelcol:send-remote-write", "prometheus:receive-remote-write"],
        ["otelcol:receive-ca-cert", "ca:send-ca-cert"],
        ["otelcol:receive-server-cert", "ca:certificates"],
        ["loki:certificates", "ca:certificates"],
        ["loki:metrics-endpoint", "prometheus:metrics-endpoint"],
        ["grafana:ingress", "traefik:ingress"],
    ]
    for pair in wanted:
        assert frozenset(pair) in relations, f"missing relation {pair}"
    for cos in ("prometheus", "grafana", "alertmanager", "catalogue"):
        assert frozenset([f"{cos}:certificates", "ca:certificates"]) in relations
    assert frozenset(["traefik:receive-ca-cert", "ca:send-ca-cert"]) in relations


# ---- against COS Lite (data/cos-lite.yaml) ----------------------------------------------------


def test_the_bundle_differs_from_cos_lite_only_where_it_says_why() -> None:
    doc, _ = bc.load(BUNDLE)
    found = cos_lite.compare(doc, cos_lite.load())
    assert found.unexplained == ()
    assert found.stale == ()
    assert "tf-cos-lite-3.0.2" in found.reference
    kept = {k.what: k for k in found.kept}
    assert sorted(kept) == sorted(a.what for a in cos_lite.load().accepted)
    # What would change the gate's figures is named so, with why the gate is still right.
    assert kept[
        "relation alertmanager:logging - loki:logging: COS Lite has it, the bundle does not"
    ].measures
    assert not kept["grafana: channel dev/edge, COS Lite 12.4/stable"].measures
    assert all(k.why for k in found.kept)


def test_a_new_difference_from_cos_lite_must_be_explained() -> None:
    doc, _ = bc.load(BUNDLE)
    apps = dict(doc["applications"])
    apps["loki"] = {**apps["loki"], "scale": 2, "channel": "3.7/edge"}
    relations = [r for r in doc["relations"] if r != ["loki:alertmanager", "alertmanager:alerting"]]
    relations.append(["grafana:logging", "loki:logging"])
    found = cos_lite.compare({**doc, "applications": apps, "relations": relations}, cos_lite.load())
    assert not found.ok
    assert found.unexplained == (
        "loki: channel 3.7/edge, COS Lite 3.7/stable",
        "loki: scale 2, COS Lite 1",
        "relation alertmanager:alerting - loki:alertmanager: COS Lite has it, the bundle does not",
    )
    assert found.stale == (
        "relation grafana:logging - loki:logging: COS Lite has it, the bundle does not",
    )


def test_the_pipeline_under_test_is_not_compared_with_cos_lite() -> None:
    doc, _ = bc.load(BUNDLE)
    ref = cos_lite.load()
    assert not [d for d in cos_lite.differences(doc, ref) if "otelcol" in d or "k6" in d]


def test_no_committed_file_pins_an_unseen_revision() -> None:
    """The channel head is gated by default; a revision comes from --otelcol-revision, or from
    revisions.yaml with where it was seen (issue 12, point 16)."""
    assert not (OVERLAYS / "otelcol-revision.yaml").exists()
    for path in [BUNDLE, *OVERLAYS.glob("*.yaml")]:
        doc = yaml.safe_load(path.read_text())
        for app, spec in (doc.get("applications") or {}).items():
            assert "revision" not in (spec or {}), f"{path.name}: {app} pins a revision"
    for path in [
        BUNDLE,
        *OVERLAYS.glob("*.yaml"),
        *(ROOT / "tests" / "integration").glob("*.yaml"),
    ]:
        assert "UNVERIFIED" not in path.read_text().upper(), path
    _, revisions, default = settings.load_revisions(
        ROOT / "src" / "loadgate" / "data" / "integration" / "revisions.yaml"
    )
    assert default is None or default in revisions


@pytest.mark.parametrize(
    ("overlay", "profile"),
    [
        ("profile-batch.yaml", "batch"),
        ("profile-memory-limiter.yaml", "memory-limiter"),
        ("profile-batch-memory-limiter.yaml", "batch-memory-limiter"),
        ("profile-queue-5000.yaml", "queue-5000"),
    ],
)
def test_profile_overlays_match_the_local_profiles(overlay: str, profile: str) -> None:
    doc, _ = bc.load(BUNDLE, [OVERLAYS / overlay])
    options = doc["applications"]["otelcol"].get("options", {})
    wanted = PROFILES[profile]
    processors = yaml.safe_load(options["processors"]) if "processors" in options else {}
    assert processors == wanted.processors
    assert list(processors) == list(wanted.processors)  # order is pipeline order
    assert options.get("queue_size", 1000) == wanted.queue_size


def test_upstream_data_records_where_each_track_was_read(catalog: charm_catalog.Catalog) -> None:
    for charm, tracks in catalog.upstream.items():
        for track, info in tracks.items():
            assert re.search(r"canonical/\S+@[0-9a-f]{40} \(\S+\)$", info.source), (charm, track)
    otelcol = catalog.upstream["opentelemetry-collector-k8s"]
    assert "receive-otlp" in otelcol["dev"].endpoints
    assert "receive-otlp" not in otelcol["2"].endpoints


def test_cli_checks_the_real_bundle(packed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-bundle", str(packed)]) == 0
    out = capsys.readouterr().out
    assert out.count("OK") == len(bc.default_combinations(packed))
    assert "FAIL" not in out


def test_cli_fails_without_the_packed_charm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_bundles(tmp_path / "bundles", packed=False)
    assert main(["check-bundle", str(tmp_path / "bundles" / "bundle.yaml")]) == 1
    out = capsys.readouterr().out
    assert "run scripts/pack-k6-charm" in out


# ---- broken copies -------------------------------------------------------------------------


def test_relation_naming_a_missing_endpoint(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog,
        tmp_path,
        lambda d: _relation(
            d,
            ["k6:send-otlp", "otelcol:receive-otlp"],
            ["k6:send-otlp", "otelcol:receive-otlp-typo"],
        ),
    )
    assert len(problems) == 1
    assert problems[0].startswith("otelcol:receive-otlp-typo: no such endpoint")


def test_missing_endpoint_on_our_own_charm(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog,
        tmp_path,
        lambda d: _relation(
            d, ["k6:receive-ca-cert", "ca:send-ca-cert"], ["k6:receive-ca", "ca:send-ca-cert"]
        ),
    )
    assert len(problems) == 1
    assert problems[0].startswith("k6:receive-ca: no such endpoint on loadgate-k6-k8s")


def test_interface_mismatch(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog,
        tmp_path,
        lambda d: _relation(
            d,
            ["otelcol:send-loki-logs", "loki:logging"],
            ["otelcol:send-loki-logs", "prometheus:receive-remote-write"],
        ),
    )
    assert problems == [
        "otelcol:send-loki-logs: interface loki_push_api does not match "
        "prometheus:receive-remote-write interface prometheus_remote_write"
    ]


def test_roles_must_be_provides_and_requires(
    catalog: charm_catalog.Catalog, tmp_path: Path
) -> None:
    problems = _problems_of(
        catalog,
        tmp_path,
        lambda d: d["relations"].append(["k6:send-remote-write", "otelcol:send-remote-write"]),
    )
    assert len(problems) == 2
    assert problems[0].startswith("k6:send-remote-write: role requires cannot relate")
    assert problems[1] == "k6:send-remote-write: has limit 1 but 2 relations"


def test_peers_cannot_be_related(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog, tmp_path, lambda d: d["relations"].append(["loki:replicas", "k6:k6-peers"])
    )
    assert any(p.startswith("loki:replicas: is a peer endpoint") for p in problems), problems


def test_missing_trust(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(catalog, tmp_path, lambda d: d["applications"]["loki"].pop("trust"))
    assert problems == ["loki: charm loki-k8s needs `trust: true`"]


def test_missing_channel(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog, tmp_path, lambda d: d["applications"]["prometheus"].pop("channel")
    )
    assert problems == ["prometheus: charm prometheus-k8s has no `channel` and is not a local path"]


def test_missing_storage_and_scale(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    def change(d: dict[str, Any]) -> None:
        d["applications"]["loki"]["storage"].pop("loki-chunks")
        d["applications"]["grafana"].pop("scale")

    problems = _problems_of(catalog, tmp_path, change)
    assert sorted(problems) == [
        "grafana: `scale` must be a whole number of units >= 1, got None",
        "loki: storage 'loki-chunks' of loki-k8s needs a size in `storage`",
    ]


def test_track_without_receive_otlp(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog, tmp_path, lambda d: d["applications"]["otelcol"].update(channel="2/stable")
    )
    assert len(problems) == 1
    assert problems[0].startswith("otelcol:receive-otlp: no such endpoint")
    assert "track/2" in problems[0]


def test_grafana_track_2_ingress_is_traefik_route(
    catalog: charm_catalog.Catalog, tmp_path: Path
) -> None:
    problems = _problems_of(
        catalog, tmp_path, lambda d: d["applications"]["grafana"].update(channel="2/edge")
    )
    assert problems == [
        "grafana:ingress: interface traefik_route does not match traefik:ingress interface ingress"
    ]


def test_unrecorded_track(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog, tmp_path, lambda d: d["applications"]["loki"].update(channel="9.9/edge")
    )
    assert problems == [
        "loki: channel 9.9/edge: no recorded endpoints for track '9.9' of loki-k8s; "
        "recorded tracks: 2, 3.7, dev"
    ]


def test_insecure_skip_verify_is_refused(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog,
        tmp_path,
        lambda d: d["applications"]["otelcol"].update(options={"tls_insecure_skip_verify": True}),
    )
    assert problems == [
        "otelcol: option tls_insecure_skip_verify must not be set: TLS is verified everywhere"
    ]


def test_endpoint_limit(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    def change(d: dict[str, Any]) -> None:
        d["applications"]["otelcol2"] = copy.deepcopy(d["applications"]["otelcol"])
        d["relations"].append(["k6:send-otlp", "otelcol2:receive-otlp"])

    problems = _problems_of(catalog, tmp_path, change)
    assert problems == ["k6:send-otlp: has limit 1 but 2 relations"]


def test_relation_to_a_missing_application(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(
        catalog, tmp_path, lambda d: d["relations"].append(["tempo:tracing", "otelcol:send-traces"])
    )
    assert problems == ["tempo:tracing: relation names an application the bundle does not have"]


def test_local_charm_needs_its_image(catalog: charm_catalog.Catalog, tmp_path: Path) -> None:
    problems = _problems_of(catalog, tmp_path, lambda d: d["applications"]["k6"].pop("resources"))
    assert problems == [
        "k6: local charm loadgate-k6-k8s needs resource 'k6-image' set in `resources`"
    ]


def test_a_packed_upstream_charm_is_read_from_its_metadata(
    catalog: charm_catalog.Catalog, tmp_path: Path
) -> None:
    """An overlay that deploys a packed otelcol (its repository's CI) is checked against the
    endpoints inside that .charm, and must give its image."""
    packed = upstream_charm(
        tmp_path / "otelcol.charm", "opentelemetry-collector-k8s", "dev",
        {"opentelemetry-collector-image": "img:1"},
    )  # fmt: skip
    good = tmp_path / "local-otelcol.yaml"
    good.write_text(
        f"applications:\n  otelcol:\n    charm: {packed}\n"
        "    resources: {opentelemetry-collector-image: 'img:1'}\n"
    )
    assert _problems_of(catalog, tmp_path, lambda d: None, overlays=(good,)) == []
    no_image = tmp_path / "no-image.yaml"
    no_image.write_text(f"applications:\n  otelcol:\n    charm: {packed}\n")
    assert _problems_of(catalog, tmp_path, lambda d: None, overlays=(no_image,)) == [
        "otelcol: local charm opentelemetry-collector-k8s needs resource "
        "'opentelemetry-collector-image' set in `resources`"
    ]
    broken = tmp_path / "broken.charm"
    broken.write_text("not a zip")
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"applications:\n  otelcol:\n    charm: {broken}\n")
    problems = _problems_of(catalog, tmp_path, lambda d: None, overlays=(bad,))
    assert len(problems) == 1
    assert "not a packed charm" in problems[0]


def test_cli_fails_and_names_the_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _bundle()
    _relation(
        doc, ["otelcol:send-loki-logs", "loki:logging"], ["otelcol:send-logs", "loki:logging"]
    )
    broken = tmp_path / "bundle.yaml"
    broken.write_text(yaml.safe_dump(doc))
    k6_charm(tmp_path / paths.K6_CHARM_FILE)
    assert main(["check-bundle", str(broken), "--overlay", str(CI_OVERLAY)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "otelcol:send-logs: no such endpoint" in out


def test_cli_unreadable_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bundle.yaml"
    bad.write_text("applications: [unclosed\n")
    assert main(["check-bundle", str(bad), "--overlay", str(CI_OVERLAY)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


# ---- overlay merging -----------------------------------------------------------------------


def test_merge_like_juju() -> None:
    base: dict[str, Any] = {
        "applications": {
            "a": {"charm": "x", "options": {"o1": 1, "o2": 2}, "scale": 1},
            "b": {"charm": "y"},
        },
        "relations": [["a:p", "b:r"]],
    }
    overlay = {
        "applications": {"a": {"options": {"o2": 20}, "scale": 3}, "b": None, "c": {"charm": "z"}},
        "relations": [["a:p", "c:r"]],
    }
    merged = bc.merge(base, overlay)
    assert merged["applications"] == {
        "a": {"charm": "x", "options": {"o1": 1, "o2": 20}, "scale": 3},
        "c": {"charm": "z"},
    }
    assert merged["relations"] == [["a:p", "c:r"]]
    assert base["applications"]["a"]["options"] == {"o1": 1, "o2": 2}  # base untouched


@pytest.mark.parametrize(
    ("channel", "track"),
    [("3.7/edge", "3.7"), ("edge", "latest"), ("latest/stable", "latest"), ("dev/edge/fix", "dev")],
)
def test_track_of(channel: str, track: str) -> None:
    assert bc.track_of(channel) == track


# ---- config options, where the charm's are recorded ------------------------------------------


def test_every_overlays_options_are_the_charms_of_their_type(
    catalog: charm_catalog.Catalog,
) -> None:
    for overlay in OVERLAYS.glob("*.yaml"):
        doc, _ = bc.load(BUNDLE, [overlay])
        problems = [str(p) for p in bc.check(doc, catalog) if "option" in str(p)]
        assert problems == [], overlay.name


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"ingestion-rate-mb": 8.5},
            "option ingestion-rate-mb of loki-k8s must be a whole number (int): 8.5",
        ),
        ({"ingestion-rate-mb": True}, "must be a whole number (int): True"),
        ({"ingestion_rate_mb": 32}, "loki-k8s has no option 'ingestion_rate_mb'"),
        ({"reporting-enabled": "no"}, "option reporting-enabled of loki-k8s must be true or false"),
    ],
)
def test_a_wrong_option_is_refused_before_juju_sees_it(
    catalog: charm_catalog.Catalog, options: dict[str, object], message: str
) -> None:
    doc, _ = bc.load(BUNDLE)
    doc["applications"]["loki"]["options"] = options
    problems = [str(p) for p in bc.check(doc, catalog)]
    assert [p for p in problems if message in p], problems
