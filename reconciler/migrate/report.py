"""`migrate-check`: what a ZooKeeper → KRaft migration (KIP-866) will meet in one cluster's dynamic state, from
its live state (pure: the passwords that do not decode are found by the caller, which has the secret).

What the migration does with each part, and where Kafka says so (3.9's sources):
* passwords: the controllers decode every encoded password with their own `password.encoder.secret` and
  write the plaintext into the metadata log (`ZkConfigMigrationClient.iterateBrokerConfigs` →
  `EncryptingPasswordEncoder.decode`). One they cannot decode throws ConfigException("Password could not be
  decoded"), and the whole migration **aborts**: `KRaftMigrationDriver.MigrateMetadataEvent` logs "Aborting the
  metadata migration from ZooKeeper to KRaft" and calls `abortMigration()`, which ends the controller through
  its fatal fault handler; the migration's records are one metadata transaction, so nothing is migrated
  (3.9.1's sources). A controller without any secret decodes with `PasswordEncoder.NOOP` and would migrate
  the encoded text itself as the password: the check needs a secret;
* configs: KRaft has no ZooKeeper, no encoder and none of the configs Kafka 4.0 removed (`Catalog.removed`):
  such keys are carried over but **ignored** (and refused as soon as 4.x validates a change to them);
* ACLs: migrated (`ZkAclMigrationClient`); the brokers' authorizer must become KRaft's `StandardAuthorizer`
  (`kafka.security.authorizer.AclAuthorizer` reads ZooKeeper);
* SCRAM credentials: migrated only once the metadata version supports them (3.5-IV2, KIP-866's notes);
* quotas: written as ClientQuotaRecords; a KRaft controller **rejects** later changes to an entity whose keys
  it does not accept (`ClientQuotaControlManager.validateQuotaKeyValue`: a key not valid for the entity
  type, a value ≤ 0, a fraction for an INT/LONG quota).
Exit codes as `plan --detailed-exitcode`: 0 nothing found, 2 findings, 1 error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from reconciler.catalog import SCRAM_KEYS, Catalog
from reconciler.errors import printable
from reconciler.model import ClusterSpec, EntityRef, LiveState
from reconciler.units import counted

Kind = Literal["abort", "rejected", "ignored", "action"]
KINDS: tuple[Kind, ...] = ("abort", "rejected", "ignored", "action")
_HEADINGS = {
    "abort": "Aborts the migration",
    "rejected": "Rejected by KRaft",
    "ignored": "Ignored by KRaft",
    "action": "To do around the migration",
}


@dataclass(frozen=True, slots=True)
class Finding:
    kind: Kind
    where: str  # an entity (`brokers/1`), `ACLs`, `SCRAM`
    key: str | None
    message: str


@dataclass(frozen=True, slots=True)
class MigrationReport:
    cluster: str
    findings: tuple[Finding, ...]
    checked_passwords: int
    cluster_yaml: str  # the spec change: kraft replacing zookeeper

    @property
    def clean(self) -> bool:
        return not self.findings


def _scope(ref: EntityRef) -> str:
    return "broker" if ref.entity_type == "brokers" else "topic"


def _quota_findings(ref: EntityRef, config: dict[str, str], catalog: Catalog) -> Iterable[Finding]:
    for key, value in sorted(config.items()):
        if key in SCRAM_KEYS:
            continue
        known = catalog.quota(ref.quota_kind, key)
        if known is None:
            yield Finding("rejected", ref.display, key, f"not a quota key of a {ref.quota_kind} entity: the "
                          "controllers refuse it (ClientQuotaControlManager: Invalid configuration key)")
            continue
        try:
            number = float(value)
        except ValueError:
            yield Finding("rejected", ref.display, key, "not a number: the controllers refuse it")
            continue
        if number <= 0:
            yield Finding("rejected", ref.display, key, f"{printable(value)} is not greater than 0: the controllers "
                          "refuse it (ClientQuotaControlManager.validateQuotaKeyValue)")
        elif known.type in ("INT", "LONG", "SHORT") and abs(number % 1.0) > 1e-6:
            yield Finding("rejected", ref.display, key, f"{printable(value)} is fractional and {key} is "
                          f"{known.type}: the controllers refuse it (cannot be a fractional value)")


def migration_report(cluster: ClusterSpec, live: LiveState, catalog: Catalog,
                     undecodable: Sequence[tuple[EntityRef, str]], checked_passwords: int,
                     bootstrap: Sequence[str] = ()) -> MigrationReport:
    """The findings for `live`; `undecodable`: the (entity, key) passwords the controllers' secret does not
    decode; `bootstrap`: the KRaft bootstrap servers for the cluster.yaml change (default: a placeholder)."""
    findings = [Finding("abort", ref.display, key, "does not decode with the secret the controllers will be given "
                        "(password.encoder.secret): the migration aborts on it (ConfigException \"Password could "
                        "not be decoded\"; \"Aborting the metadata migration from ZooKeeper to KRaft\", a fatal "
                        "fault that stops the controller; nothing is migrated); before migrating, give the "
                        "controllers the secret it was encoded with, or re-set it with theirs")
                for ref, key in sorted(undecodable)]
    for ref, entity in sorted(live.entities.items()):
        if ref.entity_type in ("brokers", "topics"):
            for key in sorted(entity.config):
                removed = catalog.removed(_scope(ref), key, "4.0")
                if removed is not None:
                    findings.append(Finding("ignored", ref.display, key, f"KRaft ignores it (removed in Kafka "
                                            f"{removed[0]}): use {removed[1]}"))
        elif ref.entity_type in ("clients", "users", "ips"):
            findings.extend(_quota_findings(ref, dict(entity.config), catalog))
    scram_users = sorted(ref.name for ref, e in live.entities.items()
                         if ref.entity_type == "users" and ref.client is None and SCRAM_KEYS & set(e.config))
    if scram_users:
        shown = ", ".join(printable(u) for u in scram_users[:5]) + (" …" if len(scram_users) > 5 else "")
        findings.append(Finding("action", "SCRAM", None, f"{len(scram_users)} user(s) with SCRAM credentials "
                                f"({shown}): migrated only with metadata.version 3.5-IV2 or later (KIP-866); "
                                "check `kafka-features.sh describe` before starting"))
    acls = live.acls or {}
    if acls:
        entries = sum(len(a.entries) for a in acls.values())
        findings.append(Finding("action", "ACLs", None,
                                f"{len(acls)} resource pattern(s), {counted(entries, 'entry', 'entries')}: "
                                "migrated into the metadata log; set authorizer.class.name=org.apache.kafka."
                                "metadata.authorizer.StandardAuthorizer on the KRaft controllers and, after the "
                                "migration, on the brokers (AclAuthorizer reads ZooKeeper)"))
    return MigrationReport(cluster.name, tuple(findings), checked_passwords, cluster_yaml_change(cluster, bootstrap))


def cluster_yaml_change(cluster: ClusterSpec, bootstrap: Sequence[str]) -> str:
    """The lines of cluster.yaml that change once the cluster runs on KRaft: `kraft:` replaces `zookeeper:`
    (and passwordEncoder goes: KRaft has no encoder)."""
    servers = ",".join(bootstrap) or (",".join(cluster.admin.bootstrap_servers) if cluster.admin else "HOST:9092")
    lines = [f"-  zookeeper: {{connect: \"{printable(cluster.zookeeper.connect)}\"}}",
             f"+  kraft: {{bootstrapServers: \"{printable(servers)}\"}}"]
    if cluster.password_encoder is not None:
        lines.append("-  passwordEncoder: {…}   # KRaft has no encoder (and Kafka 4.0 removed password.encoder.*)")
    return "\n".join(lines)


def render_text(report: MigrationReport) -> str:
    out = [f"Cluster {report.cluster}: ZooKeeper → KRaft migration check (KIP-866)", ""]
    if report.clean:
        out.append("Nothing found: every password decodes with the controllers' secret "
                   f"({report.checked_passwords} checked); no config, quota, ACL or SCRAM credential needs attention.")
    for kind in KINDS:
        found = [f for f in report.findings if f.kind == kind]
        if not found:
            continue
        out.append(f"{_HEADINGS[kind]} ({len(found)}):")
        for f in found:
            where = f"{f.where} {f.key}" if f.key else f.where
            out.append(f"  {printable(where)}: {f.message}")
        out.append("")
    out += ["", "cluster.yaml once migrated:", *("  " + line for line in report.cluster_yaml.splitlines()),
            "", f"{len(report.findings)} finding(s); {report.checked_passwords} password(s) checked."]
    return "\n".join(out).replace("\n\n\n", "\n\n") + "\n"


def render_json(report: MigrationReport) -> str:
    return json.dumps({"cluster": report.cluster, "clean": report.clean, "checkedPasswords": report.checked_passwords,
                       "findings": [asdict(f) for f in report.findings], "clusterYaml": report.cluster_yaml},
                      indent=2, sort_keys=True) + "\n"


__all__ = ["Finding", "MigrationReport", "migration_report", "render_json", "render_text"]
