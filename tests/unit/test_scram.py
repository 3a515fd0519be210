"""SCRAM users (issue 31) without servers: the formatter against RFC 7677's exchange (independent of our own
code), Kafka's stored format, the manifests' rules at their lines (all at once), the diff's ownership of a
user's credentials, the exact unchanged/changed/unknown decision, risk, and --verify's expectations.
Real brokers: tests/integration/test_brokers_scram.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path

import pytest

from reconciler.backend import read_types
from reconciler.diff import build_plan
from reconciler.errors import Diagnostic
from reconciler.manifests.planfile import read_plans, schema_problem
from reconciler.manifests.validate import load_and_validate
from reconciler.model import EntityRef, LiveEntity, LiveState, Secret, SecretRef, SecretState
from reconciler.plan import plan_from_json, plan_to_json
from reconciler.risk import annotate, scram_risk
from reconciler.secrets import scram
from reconciler.secrets.compare import SecretComparison, compare_secrets, scram_state
from reconciler.verify.expect import expectations
from reconciler.verify.judge import judge_scram
from tests.leakcheck import plant
from tests.unit.test_validate import write_repo

PASSWORD = plant("lk-unit-scram-pw-6t1z")
OTHER = plant("lk-unit-scram-other-9q3w")


# --- the formatter ------------------------------------------------------------------------------------------

def test_keys_agree_with_rfc_7677_exchange() -> None:
    """RFC 7677 §3 (SCRAM-SHA-256, user/pencil): the server signature it publishes comes from our server_key,
    and its client proof recovers our stored_key (H(ClientProof XOR HMAC(StoredKey, AuthMessage)))."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = scram.generate("SCRAM-SHA-256", Secret("pencil"), 4096, salt)
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = (f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r={nonce}").encode()
    signature = hmac.new(cred.server_key, auth, hashlib.sha256).digest()
    assert base64.b64encode(signature).decode() == "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.new(cred.stored_key, auth, hashlib.sha256).digest()
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == cred.stored_key


def test_stored_format_round_trips_and_salts_are_kafkas_shape() -> None:
    text = scram.credential_for("SCRAM-SHA-512", Secret(PASSWORD), 8192)
    assert [part.split("=", 1)[0] for part in text.split(",")] == ["salt", "stored_key", "server_key", "iterations"]
    cred = scram.from_string(text)
    assert scram.to_string(cred) == text and cred.iterations == 8192 and len(cred.stored_key) == 64
    assert scram.matches("SCRAM-SHA-512", Secret(PASSWORD), cred)
    assert not scram.matches("SCRAM-SHA-512", Secret(OTHER), cred)
    salt = cred.salt.decode("ascii")  # BigInteger(130, random).toString(36)
    assert set(salt) <= set("0123456789abcdefghijklmnopqrstuvwxyz") and 20 <= len(salt) <= 26
    assert scram.from_string(scram.credential_for("SCRAM-SHA-512", Secret(PASSWORD), 8192)).salt != cred.salt
    assert PASSWORD not in repr(cred)


@pytest.mark.parametrize("bad", ["salt=AA==,stored_key=AA==,server_key=AA==", "x", "salt=AA==,stored_key=AA==,"
                                 "server_key=AA==,iterations=ten", "salt=!!,stored_key=AA==,server_key=AA==,"
                                 "iterations=4096", "salt=AA==,stored_key=AA==,server_key=AA==,iterations=1,x=y"])
def test_values_kafka_would_not_read_are_refused(bad: str) -> None:
    with pytest.raises(scram.ScramFormatError):
        scram.from_string(bad)


# --- manifests ----------------------------------------------------------------------------------------------

def quotas(body: str) -> dict[str, str]:
    return {"clusters/c1/quotas.yaml": "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n" + body}


def errors_at(tmp_path: Path, body: str) -> list[Diagnostic]:
    write_repo(tmp_path, quotas(body))
    _, _, diags = load_and_validate(tmp_path)
    return [d for d in diags if d.severity == "error"]


def test_valid_scram_users_beside_quotas_make_one_entity(tmp_path: Path) -> None:
    write_repo(tmp_path, quotas(
        "  users:\n    alice: {producer_byte_rate: 1024}\n"
        "  scramUsers:\n"
        "    alice:\n      SCRAM-SHA-256: {password: {secret: {env: ALICE_PW}}, iterations: 8192}\n"
        "    bob:\n      SCRAM-SHA-512: {password: {secret: {file: bob.pw}}}\n"))
    _, states, diags = load_and_validate(tmp_path)
    assert [d for d in diags if d.severity == "error"] == []
    entities = states["c1"].entities
    alice = entities[EntityRef("users", "alice")].config
    assert set(alice) == {"producer_byte_rate", "SCRAM-SHA-256"}
    assert alice["SCRAM-SHA-256"].value == SecretRef(env="ALICE_PW") and alice["SCRAM-SHA-256"].iterations == 8192
    assert entities[EntityRef("users", "bob")].config["SCRAM-SHA-512"].iterations == 4096  # ConfigCommand's default


def test_kafkas_rules_are_errors_at_their_lines_all_at_once(tmp_path: Path) -> None:
    found = errors_at(tmp_path,
                      "  users:\n    carol: {SCRAM-SHA-256: 5}\n"  # line 6: not a quota
                      "  scramUsers:\n"
                      "    alice:\n      SCRAM-SHA-256: {password: {secret: {env: A}}, iterations: 4095}\n"  # 9
                      "    bob:\n      SCRAM-SHA-512: {password: {secret: {env: B}}, iterations: 16385}\n"  # 11
                      "    <default>:\n      SCRAM-SHA-256: {password: {secret: {env: C}}}\n"  # 12
                      "    dave:\n      SCRAM-SHA-1: {password: {secret: {env: D}}}\n"  # 15: schema
                      "    erin:\n      SCRAM-SHA-256: {password: plaintext}\n"  # 17: schema
                      "    '..':\n      SCRAM-SHA-256: {password: {secret: {env: E}}}\n")  # 18: no znode
    lines = sorted({d.source.line for d in found if d.source is not None})
    assert {6, 9, 11, 12, 18} <= set(lines), [d.render() for d in found]
    assert any("scramUsers" in d.message for d in found if d.source and d.source.line == 6)
    assert {15, 17} & set(lines) or any("SCRAM-SHA-1" in d.render() for d in found), [d.render() for d in found]
    assert any("4096" in d.message and "16384" in d.message for d in found if d.source and d.source.line == 9)


# --- diff, comparison, risk ---------------------------------------------------------------------------------

def _desired(tmp_path: Path, body: str, policy: str | None = None):  # type: ignore[no-untyped-def]
    write_repo(tmp_path, quotas(body))
    if policy is not None:
        cluster = tmp_path / "clusters" / "c1" / "cluster.yaml"
        cluster.write_text(cluster.read_text() + f"  policy: {{{policy}}}\n")
    _, states, diags = load_and_validate(tmp_path)
    assert [d for d in diags if d.severity == "error"] == []
    return states["c1"]


def _live(config: dict[str, str]) -> LiveState:
    ref = EntityRef("users", "alice")
    return LiveState("c1", {}, {}, {ref: LiveEntity(ref, config, 3)})


ALICE = "  scramUsers:\n    alice:\n      SCRAM-SHA-256: {password: {secret: {file: alice.pw}}, iterations: 8192}\n"


def test_unchanged_changed_and_unknown_are_decided_from_the_stored_salt(tmp_path: Path) -> None:
    desired = _desired(tmp_path, ALICE)
    (tmp_path / "clusters" / "c1" / "alice.pw").write_text(PASSWORD)
    ref, wanted = EntityRef("users", "alice"), SecretRef(file="alice.pw")
    source = desired.entities[ref].config["SCRAM-SHA-256"].source
    out = SecretComparison()
    warnings = out.warnings
    live = LiveState("c", {}, {}, {})

    def state(stored: str, iterations: int = 8192, secret: SecretRef = wanted) -> str:
        return scram_state(ref, "SCRAM-SHA-256", secret, source, iterations, stored, tmp_path, out, live).state

    same = scram.credential_for("SCRAM-SHA-256", Secret(PASSWORD), 8192)
    assert state(same) == "unchanged"
    assert state(scram.credential_for("SCRAM-SHA-256", Secret(OTHER), 8192)) == "changed"
    assert state(scram.credential_for("SCRAM-SHA-256", Secret(PASSWORD), 4096)) == "changed"  # iterations
    assert state(same, secret=SecretRef(file="missing.pw")) == "unknown"
    assert state("not a credential") == "changed"
    assert warnings and not any(PASSWORD in w for w in warnings)


def test_plan_owns_the_users_credentials_once_declared(tmp_path: Path) -> None:
    desired = _desired(tmp_path, ALICE)
    ref = EntityRef("users", "alice")
    live = _live({"SCRAM-SHA-256": "x", "SCRAM-SHA-512": "y", "producer_byte_rate": "1"})
    plan, _ = build_plan(desired, live, secret_states={(ref, "SCRAM-SHA-256"): SecretState("changed")})
    changes = {c.key: c for e in plan.entities for c in e.changes}
    assert changes["SCRAM-SHA-256"].op == "~" and changes["SCRAM-SHA-256"].iterations == 8192
    assert changes["SCRAM-SHA-512"].op == "-"  # an undeclared mechanism of a managed user goes
    again = plan_from_json(plan_to_json(plan))
    assert again == plan and PASSWORD not in plan_to_json(plan)

    quota_only = _desired(tmp_path, "  users:\n    alice: {producer_byte_rate: 1}\n")
    others, _ = build_plan(quota_only, live)
    # the credentials of a user managed only for its quotas are left alone
    assert not [e for e in others.entities if e.ref.entity_type == "users"]


def test_undeclared_credentials_are_listed_as_unmanaged_and_removed_only_with_prune_scram_users(
        tmp_path: Path) -> None:
    """A user removed from scramUsers keeps its credentials (Kafka's other tools may own them) and is named as
    unmanaged; with policy.pruneScramUsers its credentials go (disruptive), its quotas stay."""
    bob = EntityRef("users", "bob")
    live = LiveState("c1", {}, {}, {
        EntityRef("users", "alice"): LiveEntity(EntityRef("users", "alice"), {"SCRAM-SHA-256": "x"}, 3),
        bob: LiveEntity(bob, {"SCRAM-SHA-512": "y", "producer_byte_rate": "1024"}, 5)})
    nothing = _desired(tmp_path, "  users:\n    carol: {producer_byte_rate: 1}\n")
    plan, _ = build_plan(nothing, live)
    assert [e.ref for e in plan.entities if e.ref.entity_type == "users"] == [EntityRef("users", "carol")]
    assert {"users/alice", "users/bob"} <= set(plan.unmanaged)

    pruning = _desired(tmp_path, "  users:\n    carol: {producer_byte_rate: 1}\n", policy="pruneScramUsers: true")
    plan, _ = build_plan(pruning, live)
    by_ref = {e.ref: e for e in plan.entities}
    alice = by_ref[EntityRef("users", "alice")]
    assert [(c.key, c.op) for c in alice.changes] == [("SCRAM-SHA-256", "-")] and alice.delete_entity  # nothing left
    assert [(c.key, c.op) for c in by_ref[bob].changes] == [("SCRAM-SHA-512", "-")]  # the quota is kept
    assert not by_ref[bob].delete_entity and "users/bob" in plan.unmanaged and "users/alice" not in plan.unmanaged
    annotated = annotate(plan, pruning, live)
    assert {c.risk for e in annotated.entities for c in e.changes if c.key.startswith("SCRAM")} == {"disruptive"}
    # a cluster declaring no user still reads every user when it prunes credentials (else none would be seen)
    no_users = "  clients:\n    app: {producer_byte_rate: 1}\n"
    assert "users" not in read_types(_desired(tmp_path, no_users))
    assert "users" in read_types(_desired(tmp_path, no_users, policy="pruneScramUsers: true"))


def test_risk_of_each_credential_change() -> None:
    assert scram_risk("alice", "SCRAM-SHA-256", "+", "changed") == ("safe", ())
    assert scram_risk("alice", "SCRAM-SHA-256", "~", "unchanged")[0] == "safe"
    for op, redacted in (("~", "changed"), ("~", "unknown"), ("-", "changed")):
        risk, reasons = scram_risk("alice", "SCRAM-SHA-256", op, redacted)  # type: ignore[arg-type]
        assert risk == "disruptive" and "'alice'" in reasons[0]


def test_verify_expects_the_mechanism_with_its_iterations(tmp_path: Path) -> None:
    desired = _desired(tmp_path, ALICE)
    plan, _ = build_plan(desired, LiveState("c1", {}, {}, {}))
    (exp,) = [e for e in expectations(plan, [1]) if e.kind == "scram"]
    assert (exp.kind, exp.target, exp.key, exp.value) == ("scram", "alice", "SCRAM-SHA-256", "8192")
    assert judge_scram(exp, {"alice": {"SCRAM-SHA-256": 8192}}).status == "taken"
    assert judge_scram(exp, {"alice": {"SCRAM-SHA-256": 4096}}).status == "not_taken"
    assert judge_scram(exp, {}).status == "not_taken"


def test_a_pull_requests_own_reference_is_never_resolved_and_shows_unknown(tmp_path: Path) -> None:
    """PR mode (gitops/prmode.py passes `trusted_secret`): a reference the base revision does not have is not
    resolved, so the plan neither claims a change nor hides one."""
    desired = _desired(tmp_path, ALICE)
    (tmp_path / "clusters" / "c1" / "alice.pw").write_text(PASSWORD)
    stored = scram.credential_for("SCRAM-SHA-256", Secret(PASSWORD), 8192)
    live = _live({"SCRAM-SHA-256": stored})
    ref = EntityRef("users", "alice")
    assert compare_secrets(desired, live, tmp_path).states[(ref, "SCRAM-SHA-256")].state == "unchanged"
    untrusted = compare_secrets(desired, live, tmp_path, trusted_secret=lambda *_: False)
    assert untrusted.states[(ref, "SCRAM-SHA-256")].state == "unknown" and untrusted.warnings


def test_a_scram_plan_file_passes_the_plan_file_schema(tmp_path: Path) -> None:
    desired = _desired(tmp_path, ALICE)
    plan, _ = build_plan(desired, LiveState("c1", {}, {}, {}))
    text = plan_to_json(plan)
    assert schema_problem(json.loads(text)) is None
    assert [c.iterations for p in read_plans(text) for e in p.entities for c in e.changes
            if c.key == "SCRAM-SHA-256"] == [8192]
