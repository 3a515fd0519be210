"""`apply PLAN` builds only what it uses of the manifests (`load_settings`): the same cluster settings as a full
load, the problems of the documents they come from, and none of the documents the plan already covers."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import Diagnostic
from reconciler.manifests.load import may_hold
from reconciler.manifests.validate import load_and_validate, load_settings
from tests.unit.test_validate import EXAMPLES, write_repo
from tests.unit.validation_cases import doc


def errors(diags: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity == "error"]


def places(diags: list[Diagnostic]) -> set[tuple[str | None, str | None]]:
    return {(d.source.file if d.source else None, d.key) for d in errors(diags)}


def test_settings_equal_those_of_the_full_desired_state() -> None:
    _, states, full_diags = load_and_validate(EXAMPLES)
    settings, diags = load_settings(EXAMPLES)
    assert not errors(full_diags) and not errors(diags)
    assert set(settings) == set(states) == {"prod-eu-1", "prod-us-1", "staging-eu-1"}
    for name, state in states.items():
        assert settings[name].cluster == state.cluster, name
        assert settings[name].static == state.static, name
    # the example's broker 1 reads a static server.properties: the comparison covers static values too
    assert settings["prod-eu-1"].static["1"]


def test_documents_apply_does_not_use_are_not_checked(tmp_path: Path) -> None:
    write_repo(tmp_path, {
        "clusters/c1/topics.yaml": doc("Topics", "  topics:\n    orders: {partitions: zero}\n"),
        "clusters/c1/quotas.yaml": doc("Quotas", "  users:\n    alice: {producer_byte_rate: lots}\n"),
    })
    _, _, full_diags = load_and_validate(tmp_path)
    assert {f for f, _ in places(full_diags)} >= {"clusters/c1/topics.yaml", "clusters/c1/quotas.yaml"}
    settings, diags = load_settings(tmp_path)
    assert not errors(diags), diags
    assert settings["c1"].cluster.zookeeper.connect == "127.0.0.1:2181/c1"


def test_problems_of_the_documents_apply_uses_are_reported_with_their_place(tmp_path: Path) -> None:
    write_repo(tmp_path, {
        "clusters/c1/cluster.yaml": doc(
            "Cluster", '  kafkaVersion: "3.6"\n  zookeeper: {connect: "h:2181", reconcilerPath: /brokers/x}\n'
            "  brokers: [1]\n", "{name: c1}"),
        "clusters/c1/brokers.yaml": doc("BrokerConfig", "  static: {file: broker.properties}\n  config: {}\n",
                                        "{broker: 1}"),
        "clusters/c1/broker.properties": "password.encoder.iterations=12\n",
        "clusters/fleet.yaml": doc("FleetDefaults", "  selector: {labels: {}}\n  policy: {maxDeletes: many}\n",
                                    "{name: all}"),
    })
    _, diags = load_settings(tmp_path)
    found = places(diags)
    assert ("clusters/c1/cluster.yaml", "reconcilerPath") in found  # the Cluster's own rule
    assert ("clusters/c1/broker.properties", "password.encoder.iterations") in found  # static encoder values
    assert any(f == "clusters/fleet.yaml" for f, _ in found)  # the fleet layer's schema
    _, _, full_diags = load_and_validate(tmp_path)
    assert found <= places(full_diags)  # nothing a full load would not report


def test_files_that_cannot_hold_a_settings_document_are_not_parsed(tmp_path: Path) -> None:
    # a Topics file with a YAML error: `plan` reports it; `apply PLAN` never parses the file (no kind it reads)
    write_repo(tmp_path, {"clusters/c1/topics.yaml": doc("Topics", "  topics:\n    orders: {partitions: [1\n")})
    _, _, full_diags = load_and_validate(tmp_path)
    assert "clusters/c1/topics.yaml" in {f for f, _ in places(full_diags)}
    settings, diags = load_settings(tmp_path)
    assert not errors(diags), diags
    assert settings["c1"].cluster.zookeeper.connect == "127.0.0.1:2181/c1"


@pytest.mark.parametrize("kind", [
    "BrokerConfig",  # spelled out: found by name
    '"Broker\\x43onfig"',  # an escape: any backslash makes the file parsed
    '"Broker\\\n  Config"',  # an escaped line break joins the two halves
])
def test_a_settings_document_in_any_file_is_found_however_its_kind_is_written(tmp_path: Path, kind: str) -> None:
    # the broker's static file sets a value the encoder rules refuse: found only if the document is read
    bad = ("apiVersion: reconciler/v1\nkind: " + kind + "\nmeta: {broker: 1}\nspec:\n"
           "  static: {file: b.properties}\n  config: {}\n")
    write_repo(tmp_path, {
        "clusters/c1/all.yaml": doc("Topics", "  topics:\n    orders: {partitions: 1}\n") + "\n---\n" + bad,
        "clusters/c1/b.properties": "password.encoder.iterations=12\n",
    })
    _, diags = load_settings(tmp_path)
    assert ("clusters/c1/b.properties", "password.encoder.iterations") in places(diags)


@pytest.mark.parametrize("data, parsed", [
    (b"kind: Topics\nspec: {}\n", False),
    (b"kind: Cluster\n", True),
    (b'kind: "Clu\\x73ter"\n', True),
    ("kind: Topics\nmeta: {name: caf\u00e9}\n".encode(), False),
    ("kind: Topics\n".encode("utf-16"), True),  # not what the loader reads: parsed, so its error is reported
    (b"kind: Topics\nname: caf\xe9\n", True),  # not UTF-8: likewise
    (b"kind: Topics\x00\n", True),
])
def test_may_hold(data: bytes, parsed: bool) -> None:
    assert may_hold(data, frozenset({"Cluster", "FleetDefaults", "BrokerConfig"})) is parsed
