"""Risk of a config change, decided by a table of rules: the one source of truth for plan and impact.

`RISK_RULES` is data: the fleet impact job reads the same table (id, risk, keys, kind) to classify effective
value changes, so wording and thresholds never drift between the two. A rule's `keys` are topic keys and
their broker synonyms; listener-prefixed broker keys (`listener.name.<l>.[<mechanism>.]<key>`) match by
their base key, as Kafka resolves them (`rule_key`). An empty `keys` means "any key".

Comparison kinds (`before` is the value in effect before the change, `after` the one after it; for a `+`
the value in effect before is the inherited one, for a `-` the inherited one applies after it):
  lowered / reduced  numerically smaller (absent = unlimited; negative retention = infinite, see
                     NEGATIVE_MEANS_UNLIMITED); for `host:N` maps, an entry lowered or removed
  raised             numerically larger
  changed            different (comma lists compared as sets)
  enabled            becomes `true`
  removed            a list/map entry (`NAME://host:port`, `NAME:PROTO`, a mechanism) disappears or changes
  above_rf           min.insync.replicas pushed above a topic's replication factor
A value that is no number where a rule expects one is compared as a string and reported as changed, with
that rule's risk: an unexplained change to a dangerous key deserves a look.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from reconciler.catalog import SCRAM_KEYS, Catalog, load_catalog
from reconciler.model import RISK_ORDER, ChangeOp, DesiredState, EntityRef, LiveState, RedactedState, Risk
from reconciler.plan import Change, EntityPlan, Plan, TopicCreate
from reconciler.risk.acls import rate_acl_plan
from reconciler.risk.features import feature_risk
from reconciler.risk.inherit import RiskContext
from reconciler.risk.reassign import rate_reassignment
from reconciler.risk.topics import NewTopic, rate_created_topic
from reconciler.units import NEGATIVE_MEANS_UNLIMITED, factor, parse_number, short

__all__ = [
    "ENCODER_ROTATION",
    "NEGATIVE_MEANS_UNLIMITED",
    "RISK_RULES",
    "RiskRule",
    "annotate",
    "assess",
    "fired_rules",
    "rule_key",
    "rules_for_key",
]

Kind = Literal["lowered", "raised", "changed", "enabled", "removed", "above_rf", "reduced"]


@dataclass(frozen=True, slots=True)
class RiskRule:
    """One row of the table. `reason` is a template over {key}, {before}, {after} and {detail}."""

    id: str
    risk: Risk
    keys: frozenset[str]  # empty: any key (a fallback, used only when no specific rule fired)
    kind: Kind
    reason: str
    ops: frozenset[ChangeOp] = frozenset(("+", "~", "-"))


def _rule(rule_id: str, risk: Risk, kind: Kind, keys: tuple[str, ...], reason: str) -> RiskRule:
    return RiskRule(rule_id, risk, frozenset(keys), kind, reason)


THREAD_KEYS = (
    "num.io.threads", "num.network.threads", "num.replica.fetchers", "background.threads",
    "log.cleaner.threads", "num.recovery.threads.per.data.dir",
)
QUOTA_KEYS = (
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
    "connection_creation_rate", "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
# Kafka's DynamicPasswordConfigs; its `isPasswordConfig` is a suffix test, which `rule_key` reproduces.
PASSWORD_KEYS = (
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.certificates", "sasl.jaas.config",
)
_LOWERED = "{key} lowered from {before} to {after}"
_CHANGED = "{key} changed from {before} to {after}"

RISK_RULES: tuple[RiskRule, ...] = (
    # --- destructive: data can be lost, or every acks=all write fails --------------------------------
    _rule("retention-lowered", "destructive", "lowered", ("retention.ms", "log.retention.ms"),
          "retention lowered from {before} to {after}: data older than {after} is deleted"),
    _rule("retention-bytes-lowered", "destructive", "lowered", ("retention.bytes", "log.retention.bytes"),
          "size retention lowered from {before} to {after} per partition: oldest segments are deleted"),
    _rule("local-retention-lowered", "destructive", "lowered",
          ("local.retention.ms", "log.local.retention.ms", "local.retention.bytes",
           "log.local.retention.bytes"),
          _LOWERED + ": local segments are deleted earlier"),
    _rule("delete-retention-lowered", "destructive", "lowered",
          ("delete.retention.ms", "log.cleaner.delete.retention.ms"),
          "tombstone retention lowered from {before} to {after}: slower consumers miss deletes"),
    _rule("cleanup-policy-changed", "destructive", "changed", ("cleanup.policy", "log.cleanup.policy"),
          _CHANGED + ": records the new policy does not keep are deleted"),
    _rule("unclean-leader-election-enabled", "destructive", "enabled", ("unclean.leader.election.enable",),
          "unclean leader election enabled: an out-of-sync replica may lead and lose committed records"),
    _rule("min-isr-above-rf", "destructive", "above_rf", ("min.insync.replicas",),
          "min.insync.replicas {after} exceeds {detail}: every acks=all write fails"),
    _rule("max-message-lowered", "destructive", "lowered", ("max.message.bytes", "message.max.bytes"),
          "max message size lowered from {before} to {after}: producers of larger batches start failing"),
    # --- disruptive: clients or brokers are affected, no data is lost --------------------------------
    _rule("listener-removed", "disruptive", "removed", ("listeners", "advertised.listeners"),
          "{key}: {detail}: connections through it break"),
    _rule("protocol-map-changed", "disruptive", "removed", ("listener.security.protocol.map",),
          "{key}: {detail}: connections through it break"),
    _rule("security-option-removed", "disruptive", "removed",
          ("sasl.enabled.mechanisms", "ssl.enabled.protocols"),
          "{key}: {detail}: clients relying on it fail to connect"),
    _rule("ssl-client-auth-changed", "disruptive", "changed", ("ssl.client.auth",),
          _CHANGED + ": clients may fail the TLS handshake"),
    _rule("threads-reduced", "disruptive", "reduced", THREAD_KEYS,
          "{key} reduced from {before} to {after}: less broker capacity"),
    _rule("quota-lowered", "disruptive", "lowered", QUOTA_KEYS,
          _LOWERED + ": clients or replication get throttled"),
    _rule("max-connections-lowered", "disruptive", "lowered",
          ("max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
           "max.connection.creation.rate"),
          _LOWERED + ": new connections may be refused"),
    # Smaller segments roll more often: more files, mmapped indexes and handles per partition (ulimits,
    # vm.max_map_count). Larger ones only delay retention a little, which is not disruptive.
    _rule("segment-lowered", "disruptive", "lowered",
          ("segment.bytes", "log.segment.bytes", "segment.ms", "log.roll.ms"),
          _LOWERED + ": more segment files, open files and index memory"),
    _rule("compression-changed", "disruptive", "changed", ("compression.type",),
          _CHANGED + ": brokers recompress, older clients may lack the codec"),
    _rule("timestamp-type-changed", "disruptive", "changed",
          ("message.timestamp.type", "log.message.timestamp.type"),
          _CHANGED + ": time-based retention and offset lookups shift"),
    _rule("min-isr-raised", "disruptive", "raised", ("min.insync.replicas",),
          "min.insync.replicas raised from {before} to {after}: acks=all writes fail sooner as ISRs shrink"),
    _rule("credential-changed", "disruptive", "changed", PASSWORD_KEYS,
          "sensitive value {detail}: connections using the old credential may fail"),
    # Fallback for keys without a rule of their own: a removal that lowers a number is worth a look.
    RiskRule("removal-reverts-lower", "disruptive", frozenset(), "lowered",
             "{key} reverts from {before} to the lower inherited {after}", ops=frozenset(("-",))),
)

# Not in the table (the impact job compares effective values, where an encoding never shows): rotating the
# encoder secret. Kafka's DynamicBrokerConfig decodes stored passwords with password.encoder.secret, falling
# back to password.encoder.old.secret; a broker still running with only the old secret logs "could not be
# decoded, ignoring" for a value re-encoded with the new one and drops it until restarted.
ENCODER_ROTATION = RiskRule(
    "encoder-secret-rotation", "disruptive", frozenset(PASSWORD_KEYS), "changed",
    "re-encoded with the new passwordEncoder.secret: a broker running without it (as password.encoder.secret, "
    "with the old one as password.encoder.old.secret) cannot decode it and ignores the password until restarted",
)

_BY_KEY: Mapping[str, tuple[RiskRule, ...]] = {
    k: tuple(r for r in RISK_RULES if k in r.keys) for k in sorted({k for r in RISK_RULES for k in r.keys})
}
_ANY_KEY = tuple(r for r in RISK_RULES if not r.keys)
_CREDENTIAL = next(r for r in RISK_RULES if r.id == "credential-changed")
_NUMERIC_KINDS = ("lowered", "raised", "reduced")
_LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]*\.(.+)")
_UNLIMITED = float("inf")
_NO_LIMIT = frozenset({"unlimited", "infinite"})  # human forms of a value that sets no limit


def rule_key(key: str) -> str:
    """The key rules name: `listener.name.ext.scram-sha-512.sasl.jaas.config` -> `sasl.jaas.config`."""
    m = _LISTENER_PREFIX.fullmatch(key)
    if m is None:
        return key
    base = m.group(1)
    mechanism_stripped = base.split(".", 1)[-1]  # ListenerMechanismConfigs carry a mechanism segment
    return mechanism_stripped if base not in _BY_KEY and mechanism_stripped in _BY_KEY else base


def rules_for_key(key: str) -> tuple[RiskRule, ...]:
    """Rules that may rate `key`: its own (table order), then the any-key fallbacks."""
    return _BY_KEY.get(rule_key(key), ()) + _ANY_KEY


# --- comparisons --------------------------------------------------------------------------------------


def _magnitude(key: str, value: str | None) -> float | None:
    """A number for ordering: absent = unlimited, negative retention = infinite; None if not a number."""
    if value is None:
        return _UNLIMITED
    number = parse_number(value)
    if number is not None and number < 0 and rule_key(key) in NEGATIVE_MEANS_UNLIMITED:
        return _UNLIMITED
    return number


def _norm(value: str | None) -> str:
    return ",".join(sorted(i for i in (x.strip() for x in (value or "").split(",")) if i))


def _entries(value: str | None) -> dict[str, str]:
    """`NAME://host:port`, `NAME:PROTO` or a bare item, by name."""
    items = (i.strip() for i in (value or "").split(","))
    return {(i.split("://", 1)[0] if "://" in i else i.split(":", 1)[0]): i for i in items if i}


def _number_map(value: str | None) -> dict[str, float] | None:
    """`host:100,10.0.0.1:200` (max.connections.per.ip.overrides), {} when empty, None when no such map."""
    out: dict[str, float] = {}
    for name, item in _entries(value).items():
        number = parse_number(item.rsplit(":", 1)[1]) if ":" in item else None
        if number is None:
            return None
        out[name] = number
    return out


def _entry_changes(before: str | None, after: str | None) -> str | None:
    old, new = _entries(before), _entries(after)
    gone = [old[n] for n in old if n not in new]
    moved = [f"{old[n]} -> {new[n]}" for n in old if n in new and old[n] != new[n]]
    parts = [f"{verb} {', '.join(items)}" for verb, items in (("removed", gone), ("changed", moved)) if items]
    return "; ".join(parts) or None


def _lowered(key: str, before: str | None, after: str | None) -> str | None:
    """'' when lowered, the lowered entries of a map, None when not lowered."""
    if ":" in (before or "") + (after or ""):
        old_map, new_map = _number_map(before), _number_map(after)
        if old_map is not None and new_map is not None:
            low = [n for n, v in old_map.items() if new_map.get(n, -_UNLIMITED) < v]
            return f"(lowered or removed: {', '.join(low)})" if low else None
    old, new = _magnitude(key, before), _magnitude(key, after)
    return "" if old is not None and new is not None and new < old else None


@dataclass(frozen=True, slots=True)
class _Case:
    key: str
    op: ChangeOp
    before: str | None  # value in effect before (the inherited one for `+`)
    after: str | None  # value in effect after (the inherited one for `-`)
    topic_rf: int | None
    rf_histogram: Mapping[int, int] | None
    min_rf_in_cluster: int | None
    redacted: RedactedState | None
    cleanup_policy: frozenset[str] | None  # a topic's, after the change; None: unknown (delete assumed)


def _not_numbers(case: _Case, rule: RiskRule) -> bool:
    """A numeric rule of this key meets a value that is no number: it is reported as a plain change."""
    if not rule.keys or rule.kind not in _NUMERIC_KINDS:
        return False
    values = (case.before, case.after)
    if any(":" in (v or "") for v in values) and all(_number_map(v) is not None for v in values):
        return False  # `host:N` maps, compared entry by entry
    odd = any(v is not None and parse_number(v) is None for v in (case.before, case.after))
    return odd and _norm(case.before) != _norm(case.after)


def _above_rf(case: _Case) -> str | None:
    """Only what this change pushes above the RF: a value already above it is not made worse by a cut."""
    wanted, was = parse_number(case.after), parse_number(case.before)
    if wanted is None:
        return None
    floor = was if was is not None else 0.0  # topics with RF < floor were above it before the change
    if case.topic_rf is not None:
        rf = case.topic_rf
        return f"the topic's replication factor {rf}" if floor <= rf < wanted else None
    if case.rf_histogram is not None:
        below = {rf: n for rf, n in case.rf_histogram.items() if floor <= rf < wanted}
        count = sum(below.values())
        return f"the replication factor of {count} topic(s) (lowest {min(below)})" if below else None
    if case.min_rf_in_cluster is not None and floor <= case.min_rf_in_cluster < wanted:
        return f"the lowest replication factor in the cluster ({case.min_rf_in_cluster})"
    return None


# Kafka deletes by time or size only under the `delete` policy (LogManager's cleanup of logs whose config
# has `delete` in cleanup.policy; a `compact`-only log is only compacted), so lowering these on a
# compact-only topic removes nothing.
_DELETE_POLICY_RULES = frozenset({"retention-lowered", "retention-bytes-lowered"})


def _detail(rule: RiskRule, case: _Case) -> str | None:
    """None: the rule does not fire; otherwise the {detail} of its reason."""
    if rule.id in _DELETE_POLICY_RULES and case.cleanup_policy is not None and "delete" not in case.cleanup_policy:
        return None
    if rule is ENCODER_ROTATION:
        return ""
    if rule is _CREDENTIAL:
        if case.op == "-":
            return "removed"
        if case.op == "~" and case.redacted in ("changed", "unknown", None):
            return "may rotate (no encoder secret to compare)" if case.redacted == "unknown" else "rotates"
        return None  # a new credential replaces none; an unchanged one is only re-encoded
    if rule.kind in ("lowered", "reduced"):
        return _lowered(case.key, case.before, case.after)
    if rule.kind == "raised":
        old, new = _magnitude(case.key, case.before), _magnitude(case.key, case.after)
        return "" if old is not None and new is not None and new > old else None
    if rule.kind == "changed":
        return "" if _norm(case.before) != _norm(case.after) else None
    if rule.kind == "enabled":
        return "" if _norm(case.after).lower() == "true" and _norm(case.before).lower() != "true" else None
    if rule.kind == "removed":
        return _entry_changes(case.before, case.after)
    return _above_rf(case)


def _reason(rule: RiskRule, case: _Case, detail: str) -> str:
    before, after = short(case.key, case.before), short(case.key, case.after)
    if case.after is None and rule.kind in _NUMERIC_KINDS:
        after = "unlimited"  # absent limit
    if case.before is None and rule.kind in _NUMERIC_KINDS:
        before = "unlimited"
    text = rule.reason.format(key=case.key, before=before, after=after, detail=detail)
    if rule.kind in _NUMERIC_KINDS:
        old, new = _magnitude(case.key, case.before), _magnitude(case.key, case.after)
        bounded = not {before, after} & _NO_LIMIT  # "from unlimited to 1 MiB/s" needs no factor
        scale = factor(old, new) if old is not None and new is not None and bounded else None
        if scale is not None:  # "from 7d to 1h (168× lower)", once, where the two values meet
            span = f"from {before} to {after}"
            text = text.replace(span, f"{span} ({scale})", 1)
    if detail and rule.kind in _NUMERIC_KINDS:
        text += f" {detail}"
    return text + (" (key removed: the inherited value applies)" if case.op == "-" and rule.keys else "")


def assess(
    key: str,
    op: ChangeOp,
    before: str | None,
    after: str | None,
    *,
    entity: EntityRef,
    topic_rf: int | None = None,
    min_rf_in_cluster: int | None = None,
    inherited: str | None = None,
    rf_histogram: Mapping[int, int] | None = None,
    redacted: RedactedState | None = None,
    cleanup_policy: frozenset[str] | None = None,
    rotation: bool = False,
) -> tuple[Risk, tuple[str, ...]]:
    """Risk and reasons of one change (reasons ordered most severe first). Never raises on odd values.

    `inherited` is the value in effect when the key is absent (cluster default, static config, Kafka
    default; None = unset, i.e. unlimited): what a `+` replaces and what a `-` falls back to. `topic_rf`
    rates a topic's min.insync.replicas; for broker-level changes `rf_histogram` (RF -> number of topics
    inheriting the broker value) or `min_rf_in_cluster` does. `redacted` marks a sensitive change.
    `cleanup_policy` (a topic's, after the change): without `delete`, lowering retention deletes nothing.
    `rotation`: a password re-encoded from the old encoder secret to the new one.
    """
    case = _Case(
        key=key,
        op=op,
        before=inherited if op == "+" else before,
        after=inherited if op == "-" else after,
        topic_rf=topic_rf if entity.entity_type == "topics" else None,
        rf_histogram=rf_histogram,
        min_rf_in_cluster=min_rf_in_cluster,
        redacted=redacted,
        cleanup_policy=cleanup_policy if entity.entity_type == "topics" else None,
    )
    if rotation:
        rules: tuple[RiskRule, ...] = (ENCODER_ROTATION,)
    else:
        rules = (_CREDENTIAL,) if redacted is not None else rules_for_key(key)  # any sensitive key rotates
    fired: list[tuple[RiskRule, str]] = []
    for rule in rules:
        if op not in rule.ops or (not rule.keys and fired):
            continue  # any-key rules are fallbacks
        if _not_numbers(case, rule):
            shown = f"{case.before or '(unset)'} to {case.after or '(unset)'}"
            fired.append((rule, f"{key} changed from {shown} (not comparable as numbers; rated {rule.risk})"))
        elif (detail := _detail(rule, case)) is not None:
            fired.append((rule, _reason(rule, case, detail)))
    if not fired:
        return "safe", ()
    fired.sort(key=lambda f: -RISK_ORDER[f[0].risk])  # stable: table order within one risk
    return fired[0][0].risk, tuple(dict.fromkeys(reason for _, reason in fired))


def fired_rules(key: str, before: str | None, after: str | None, *, topic: bool,
                rf: int | None = None) -> tuple[str, ...]:
    """Ids of the keyed rules a `~` change of an effective value fires, table order (the fleet impact job's
    rating: effective values, so no inherited value, no encoding, no any-key fallback). `rf` is the topic's
    replication factor (`topic=True`) or the cluster's lowest one (a broker value), for `above_rf`."""
    case = _Case(key=key, op="~", before=before, after=after, topic_rf=rf if topic else None, rf_histogram=None,
                 min_rf_in_cluster=None if topic else rf, redacted=None, cleanup_policy=None)
    return tuple(rule.id for rule in rules_for_key(key)
                 if rule.keys and (_not_numbers(case, rule) or _detail(rule, case) is not None))


# --- annotating a plan --------------------------------------------------------------------------------


# One rating per distinct case: assess() reads nothing but its arguments (of the entity, only its type),
# and a plan repeats a few cases many times (1,000 topics lowering retention.ms from 7d to 3d).
_Memo = dict[tuple[Any, ...], tuple[Risk, tuple[str, ...]]]




def scram_risk(user: str, key: str, op: ChangeOp, redacted: RedactedState | None) -> tuple[Risk, tuple[str, ...]]:
    """A SCRAM credential of `user`: the brokers check every new login against the stored keys (ScramSaslServer),
    so replacing or removing them fails the clients that log in with the old password; a new one replaces none."""
    who = f"clients logging in as {user!r} with {key}"
    if op == "+" or redacted == "unchanged":
        return "safe", ()
    if op == "-":
        return "disruptive", (f"SCRAM credential {key} of user {user!r} removed: {who} fail",)
    if redacted == "unknown":
        return "disruptive", (f"SCRAM credential {key} of user {user!r} may change (the password cannot be "
                              f"compared here): {who} and the old password would fail",)
    return "disruptive", (f"SCRAM credential {key} of user {user!r} replaced (new password or iterations): {who} "
                          "and the old password fail",)


def _rate(ctx: RiskContext, ref: EntityRef, change: Change, memo: _Memo) -> Change:
    if change.sensitive and ref.entity_type == "users" and ref.client is None and change.key in SCRAM_KEYS:
        risk, reasons = scram_risk(ref.name, change.key, change.op, change.redacted)
        return change if (risk, reasons) == (change.risk, change.reasons) else replace(change, risk=risk,
                                                                                       reasons=reasons)
    if ref.entity_type == "features":  # finalized feature levels (risk/features.py)
        risk, reasons = feature_risk(ctx.catalog, ctx.desired.cluster.kafka_version, change.key, change.before,
                                     change.after)
        return change if (risk, reasons) == (change.risk, change.reasons) else replace(change, risk=risk,
                                                                                       reasons=reasons)
    needs_rf = change.key == "min.insync.replicas"
    needs_policy = ref.entity_type == "topics" and change.key in ("retention.ms", "retention.bytes")
    topic_rf = ctx.topic_rf(ref.name) if needs_rf and ref.entity_type == "topics" else None
    histogram = needs_rf and ref.entity_type == "brokers"  # the plan's one histogram
    inherited = ctx.inherited(ref, change.key) if change.op != "~" and not change.sensitive else None
    redacted = (change.redacted or "unknown") if change.sensitive else None
    cleanup_policy = ctx.cleanup_policy(ref) if needs_policy else None
    case = (change.key, change.op, change.before, change.after, ref.entity_type, topic_rf, histogram, inherited,
            redacted, cleanup_policy, change.rotation)
    if (rated := memo.get(case)) is None:
        rated = memo[case] = assess(
            change.key, change.op, change.before, change.after, entity=ref, topic_rf=topic_rf,
            rf_histogram=ctx.rf_histogram() if histogram else None, inherited=inherited, redacted=redacted,
            cleanup_policy=cleanup_policy, rotation=change.rotation,
        )
    risk, reasons = rated
    if risk == change.risk and reasons == change.reasons:
        return change  # most changes are safe: keep the object
    return replace(change, risk=risk, reasons=reasons)


def _rated(ctx: RiskContext, entity: EntityPlan, memo: _Memo) -> EntityPlan:
    changes = tuple(_rate(ctx, entity.ref, c, memo) for c in entity.changes)
    if all(map(operator.is_, changes, entity.changes)):
        return entity  # every change kept its rating: keep the object (dataclasses.replace is slow)
    return replace(entity, changes=changes)


def _rated_topic(ctx: RiskContext, created: TopicCreate) -> TopicCreate:
    """A topic to create, rated for durability (risk/topics.py) with its effective values once created."""
    ref = EntityRef("topics", created.name)

    def effective(key: str) -> str | None:
        return created.config.get(key) if key in created.config else ctx.inherited(ref, key)

    topic = NewTopic(created.replication_factor, len(ctx.desired.cluster.brokers), effective("retention.ms"))
    return rate_created_topic(created, topic)


def _min_isr(ctx: RiskContext, topic: str) -> str | None:
    """A topic's min.insync.replicas once the plan is applied: its declared value, else the live one of an
    undeclared topic, else what it inherits."""
    declared = ctx.desired.topics.get(topic)
    if declared is not None:
        own = declared.config.get("min.insync.replicas")
        if own is not None:
            return own.value if isinstance(own.value, str) else None
    else:
        live = ctx.live.entities.get(EntityRef("topics", topic))
        if live is not None and "min.insync.replicas" in live.config:
            return live.config["min.insync.replicas"]
    return ctx.inherited(EntityRef("topics", topic), "min.insync.replicas")


def annotate(
    plan: Plan, desired: DesiredState, live: LiveState, catalog: Catalog | None = None, *, with_id: bool = True
) -> Plan:
    """Rate every key change, what every ACL change grants and what every new topic is created with (partition
    increases carry their own risk) and return the plan with its id recomputed, since risk is part of the plan's content
    (`with_id=False`: left to the caller)."""
    ctx = RiskContext(desired, live, catalog or load_catalog())
    memo: _Memo = {}
    entities = tuple(_rated(ctx, e, memo) for e in plan.entities)
    created = tuple(_rated_topic(ctx, t) for t in plan.topics_to_create)
    annotated = replace(plan, entities=entities, acls=tuple(rate_acl_plan(a) for a in plan.acls),
                        topics_to_create=created)
    if plan.reassignment is not None:  # replica moves: traffic, leaders, min.insync.replicas (risk/reassign.py)
        annotated = replace(annotated, reassignment=rate_reassignment(plan.reassignment, lambda topic: _min_isr(
            ctx, topic)))
    return annotated.with_id() if with_id else annotated
