"""Issue 28 (second security review), findings 1, 6 and 9: a real ZooKeeper, real git repositories, the CLI.

1. A pull request's sealed value is never decrypted: `plan --git-base` shows every PR-supplied `{encoded: ...}`
   the same way (unknown) whatever its IV, padding or plaintext, and derives no key for it at all.
6. `apply PLAN` resolves only the secret references the manifests name for each key: an edited plan file whose
   id was recomputed cannot make apply read another variable or file. (The schema half: tests/unit/test_plan_schema.py.)
9. A path a manifest names outside the repository gets one message whatever is there, and nothing outside is
   looked at; inside the repository the messages still say what is wrong.
"""

from __future__ import annotations

import base64
import json
import os
import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git
import pytest
from kazoo.client import KazooClient

import reconciler.secrets.encoder as encoder_module
from reconciler.errors import SecretError
from reconciler.model import EntityRef, Secret, SecretRef
from reconciler.plan import _content_id
from reconciler.secrets.encoder import EncoderParams, decode, encode
from reconciler.secrets.refs import resolve
from reconciler.zk.layout import decode_entity_config, encode_entity_config, entity_path
from tests.integration.test_gitops import commit, invoke, make_repo
from tests.integration.test_security_pr import PASSWORD_KEY, cluster_yaml, password_states, topics_yaml
from tests.leakcheck import ATTACKER_BAIT, ENCODER_SECRET, KEYSTORE_PASSWORD, OUTSIDE_FILE_SECRET, ZK_CREDENTIALS

BROKER = EntityRef("brokers", "1")
PARAMS = EncoderParams(Secret(ENCODER_SECRET))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A CI runner: the base's credentials and encoder secret, and secrets an attacker would love to read."""
    monkeypatch.setenv("LK_ZK_AUTH", ZK_CREDENTIALS)
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    monkeypatch.setenv("LK_KEYSTORE", KEYSTORE_PASSWORD)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", ATTACKER_BAIT)
    monkeypatch.setenv("RECONCILER_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    for name in ("RECONCILER_ZK_ALLOWED_HOSTS", "RECONCILER_ZK_ALLOWED_HOSTS_FILE", "RECONCILER_SECRET_DIRS"):
        monkeypatch.delenv(name, raising=False)


def password_yaml(value: str) -> str:
    """Broker 1's password as a YAML flow value (`{encoded: "..."}`, `{secret: {env: X}}`)."""
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: BrokerConfig
        meta: {{broker: 1}}
        spec:
          config:
            {PASSWORD_KEY}: {value}
        """)


def sealed(encoded: str) -> str:
    return json.dumps({"encoded": encoded})


def with_field(encoded: str, name: str, value: str) -> str:
    return ",".join(f"{name}:{value}" if item.startswith(f"{name}:") else item for item in encoded.split(","))


def field(encoded: str, name: str) -> str:
    return next(item.split(":", 1)[1] for item in encoded.split(",") if item.startswith(f"{name}:"))


def iv_edits(encoded: str, count: int) -> list[str]:
    """The attack of finding 1: the base's sealed value with its IV edited (a CBC padding oracle's probes)."""
    iv = bytearray(base64.b64decode(field(encoded, "initializationVector")))
    out = []
    for guess in range(count):
        probe = bytearray(iv)
        probe[15] ^= guess + 1
        out.append(with_field(encoded, "initializationVector", base64.b64encode(bytes(probe)).decode()))
    return out


@pytest.fixture
def derivations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every PBKDF2 key derivation the process makes (decoding and encoding both derive one)."""
    calls: list[int] = []
    real = encoder_module._derive_key

    def counting(*args: Any) -> bytes:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(encoder_module, "_derive_key", counting)
    return calls


def normalised(comment: str) -> str:
    """A PR comment without what differs from commit to commit (revisions, plan ids)."""
    return re.sub(r"\b[0-9a-f]{7,64}\b", "<hex>", comment)


# --- finding 1: no decryption oracle in the PR comment -----------------------------------------------------


@pytest.mark.usefixtures("env")
def test_a_pr_sealed_value_is_never_decrypted_whatever_it_holds(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
    derivations: list[int],
) -> None:
    """IV probes, a fresh seal of the very password, a seal of another one, garbage: one state (unknown),
    one comment, one exit code, and no key derived for any of them (so no timing difference either)."""
    base_value = encode(Secret(KEYSTORE_PASSWORD), PARAMS)
    zk_client.create(entity_path(BROKER), encode_entity_config(
        {PASSWORD_KEY: encode(Secret(KEYSTORE_PASSWORD), PARAMS)}), makepath=True)
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml("a", zk_connect),
                               "clusters/a/topics.yaml": topics_yaml(86400000),
                               "clusters/a/brokers.yaml": password_yaml(sealed(base_value))})
    repo.git.checkout("-b", "feature")
    variants = {
        **{f"iv probe {i}": v for i, v in enumerate(iv_edits(base_value, 6))},
        "the same password sealed again": encode(Secret(KEYSTORE_PASSWORD), PARAMS),
        "another password": encode(Secret(ATTACKER_BAIT), PARAMS),
        "sealed with another secret": encode(Secret(KEYSTORE_PASSWORD), EncoderParams(Secret("not-the-secret-9z"))),
        "garbage ciphertext": with_field(base_value, "encryptedPassword", base64.b64encode(b"\0" * 32).decode()),
    }
    seen: dict[str, tuple[int, list[str], str]] = {}
    derivations.clear()  # (sealing the variants above derived keys)
    for name, value in variants.items():
        commit(repo, name, {"clusters/a/brokers.yaml": password_yaml(sealed(value))})
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
        assert code == 0, (name, err)
        _, comment, _ = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
        seen[name] = (code, password_states(out), normalised(comment))
        assert "sealed value is new in this pull request: not decrypted by this check" in out, name
        assert KEYSTORE_PASSWORD not in out + err + comment and ATTACKER_BAIT not in out + err + comment
    assert derivations == []  # not one key derived: nothing the PR supplied was decrypted
    assert {(code, tuple(states), comment) for code, states, comment in seen.values()} == {
        (0, ("unknown",), seen["iv probe 0"][2])}
    # the control: the base's very text is trusted and decrypted (a live value of another password: changed)
    zk_client.set(entity_path(BROKER), encode_entity_config({PASSWORD_KEY: encode(Secret(ATTACKER_BAIT), PARAMS)}))
    commit(repo, "back to the base's sealed value", {"clusters/a/brokers.yaml": password_yaml(sealed(base_value)),
                                                     "clusters/a/topics.yaml": topics_yaml(3600000)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    assert password_states(out) == ["changed"] and derivations


@pytest.mark.usefixtures("env")
def test_a_base_sealed_value_moved_to_another_key_is_not_decrypted(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
    derivations: list[int],
) -> None:
    """Trust is per entity and key: the base's ciphertext of one password, put on another key, would tell
    whether the two passwords are equal if it were decrypted and compared."""
    other_key = "listener.name.internal.ssl.keystore.password"
    base_value = encode(Secret(KEYSTORE_PASSWORD), PARAMS)
    zk_client.create(entity_path(BROKER), encode_entity_config({
        PASSWORD_KEY: encode(Secret(KEYSTORE_PASSWORD), PARAMS), other_key: encode(Secret(KEYSTORE_PASSWORD), PARAMS),
    }), makepath=True)
    root = tmp_path / "manifests"
    repo = make_repo(root)
    both = password_yaml(sealed(base_value)) + f"    {other_key}: {{secret: {{env: LK_KEYSTORE}}}}\n"
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml("a", zk_connect),
                               "clusters/a/brokers.yaml": both})
    repo.git.checkout("-b", "feature")
    moved = password_yaml(sealed(base_value)) + f"    {other_key}: {sealed(base_value)}\n"
    commit(repo, "the same value on both keys", {"clusters/a/brokers.yaml": moved})
    derivations.clear()
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    states = {c["key"]: c["redacted"] for p in json.loads(out)["plans"] for e in p["entities"] for c in e["changes"]}
    assert states == {other_key: "unknown"}  # the key the base sealed is trusted (and unchanged): not listed


# --- finding 6: apply resolves only what the manifests name ------------------------------------------------


def plan_file_repo(root: Path, connect: str, reference: str) -> git.Repo:
    repo = make_repo(root)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml("a", connect),
                               "clusters/a/brokers.yaml": password_yaml(reference),
                               "clusters/a/pw.secret": KEYSTORE_PASSWORD + "\n",
                               "elsewhere/pw.secret": ATTACKER_BAIT + "\n"})
    return repo


def edited(plan_file: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the plan as an attacker who knows the id is an unkeyed hash would: recompute it."""
    doc = json.loads(plan_file.read_text())
    plan = doc["plans"][0]
    edit(plan)
    plan["planId"] = _content_id(plan)
    plan_file.write_text(json.dumps(doc))


def password_change(plan: dict[str, Any]) -> dict[str, Any]:
    change: dict[str, Any] = next(c for e in plan["entities"] for c in e["changes"] if c["key"] == PASSWORD_KEY)
    return change


def stored_password(zk_client: KazooClient) -> str | None:
    if zk_client.exists(entity_path(BROKER)) is None:
        return None
    data, _ = zk_client.get(entity_path(BROKER))
    encoded = decode_entity_config(data, entity_path(BROKER)).get(PASSWORD_KEY)
    return None if encoded is None else decode(encoded, PARAMS).reveal()


EDITS: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "env reference swapped": ("{secret: {env: LK_KEYSTORE}}",
                              lambda p: password_change(p).update(secret={"env": "AWS_SECRET_ACCESS_KEY"})),
    "file reference swapped": ("{secret: {file: pw.secret}}",
                               lambda p: password_change(p).update(secret={"file": "../../elsewhere/pw.secret"})),
    "sealed value swapped": ("{secret: {env: LK_KEYSTORE}}",
                             lambda p: password_change(p).update(secret={"encoded": encode(Secret(ATTACKER_BAIT),
                                                                                           PARAMS)})),
    "a password the manifests do not declare": (
        "{secret: {env: LK_KEYSTORE}}",
        lambda p: p["entities"][0]["changes"].append({
            "key": "listener.name.external.ssl.key.password", "op": "+", "sensitive": True, "redacted": "changed",
            "secret": {"env": "AWS_SECRET_ACCESS_KEY"}})),
}


@pytest.mark.usefixtures("env")
@pytest.mark.parametrize("case", sorted(EDITS))
def test_an_edited_plan_file_cannot_make_apply_resolve_another_secret(
    case: str, tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
) -> None:
    reference, edit = EDITS[case]
    root = tmp_path / "manifests"
    plan_file_repo(root, zk_connect, reference)
    plan_file = tmp_path / "plan.json"
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "a", "--out", str(plan_file))
    assert code == 0, err
    edited(plan_file, edit)
    code, _out, err = invoke(capsys, "--repo", str(root), "show", str(plan_file))
    assert code == 0, err  # the recomputed id passes the id check: the id is no signature
    code, out, err = invoke(capsys, "--repo", str(root), "apply", str(plan_file), "--auto-approve")
    assert code == 1, err
    assert "not the one the cluster's manifests name" in err and "nothing was written" in err
    assert "Traceback" not in err and ATTACKER_BAIT not in out + err and "AWS_SECRET_ACCESS_KEY" not in err
    assert zk_client.exists(entity_path(BROKER)) is None  # nothing written, not even the unedited keys


@pytest.mark.usefixtures("env")
def test_apply_resolves_the_manifests_reference_from_the_manifests_directory(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
) -> None:
    """The control: an unedited plan file applies; and a plan whose change claims another manifest (its
    `source`, which decides the directory of a relative `file:`) still gets the file the manifests name."""
    root = tmp_path / "manifests"
    plan_file_repo(root, zk_connect, "{secret: {file: pw.secret}}")
    plan_file = tmp_path / "plan.json"
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "a", "--out", str(plan_file))
    assert code == 0, err
    edited(plan_file, lambda p: password_change(p).update(source=["elsewhere/brokers.yaml", 6, 5]))
    code, _out, err = invoke(capsys, "--repo", str(root), "apply", str(plan_file), "--auto-approve")
    assert code == 0, err
    assert stored_password(zk_client) == KEYSTORE_PASSWORD


@pytest.mark.usefixtures("env")
def test_a_plan_made_before_the_manifests_changed_their_reference_is_refused(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
) -> None:
    """Apply-time manifests decide: a plan file planned from another revision's reference is refused."""
    root = tmp_path / "manifests"
    repo = plan_file_repo(root, zk_connect, "{secret: {env: AWS_SECRET_ACCESS_KEY}}")
    plan_file = tmp_path / "plan.json"
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "a", "--out", str(plan_file))
    assert code == 0, err
    commit(repo, "the right variable", {"clusters/a/brokers.yaml": password_yaml("{secret: {env: LK_KEYSTORE}}")})
    code, _out, err = invoke(capsys, "--repo", str(root), "apply", str(plan_file), "--auto-approve")
    assert code == 1 and "not the one the cluster's manifests name" in err, err
    assert stored_password(zk_client) is None


MALFORMED_PLANS = ['{"formatVersion": 1, "cluster": "a", "planId": "x", "entities": 5}', '{"plans": [null]}',
                   '{"plans": [{"formatVersion": 1, "cluster": "a", "planId": "x", "entities": [{"changes": 1}]}]}',
                   '{"plans": [{"formatVersion": 1, "cluster": 5, "planId": "x"}]}', "[" * 50_000]


@pytest.mark.usefixtures("env")
@pytest.mark.parametrize("text", MALFORMED_PLANS, ids=range(len(MALFORMED_PLANS)))
def test_malformed_plan_files_end_show_and_apply_with_one_line(
    text: str, tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "manifests"
    plan_file_repo(root, zk_connect, "{secret: {env: LK_KEYSTORE}}")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(text)
    for command in (["show", str(plan_file)], ["apply", str(plan_file), "--auto-approve"]):
        code, out, err = invoke(capsys, "--repo", str(root), *command)
        assert code == 1 and out == "", (command, err)
        assert len(err.strip().splitlines()) == 1 and "cannot read plan file" in err, (command, err)


# --- finding 9: one message for every path outside the repository ------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """Outside the repository: a readable file, a directory, and a directory nobody may enter."""
    base = tmp_path / "outside"
    (base / "dir").mkdir(parents=True)
    (base / "server.properties").write_text(f"{OUTSIDE_FILE_SECRET}=1\n")
    (base / "locked").mkdir()
    (base / "locked" / "server.properties").write_text("num.io.threads=8\n")
    (base / "locked").chmod(0)
    yield base
    (base / "locked").chmod(0o755)


def static_yaml(path: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: BrokerConfig
        meta: {{broker: 1}}
        spec:
          static: {{file: {json.dumps(path)}}}
          config: {{num.io.threads: 8}}
        """)


@pytest.fixture
def looked_at(monkeypatch: pytest.MonkeyPatch, outside: Path) -> list[str]:
    """Every lstat, stat and open of a path under `outside` while the tool runs."""
    seen: list[str] = []
    for name in ("lstat", "stat", "open"):
        real = getattr(os, name)

        def spy(path: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            if isinstance(path, (str, os.PathLike)) and str(outside) in os.fspath(path):
                seen.append(os.fspath(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, spy)
    return seen


@pytest.mark.usefixtures("env")
def test_a_pr_path_outside_the_repository_gets_one_message_whatever_is_there(
    tmp_path: Path, zk_connect: str, outside: Path, capsys: pytest.CaptureFixture[str], looked_at: list[str],
) -> None:
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml("a", zk_connect)})
    repo.git.checkout("-b", "feature")
    (root / "clusters/a/to-file").symlink_to(outside / "server.properties")
    (root / "clusters/a/to-nothing").symlink_to(outside / "missing")
    (root / "clusters/a/to-dir").symlink_to(outside / "dir")
    (root / "clusters/a/to-locked").symlink_to(outside / "locked" / "server.properties")
    paths = {
        "missing": str(outside / "missing.properties"), "a file": str(outside / "server.properties"),
        "a directory": str(outside / "dir"), "behind a locked directory": str(outside / "locked/server.properties"),
        "relative": "../../../outside/server.properties", "relative, missing": "../../../outside/nothing",
        "through a link": "to-file", "a link to nothing": "to-nothing", "a link to a directory": "to-dir",
        "a link behind a lock": "to-locked", "a device": "/dev/zero", "proc": "/proc/self/environ",
        "a missing root path": "/nonexistent-lk/server.properties",
    }
    messages: dict[str, str] = {}
    for name, path in paths.items():
        commit(repo, name, {"clusters/a/brokers.yaml": static_yaml(path)})
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "github")
        assert code == 1, (name, err)
        found = [line for line in (out + err).splitlines() if "static properties file" in line]
        assert found, (name, out + err)
        messages[name] = "\n".join(line.replace(path, "PATH") for line in found)
        assert OUTSIDE_FILE_SECRET not in out + err and str(outside) not in err.replace(path, "")
    assert len(set(messages.values())) == 1, messages
    assert "is outside the cluster's directory clusters/a" in messages["missing"]
    assert looked_at == []  # nothing outside was even looked at
    # inside the repository, the messages still say what is wrong
    commit(repo, "inside", {"clusters/a/brokers.yaml": static_yaml("missing.properties")})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "github")
    assert code == 1 and "static properties file missing.properties does not exist" in out + err, out + err


def test_a_secret_file_outside_the_repository_gets_one_message_whatever_is_there(
    tmp_path: Path, outside: Path, looked_at: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECONCILER_SECRET_DIRS", raising=False)
    root = tmp_path / "repo"
    (root / "clusters/a").mkdir(parents=True)
    (root / "clusters/a/to-key").symlink_to(outside / "locked" / "key")
    where = root / "clusters/a"
    messages = set()
    for path in (str(outside / "server.properties"), str(outside / "missing"), str(outside / "locked/key"),
                 str(outside / "dir"), "to-key", "../../../outside/server.properties", "/proc/self/environ"):
        with pytest.raises(SecretError) as caught:
            resolve(SecretRef(file=path), where, root)
        messages.add(caught.value.message.replace(path, "PATH"))
    assert messages == {"secret file PATH is outside the cluster's directory clusters/a (after resolving symbolic "
                        "links); refusing to read it"}
    assert looked_at == []
    # an operator-approved directory is inside: there, the messages say what is wrong
    monkeypatch.setenv("RECONCILER_SECRET_DIRS", str(outside))
    with pytest.raises(SecretError, match="does not exist"):
        resolve(SecretRef(file=str(outside / "missing")), where, root)
    assert resolve(SecretRef(file=str(outside / "server.properties")), where, root).reveal().startswith(
        OUTSIDE_FILE_SECRET)
