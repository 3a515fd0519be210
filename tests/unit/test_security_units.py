"""Issue 12, pure pieces: the one GitHub workflow-command writer (finding 5), diagnostics clipped and escaped
(finding 10), the operator's host allow-list, the settings a PR may not change, PBKDF2 bounds (finding 6) and
the shipped workflow templates (finding 4)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from reconciler.allowlist import NotAllowedError, enforce_allowlist
from reconciler.errors import Diagnostic, SecretError
from reconciler.gitops.trusted import changed_settings
from reconciler.model import (
    AdminClientSpec,
    ClusterSpec,
    PasswordEncoderSpec,
    Secret,
    SecretRef,
    SourceRef,
    TlsSpec,
    ZooKeeperSpec,
)
from reconciler.render.github import annotation, escape_data, escape_property, workflow_command
from reconciler.rules.secrets import sealed_bounds_problem
from reconciler.secrets.encoder import EncoderParams, EncodingBoundsError, decode, encode

TEMPLATES = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "templates"


# --- finding 5 ---------------------------------------------------------------------------------------------


def test_github_escaping_follows_the_runner_rules() -> None:
    assert escape_data("50%\r\nx") == "50%25%0D%0Ax"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"


@pytest.mark.parametrize("evil", ["\n::add-mask::secret", "\r\n::set-output name=a::b", "x\n::stop-commands::t"])
def test_no_text_can_start_a_second_workflow_command(evil: str) -> None:
    line = annotation("error", f"bad key {evil}", file=f"clusters/a{evil},line=1.yaml", line=3, title=evil)
    assert "\n" not in line and "\r" not in line  # one line: nothing can start a second command
    command, message = line[2:].split("::", 1)  # the runner splits at the first `::` after the properties
    name, props = command.split(" ", 1)
    assert name == "error" and message.startswith("bad key ")
    assert [p.split("=", 1)[0] for p in props.split(",")] == ["file", "line", "title"]  # `,line=` stays inside
    assert props.split(",")[0].startswith("file=clusters/a") and "%2Cline=1.yaml" in props


def test_other_controls_and_bidi_are_escaped_in_commands() -> None:
    line = workflow_command("warning", "key\x1b[31m\u202etxt.exe")
    assert "\x1b" not in line and "\u202e" not in line and "\\u202e" in line


def test_diagnostics_are_clipped_and_render_on_one_safe_line() -> None:
    huge = "k" * 4_000_000
    d = Diagnostic("error", f"unknown key {huge}\n::add-mask::x", SourceRef("f.yaml", 1), huge)
    assert len(d.message) < 1_100 and len(d.key or "") < 400
    rendered = Diagnostic("error", "bidi \u202e and \x1b[2J", None, "a\u2066b").render()
    assert "\u202e" not in rendered and "\x1b" not in rendered and "\u2066" not in rendered
    assert "\\u202e" in rendered and "\\x1b" in rendered


# --- allow-list --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("patterns", "connect", "allowed"), [
    ("zk1.prod:2181,zk2.prod:2181", "zk1.prod:2181,zk2.prod:2181/kafka", True),
    ("zk1.prod:2181", "zk1.prod:2181,evil.example:2181/kafka", False),  # every host must match
    ("*.zk.prod.internal", "a.zk.prod.internal:2181,b.zk.prod.internal:2888", True),
    ("*.zk.prod.internal", "zk.prod.internal.evil.example:2181", False),
    ("10.1.2.*:2181", "10.1.2.7:2181", True),
    ("10.1.2.*:2181", "10.1.2.7:2182", False),
    ("[fd00::1]:2181", "[fd00::1]:2181/k", True),
    ("zk1", "zk1", True),  # the default port
    ("zk1", "ZK1:2181", True),  # host names are case-insensitive
])
def test_allow_list_patterns(monkeypatch: pytest.MonkeyPatch, patterns: str, connect: str, allowed: bool) -> None:
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", patterns)
    if allowed:
        enforce_allowlist(connect)
    else:
        with pytest.raises(NotAllowedError, match="allow-list"):
            enforce_allowlist(connect)


def test_no_allow_list_allows_everything_and_an_empty_file_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RECONCILER_ZK_ALLOWED_HOSTS", raising=False)
    monkeypatch.delenv("RECONCILER_ZK_ALLOWED_HOSTS_FILE", raising=False)
    enforce_allowlist("anything:2181")
    (tmp_path / "hosts").write_text("# nothing approved yet\n")
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS_FILE", str(tmp_path / "hosts"))
    with pytest.raises(NotAllowedError):
        enforce_allowlist("anything:2181")


# --- PR mode ------------------------------------------------------------------------------------------------


def test_every_connection_and_encoder_setting_counts_as_a_change() -> None:
    base = ClusterSpec("a", "3.6", ZooKeeperSpec("zk:2181/a", "digest", SecretRef(env="ZK")), (1,),
                       password_encoder=PasswordEncoderSpec(secret=SecretRef(env="ENC")))
    changes = {
        "spec.zookeeper.connect": {"connect": "evil:2181/a"},
        "spec.zookeeper.auth": {"auth_credentials": SecretRef(env="OTHER")},
        "spec.zookeeper.tls": {"tls": TlsSpec(verify_hostname=False)},
        "spec.zookeeper.reconcilerPath": {"reconciler_path": "/elsewhere"},
        "spec.zookeeper.setAcl": {"set_acl": True},
        "spec.zookeeper.sessionTimeoutSeconds": {"session_timeout_s": 5.0},
    }
    for name, change in changes.items():
        head = replace(base, zookeeper=replace(base.zookeeper, **change))
        assert changed_settings(head, base) == [name]
    head = replace(base, password_encoder=PasswordEncoderSpec(secret=SecretRef(env="ATTACKER")))
    assert changed_settings(head, base) == ["spec.passwordEncoder"]
    head = replace(base, admin=AdminClientSpec(("evil:9092",)))
    assert changed_settings(head, base) == ["spec.adminClient"]
    assert changed_settings(replace(base, brokers=(1, 2)), base) == []  # what a PR may change


# --- finding 6 ----------------------------------------------------------------------------------------------


def test_pbkdf2_bounds_are_checked_before_any_derivation() -> None:
    params = EncoderParams(Secret("s"))
    hostile = encode(Secret("pw"), params).replace("iterations:4096", "iterations:2147483647")
    with pytest.raises(EncodingBoundsError, match="2147483647 PBKDF2 iterations"):
        decode(hostile, params)  # instant: refused, not derived
    with pytest.raises(SecretError, match="keyLength"):
        decode(encode(Secret("pw"), params).replace("keyLength:128", "keyLength:4096"), params)
    with pytest.raises(EncodingBoundsError):
        EncoderParams(Secret("s"), iterations=600_001)
    assert sealed_bounds_problem(hostile) is not None
    assert sealed_bounds_problem(encode(Secret("pw"), params)) is None


# --- finding 4 ----------------------------------------------------------------------------------------------


def load(name: str) -> dict[str, object]:
    data = yaml.safe_load((TEMPLATES / name).read_text())
    assert isinstance(data, dict)
    return data


def test_the_pr_template_refuses_forks_and_gets_no_encoder_secret() -> None:
    text = (TEMPLATES / "kafka-plan.yml").read_text()
    job = load("kafka-plan.yml")["jobs"]["plan"]  # type: ignore[index]
    assert job["if"].startswith("github.event.pull_request.head.repo.full_name == github.repository &&")
    assert "self-hosted" in job["runs-on"]
    active = [line for line in text.splitlines() if "secrets." in line and not line.strip().startswith("#")]
    assert active and not any("ENCODER" in line for line in active)  # only read-only ZooKeeper credentials
    assert not any("pull_request_target" in line for line in text.splitlines() if not line.strip().startswith("#"))
    assert "--git-base" in text


def test_the_pr_template_trusts_only_the_default_branch_as_its_base() -> None:
    """Issue 38, finding 8: a PR into a branch its author pushed must not make that branch the trusted base; and
    finding 6: no `paths:` filter (a cluster's plan reads files outside clusters/ too)."""
    doc = load("kafka-plan.yml")
    trigger = doc[True]["pull_request"]  # type: ignore[index]  # YAML's `on`
    assert trigger["branches"] == ["main"] and "paths" not in trigger
    job = doc["jobs"]["plan"]  # type: ignore[index]
    assert "github.base_ref == github.event.repository.default_branch" in job["if"]
    text = (TEMPLATES / "kafka-plan.yml").read_text()
    assert "--git-base origin/${{ github.event.repository.default_branch }}" in text
    assert "github.base_ref }}" not in text  # the PR's own choice of base is never the trusted revision


def test_apply_secrets_live_behind_an_environment() -> None:
    for name, job in (("kafka-reconcile.yml", "reconcile"), ("kafka-impact-weekly.yml", "impact")):
        spec = load(name)["jobs"][job]  # type: ignore[index]
        uses_secrets = "secrets." in (TEMPLATES / name).read_text()
        assert not uses_secrets or spec.get("environment"), name
    reconcile = load("kafka-reconcile.yml")["jobs"]["reconcile"]  # type: ignore[index]
    assert reconcile["environment"] == "kafka-production"
    assert "pull_request" not in load("kafka-reconcile.yml")[True]  # type: ignore[operator]  # YAML's `on`
