"""Execute a plan on a KRaft cluster through its Admin API: the same plan a ZooKeeper cluster gets, written
with the requests Kafka's own tools send in KRaft mode (`kafka-configs.sh` / `kafka-topics.sh` /
`kafka-acls.sh`: `Admin.incrementalAlterConfigs`, `createTopics`, `createPartitions`, `deleteTopics`,
`alterClientQuotas`, `createAcls` / `deleteAcls`, `alterUserScramCredentials`), as kraft/operations.py
shapes and orders them.

Before anything is written: what the plan saw is read again (`stale_changes`, exit 3 when the cluster changed
since: KRaft has no znode versions), every request Kafka can validate without writing is sent with
`validateOnly` (IncrementalAlterConfigs, CreateTopics, CreatePartitions, AlterClientQuotas: the brokers' and
controllers' own validation) and what has no validateOnly is checked the way Kafka will (`precheck`:
`delete.topic.enable` for DeleteTopics; one alteration per user per SCRAM request, iterations within
`ScramMechanism`'s bounds). A refusal there is an error naming the entity and Kafka's message, and nothing is
written.

Then the writes, one request at a time in `operations`' order. Kafka answers each item of a request
(a topic, a user, an ACL) on its own, so when it refuses one the apply stops after that request and says
exactly which units were written, which were refused (with Kafka's message) and which were not sent
(`WriteReport`); the state records what was written, so the next plan shows exactly the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import Diagnostic, ReconcilerError, RefusedError, clip, interrupts_deferred, printable
from reconciler.kraft import aclfilters
from reconciler.kraft.admin import (
    BROKER,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    KraftAdmin,
    Refusal,
)
from reconciler.kraft.features import finalized_levels, update_features
from reconciler.kraft.groups import RESOURCES as GROUP_RESOURCES
from reconciler.kraft.operations import Operations, Step, Unit, operations
from reconciler.kraft.read import dynamic_values, topic_values
from reconciler.model import DEFAULT_ENTITY, ClusterSpec
from reconciler.plan import Plan
from reconciler.secrets.scram import MAX_ITERATIONS, MIN_ITERATIONS

__all__ = ["KraftApplyError", "WriteReport", "operations", "plaintext_password_problem", "precheck",
           "stale_changes", "validate", "write"]

SHOWN = 50  # units named per line of a report (the rest counted)


class KraftApplyError(ReconcilerError):
    """The cluster refused part of a plan (validateOnly or the write itself)."""


def plaintext_password_problem(plan: Plan, cluster: ClusterSpec) -> str | None:
    """Why this plan may not send passwords or SCRAM credentials over this connection, or None:
    IncrementalAlterConfigs carries a password in plaintext and the controllers store it as sent (no encoder);
    AlterUserScramCredentials carries the salt and salted password, which is enough to log in as the user
    (`ScramSaslServer` checks a client proof against them). So the admin connection must be TLS (SSL,
    SASL_SSL) unless spec.kraft.allowPlaintextPasswords says the operator accepts it."""
    kraft = cluster.kraft
    if kraft is None or kraft.allow_plaintext_passwords or kraft.admin.security_protocol in ("SSL", "SASL_SSL"):
        return None
    sent = [f"{e.ref.display} {c.key}" for e in plan.entities for c in e.changes if c.sensitive and c.op != "-"]
    if not sent:
        return None
    return (f"cluster {plan.cluster}: the plan sends {len(sent)} password(s) or SCRAM credential(s) "
            f"({printable(', '.join(sent[:5]))}) over a {kraft.admin.security_protocol} connection: a password "
            "is stored as sent and a SCRAM credential's salted password is enough to log in, both readable on the "
            "wire; use kraft.securityProtocol SSL or SASL_SSL, or set kraft.allowPlaintextPasswords: true")


def refuse_plaintext_passwords(plan: Plan, cluster: ClusterSpec) -> None:
    problem = plaintext_password_problem(plan, cluster)
    if problem is not None:
        raise RefusedError(problem)


def stale_changes(admin: KraftAdmin, plan: Plan) -> list[str]:
    """What changed on the cluster since `plan` was made (KRaft has no znode versions to guard writes with, so
    the values the plan saw are read again): a key set or removed meanwhile, another value, a topic created or
    grown meanwhile. Passwords only by presence (their values never come back)."""
    problems: list[str] = []
    topics = [e for e in plan.entities if e.ref.entity_type == "topics"]
    answers = admin.topic_overrides(sorted({e.ref.name for e in topics}))
    for entity in plan.entities:
        ref = entity.ref
        if ref.entity_type == "topics":
            if ref.name not in answers:
                continue  # created by this very plan (or deleted meanwhile: CreateTopics/validateOnly says)
            live = topic_values(answers[ref.name])
        elif ref.entity_type == "brokers":
            name = "" if ref.name == DEFAULT_ENTITY else ref.name
            answer = admin.describe_configs(BROKER, [name], node=int(name) if name else None).get(name, [])
            live = dynamic_values(answer, DYNAMIC_DEFAULT_BROKER_CONFIG if not name else DYNAMIC_BROKER_CONFIG)
        elif ref.entity_type in GROUP_RESOURCES:  # groups, client-metrics (kraft/groups.py)
            rtype, _name, source = GROUP_RESOURCES[ref.entity_type]
            live = dynamic_values(admin.describe_configs(rtype, [ref.name]).get(ref.name, []), source)
        elif ref.entity_type == "features":
            live = {k: str(v) for k, v in finalized_levels(admin).items()}  # 0: not finalized
        else:
            continue
        for change in entity.changes:
            now = live.get(change.key)
            if change.op == "+" and now is not None:
                problems.append(f"{ref.display} {change.key}: set meanwhile")
            elif change.op != "+" and now is None:
                problems.append(f"{ref.display} {change.key}: removed meanwhile")
            elif change.op != "+" and not change.sensitive and now != change.before:
                problems.append(f"{ref.display} {change.key}: changed meanwhile")
    if plan.topics_to_create or plan.partition_increases:
        layouts = {str(t.get("name") if "name" in t else t.get("topic")): len(t.get("partitions") or ())
                   for t in admin.topics() if t.get("error_code", 0) == 0}
        problems += [f"topic {t.name}: created meanwhile" for t in plan.topics_to_create if t.name in layouts]
        problems += [f"topic {p.name}: has {layouts.get(p.name, 0)} partitions now, the plan saw {p.current}"
                     for p in plan.partition_increases if layouts.get(p.name) != p.current]
    return [printable(line) for line in problems]


def _said(refusals: Sequence[Refusal], what: str) -> list[str]:
    return [printable(clip(f"{what} {r.what or '<default>'}: {r.error}: {r.message}", 400)) for r in refusals]


def as_errors(lines: Sequence[str]) -> list[Diagnostic]:
    return [Diagnostic("error", line) for line in lines]


_VALIDATED = {"IncrementalAlterConfigs", "CreateTopics", "CreatePartitions", "AlterClientQuotas", "UpdateFeatures"}


def validate(admin: KraftAdmin, ops: Operations) -> list[str]:
    """Every request Kafka validates without writing, sent with validateOnly; the refusals, each naming its
    entity and Kafka's message (which names the key)."""
    problems: list[str] = []
    for step in ops.steps:
        if step.request in _VALIDATED:
            problems += [line for r, unit in _send(admin, step, validate_only=True)
                         for line in _said([r], unit.label + ":")]
    return problems


def precheck(admin: KraftAdmin, ops: Operations) -> list[str]:
    """What Kafka cannot validate without writing, checked as Kafka will check it: topic deletion enabled
    (`delete.topic.enable`, else every DeleteTopics is refused with TopicDeletionDisabledException); one
    alteration per user per AlterUserScramCredentials request; iterations within ScramMechanism's bounds."""
    problems: list[str] = []
    if ops.of("DeleteTopics"):
        enabled = {c.name: c.value for c in admin.describe_configs(BROKER, [""]).get("", [])}
        if (enabled.get("delete.topic.enable") or "true").lower() == "false":
            problems.append("delete topic: delete.topic.enable=false on the cluster: Kafka refuses every topic "
                            "deletion (TopicDeletionDisabledException)")
    for step in ops.of("AlterUserScramCredentials"):
        users = [a.user for a in step.payloads]
        problems += [f"users/{u}: two SCRAM alterations in one request" for u in sorted(set(users))
                     if users.count(u) > 1]
        problems += [f"users/{a.user} {a.mechanism.name}: iterations {a.iterations} outside "
                     f"{MIN_ITERATIONS}..{MAX_ITERATIONS} (ScramMechanism)" for a in step.payloads
                     if getattr(a, "iterations", None) is not None
                     and not MIN_ITERATIONS <= a.iterations <= MAX_ITERATIONS]
    return [printable(p) for p in problems]


_IN_ORDER = {"AlterUserScramCredentials": "alter_scram", "CreateAcls": "create_acls", "DeleteAcls": "delete_acls"}


def _quota_name(entity: Sequence[tuple[str, str | None]]) -> str:
    return ",".join(f"{kind}={name}" for kind, name in entity)


def _send(admin: KraftAdmin, step: Step, validate_only: bool = False) -> list[tuple[Refusal, Unit]]:
    """One step's request(s); each refusal with the unit it concerns."""
    payloads, units = step.payloads, step.units
    if step.request == "IncrementalAlterConfigs":  # one request (operations._config_steps)
        by_resource = {(rtype, name): unit for (rtype, name, _), unit in zip(payloads, units, strict=True)}
        rtype, name, _ = payloads[0]
        node = int(name) if rtype == BROKER and name else None  # a broker's own resource goes to that broker
        return [(r, by_resource.get((kind, r.what)) or Unit(r.what))
                for kind, r in admin.alter_many(payloads, validate_only=validate_only, node=node)]
    by_name: dict[str, Unit] = {}
    if step.request == "CreateTopics":
        answers = admin.create_topics(dict(payloads), validate_only=validate_only)
        by_name = {name: u for (name, _), u in zip(payloads, units, strict=True)}
    elif step.request == "CreatePartitions":
        answers = admin.create_partitions(dict(payloads), validate_only=validate_only)
        by_name = {name: u for (name, _), u in zip(payloads, units, strict=True)}
    elif step.request == "AlterClientQuotas":
        answers = admin.alter_client_quotas(payloads, validate_only=validate_only)
        by_name = {_quota_name(entity): u for (entity, _), u in zip(payloads, units, strict=True)}
    elif step.request == "DeleteTopics":
        answers = admin.delete_topics(payloads)
        by_name = dict(zip(payloads, units, strict=True))
    elif step.request == "UpdateFeatures":  # kraft/features.py: one request, refused per feature
        answers = update_features(admin, payloads, validate_only)
        by_name = {u.feature: unit for u, unit in zip(payloads, units, strict=True)}
    else:  # AlterUserScramCredentials, CreateAcls, DeleteAcls: answers in request order
        send: Callable[[Sequence[Any]], list[Refusal]] = getattr(admin, _IN_ORDER[step.request])
        return [(r, units[r.index]) for r in send(payloads)]
    return [(r, by_name.get(r.what) or Unit(r.what)) for r in answers]


@dataclass
class WriteReport:
    """What an apply's writes did: units written, refused (with Kafka's message) and not sent."""

    written: list[Unit] = field(default_factory=list)
    refused: list[tuple[Unit, str]] = field(default_factory=list)
    not_sent: list[Unit] = field(default_factory=list)
    unknown: list[Unit] = field(default_factory=list)  # the request in flight when a second signal ended it
    requests: int = 0
    failure: str | None = None  # a request that got no answer (the connection failed): its units are unknown
    # ACL entries a principal's filter deleted that the plan did not remove, created again / not (kraft/aclfilters.py)
    restored: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.refused and not self.not_sent and not self.unknown and not self.lost

    def summary(self) -> dict[str, Any]:
        """What the audit entry records of a partial apply (labels name entities and keys, never values)."""
        return {"requests": self.requests, "written": [u.label for u in self.written][:SHOWN],
                "writtenCount": len(self.written),
                "refused": [f"{u.label}: {clip(m, 300)}" for u, m in self.refused],
                "unknown": [u.label for u in self.unknown][:SHOWN],
                "notWritten": [u.label for u in self.not_sent][:SHOWN], "notWrittenCount": len(self.not_sent),
                **({"restored": self.restored[:SHOWN], "lost": self.lost} if self.restored or self.lost else {})}

    def lines(self) -> list[str]:
        def named(units: Sequence[str]) -> str:
            shown = ", ".join(clip(u, 160) for u in units[:SHOWN])
            return shown + (f" (and {len(units) - SHOWN} more)" if len(units) > SHOWN else "") if units else "none"

        return [printable(line) for line in (
            f"  written ({len(self.written)}): {named([u.label for u in self.written])}",
            *(f"  refused: {u.label}: {clip(message, 400)}" for u, message in self.refused),
            *([f"  unknown ({len(self.unknown)}, the request in flight{': ' + self.failure if self.failure else ''}"
               f"): {named([u.label for u in self.unknown])}"] if self.unknown else []),
            f"  not written ({len(self.not_sent)}): {named([u.label for u in self.not_sent])}",
            *(f"  deleted by a principal's filter, added meanwhile, created again: {clip(e, 300)}"
              for e in self.restored[:SHOWN]),
            *(f"  deleted by a principal's filter, added meanwhile, NOT created again: {clip(e, 400)}"
              for e in self.lost))]


def write(admin: KraftAdmin, ops: Operations, stop: Callable[[], bool] | None = None,
          progress: Callable[[int, int], None] | None = None) -> WriteReport:
    """The requests in order; after a request with a refusal (or when `stop()` says so before one), nothing
    more is sent. Never raises for a refusal, a failed connection or a second signal: the report says what was
    written, what was not, and what is unknown (the request in flight)."""
    report = WriteReport()
    steps = ops.steps
    for number, step in enumerate(steps):
        if report.refused or report.unknown or report.lost or (stop is not None and stop()):
            report.not_sent += [u for s in steps[number:] for u in s.units]
            break
        try:
            with interrupts_deferred():  # a first signal only asks `stop`; a second ends the wait for the answer
                if step.broad:
                    outcome = aclfilters.send(admin, step)
                    report.restored += outcome.restored
                    report.lost += outcome.lost
                    pairs = outcome.refused
                else:
                    pairs = _send(admin, step)
                refused = {id(unit): r for r, unit in pairs}
        except (KeyboardInterrupt, Exception) as exc:
            report.unknown += step.units
            report.failure = None if isinstance(exc, KeyboardInterrupt) else type(exc).__name__
            continue
        report.requests += 1
        for unit in step.units:
            refusal = refused.get(id(unit))
            if refusal is None:
                report.written.append(unit)
            else:
                report.refused.append((unit, f"{refusal.error}: {refusal.message}"))
        if progress is not None:
            progress(number + 1, len(steps))
    return report
