"""What every renderer says the same way: values with units, change lines, risk tags, summary lines.

Secrets: a sensitive change is shown only through `Change.shown_before/shown_after` (its redacted state)
and the *name* of its reference (env variable or file); a sealed (Kafka-encoded) value is never printed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from reconciler.errors import clip
from reconciler.errors import printable as printable  # re-exported: the renderers import it from here
from reconciler.model import RISK_ORDER, Risk, SourceRef
from reconciler.plan import AclPlan, Change, EntityPlan, PartitionIncrease, Plan, TopicCreate
from reconciler.units import describe

MAX_SHOWN_VALUE = 1000  # characters of one value in text and Markdown plans
UNMANAGED_SHOWN = 10  # names listed before "… and N more"
NO_CHANGES = "No changes. Live configuration matches the manifests."


@dataclass(frozen=True, slots=True)
class Totals:
    add: int = 0
    change: int = 0
    remove: int = 0
    topics: int = 0
    partitions: int = 0
    deleted: int = 0  # topics to delete
    destructive: int = 0
    disruptive: int = 0
    max_risk: Risk = "safe"
    acl_add: int = 0  # ACL entries to add
    acl_remove: int = 0  # ACL entries to remove
    moves: int = 0  # partitions whose replicas move (reassignment), or 1 for throttles left to remove

    @property
    def units(self) -> int:
        """Items an operator reviews: key changes, topic creations, partition increases, ACL entries, moves."""
        return (self.add + self.change + self.remove + self.topics + self.partitions + self.deleted
                + self.acl_add + self.acl_remove + self.moves)

    def __add__(self, other: Totals) -> Totals:
        risk = max(self.max_risk, other.max_risk, key=RISK_ORDER.__getitem__)
        return Totals(
            self.add + other.add, self.change + other.change, self.remove + other.remove,
            self.topics + other.topics, self.partitions + other.partitions, self.deleted + other.deleted,
            self.destructive + other.destructive, self.disruptive + other.disruptive, risk,
            self.acl_add + other.acl_add, self.acl_remove + other.acl_remove, self.moves + other.moves,
        )


def plan_totals(plan: Plan) -> Totals:
    ops = {"+": 0, "~": 0, "-": 0}
    risks: dict[Risk, int] = {"safe": 0, "disruptive": 0, "destructive": 0}
    for entity in plan.entities:
        for c in entity.changes:
            ops[c.op] += 1
            risks[c.risk] += 1
    for p in plan.partition_increases:
        risks[p.risk] += 1
    for t in plan.topics_to_delete:
        risks[t.risk] += 1
    for created in plan.topics_to_create:
        risks[created.risk] += 1
    for a in plan.acls:
        risks[a.risk] += 1
    if plan.reassignment is not None:
        risks[plan.reassignment.risk] += 1
    top: Risk = max((r for r, n in risks.items() if n), key=RISK_ORDER.__getitem__, default="safe")
    partitions = sum(p.target - p.current for p in plan.partition_increases)
    return Totals(
        add=ops["+"], change=ops["~"], remove=ops["-"], topics=len(plan.topics_to_create),
        partitions=partitions, deleted=len(plan.topics_to_delete), destructive=risks["destructive"],
        disruptive=risks["disruptive"], max_risk=top,
        acl_add=sum(len(a.add) for a in plan.acls), acl_remove=sum(len(a.remove) for a in plan.acls),
        moves=(len(plan.reassignment.moves) or 1) if plan.reassignment is not None else 0,
    )


def all_totals(plans: Sequence[Plan]) -> Totals:
    total = Totals()
    for plan in plans:
        total = total + plan_totals(plan)
    return total


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def summary(t: Totals) -> str:
    """`3 to add, 2 to change, 1 to remove, 1 topic to create (1 destructive)` (no trailing period)."""
    parts = [f"{t.add} to add", f"{t.change} to change", f"{t.remove} to remove"]
    if t.topics:
        parts.append(_n(t.topics, "topic", "topics") + " to create")
    if t.partitions:
        parts.append(_n(t.partitions, "partition", "partitions") + " to add")
    if t.deleted:
        parts.append(_n(t.deleted, "topic", "topics") + " to DELETE")
    if t.acl_add or t.acl_remove:
        parts.append(f"ACL entries: {t.acl_add} to add, {t.acl_remove} to remove")
    if t.moves:
        parts.append(_n(t.moves, "partition", "partitions") + " to move")
    risky = [f"{n} {name}" for name, n in (("destructive", t.destructive), ("disruptive", t.disruptive)) if n]
    return ", ".join(parts) + (f" ({', '.join(risky)})" if risky else "")


def overall_line(plans: Sequence[Plan]) -> str:
    t = all_totals(plans)
    return f"Plan: {summary(t)}." if t.units else NO_CHANGES


def source(src: SourceRef | None) -> str | None:
    return None if src is None else f"{src.file}:{src.line}"


def entity_symbol(e: EntityPlan) -> str:
    return "-" if e.delete_entity else "+" if e.base_version is None else "~"


def entity_note(e: EntityPlan, kraft: bool = False) -> str:
    """ZooKeeper: the znode and the version apply guards with; KRaft has neither (the Admin API backend)."""
    if kraft:
        return "no key left" if e.delete_entity else "new" if e.base_version is None else "exists"
    if e.delete_entity:
        return "znode deleted: no config left"
    return "new znode" if e.base_version is None else f"znode version {e.base_version}"


def secret_hint(c: Change) -> str | None:
    """`secret from env X` / `secret from file F` / `sealed (Kafka-encoded) value`: never the value."""
    if c.reencode:
        return "re-encoded with the current encoder secret"
    if not c.sensitive or c.secret is None:
        return None
    return "sealed value" if c.secret.encoded is not None else c.secret.describe()


def shown(c: Change, side: str) -> str:
    """One side of a change as printed: redacted for secrets, otherwise the value with its unit."""
    if c.sensitive:
        value = c.shown_before if side == "before" else c.shown_after
        return value or "(sensitive)"
    # a 15 MiB value is shown by its start and length (the JSON plan keeps it whole)
    return clip(describe(c.key, c.before if side == "before" else c.after), MAX_SHOWN_VALUE)


def change_text(c: Change) -> str:
    """`+ key = v`, `~ key: a -> b`, `- key (was v)`; a sensitive `~` shows its state once."""
    if c.op == "+":
        return f"+ {c.key} = {shown(c, 'after')}"
    if c.op == "-":
        return f"- {c.key} (was {'sensitive' if c.sensitive else shown(c, 'before')})"
    if c.sensitive:
        return f"~ {c.key}: {shown(c, 'after')}"
    return f"~ {c.key}: {shown(c, 'before')} -> {shown(c, 'after')}"


def risk_tag(c: Change | PartitionIncrease | TopicCreate) -> str | None:
    if c.risk == "safe":
        return None
    return f"[{c.risk}: {'; '.join(c.reasons) or 'no reason recorded'}]"


def topic_text(t: TopicCreate) -> str:
    return f"+ topic {t.name} ({_n(t.partitions, 'partition', 'partitions')}, replication factor " \
           f"{t.replication_factor})"


def topic_config_lines(t: TopicCreate) -> Iterator[str]:
    for key, value in sorted(t.config.items()):
        yield f"{key} = {describe(key, value)}"


def increase_text(p: PartitionIncrease) -> str:
    return f"~ topic {p.name}: partitions {p.current} -> {p.target} (+{p.target - p.current})"


def unmanaged_text(plan: Plan, limit: int = UNMANAGED_SHOWN) -> str | None:
    if not plan.unmanaged:
        return None
    names = ", ".join(plan.unmanaged[:limit])
    more = len(plan.unmanaged) - limit
    tail = f" … and {more} more" if more > 0 else ""
    count = _n(len(plan.unmanaged), "entity", "entities")
    return f"Unmanaged: {count} no manifest declares (left untouched): {names}{tail}"


def ignored_text(plan: Plan) -> str | None:
    if not plan.ignored:
        return None
    return f"Ignored: {_n(plan.ignored, 'live key', 'live keys')} (policy.ignoreKeys, replication throttles)"


def header_details(plan: Plan) -> str:
    parts = [f"Kafka {plan.kafka_version}" if plan.kafka_version else None,
             f"revision {plan.revision}" if plan.revision else None,
             f"plan {plan.plan_id}" if plan.plan_id else None]
    return " · ".join(p for p in parts if p)


def acl_symbol(a: AclPlan) -> str:
    return "-" if not a.after else "+" if a.base_version is None else "~"


def acl_note(a: AclPlan, kraft: bool = False) -> str:
    pruned = " (policy.pruneAcls)" if a.pruned else ""
    if kraft:
        return ("no entries left" + pruned) if not a.after else "new" if a.base_version is None else "exists"
    if not a.after:
        return "znode deleted: no entries left" + pruned
    return "new znode" if a.base_version is None else f"znode version {a.base_version}"


def acl_lines(a: AclPlan) -> list[tuple[str, str]]:
    """(op, text) per entry added or removed: `- Allow User:bob Read from *`."""
    return [("-", f"- {e.display}") for e in a.remove] + [("+", f"+ {e.display}") for e in a.add]
