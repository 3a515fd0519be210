"""Who may apply to a target: the owner record, and what a first apply may write (issue 38, finding 1).

A target (a ZooKeeper ensemble + chroot, a KRaft cluster) belongs to one cluster directory. Validation refuses
two directories naming one target when it can see it (`targets.py`), but another name for the same host cannot
be told apart statically; so the target itself records its owner (the backend's state: a znode under
`reconcilerPath`, a record of the KRaft state topic), and apply decides here, before writing:

* the owner is this directory: apply;
* another directory owns it: refused, unless this one declares `meta.renamedFrom: <owner>` (a reviewed step the
  pull request comment shows): then the target is handed over, once;
* nobody owns it yet, but the target's audit trail names the cluster of the last apply (a target managed
  before owner records existed): that name counts as the owner;
* nobody ever applied there (a first apply): the pull request planned this cluster "against an empty cluster",
  so its first apply may write only what such a plan shows: no key removed, no entity, topic or ACL deleted, no
  partitions added, every value written one the empty-cluster plan sets. A target that already holds other
  state is taken over only by an operator, explicitly (`reconciler apply CLUSTER`, after reading the real plan),
  or by importing it first (`reconciler import`); the scheduled `reconcile` never takes one over.

Pure: standard library and core types only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from reconciler.model import ClusterSpec
from reconciler.plan import Plan

Action = Literal["apply", "claim", "transfer", "refuse"]
SHOWN = 20  # items named in a refusal


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action  # apply: owner already; claim: record this directory first; transfer: from renamed_from
    reason: str = ""  # why refused (or what is recorded), for the operator


def decide(cluster: ClusterSpec, owner: str | None, legacy: str | None, first_apply_extra: Sequence[str] | None,
           adopt: bool = False) -> Verdict:
    """`owner`: the directory the target's owner record names (None: no record); `legacy`: the cluster the
    newest audit entry at the target names (None: none); `first_apply_extra`: for a target nobody applied to,
    what the plan writes beyond a plan against an empty cluster (`beyond_empty`), None when not computed."""
    name = cluster.name
    recorded = owner if owner is not None else legacy
    if recorded == name:
        return Verdict("apply" if owner is not None else "claim")
    if recorded is not None:
        if cluster.renamed_from == recorded:
            return Verdict("transfer", f"renamed from {recorded} (meta.renamedFrom)")
        how = "its owner record" if owner is not None else "its audit trail (the cluster of the last apply)"
        return Verdict("refuse", f"the target is managed by cluster {recorded} ({how}), not {name}: a target "
                                 f"belongs to one cluster directory; if {name} is {recorded} renamed, declare "
                                 f"meta.renamedFrom: {recorded}")
    if adopt or not first_apply_extra:
        return Verdict("claim")
    items = list(first_apply_extra)
    more = f" … and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return Verdict("refuse", "first apply of this cluster to a target that already holds state its pull request "
                             "could not show (it was planned against an empty cluster): "
                   + "; ".join(items[:SHOWN]) + more + ". An operator takes it over with `reconciler apply CLUSTER` "
                   "after reading its plan (or brings the cluster in with `reconciler import` first); the scheduled "
                   "reconcile never does")


def beyond_empty(plan: Plan, empty: Plan) -> list[str]:
    """What `plan` (against the live target) writes that `empty` (the same manifests against an empty cluster:
    what a pull request adding the cluster showed) does not: removals, deletions, partition increases, values or
    creations `empty` does not have; and what the target holds already (topics other than Kafka's internal ones,
    ACLs, config entities), which an empty cluster does not: a first apply that is not the reviewed operator's
    goes only to a cluster that is new (another name for a managed host cannot pass as new)."""
    out: list[str] = []
    shown: dict[tuple[str, str], str | None] = {(e.ref.display, c.key): c.after for e in empty.entities
                                                for c in e.changes}
    # what is at the target already: topics, ACLs and entities it holds (another cluster's, under another
    # name for the same host), though this plan would leave them be
    out += [f"{name} exists" for name in plan.unmanaged if not name.startswith("topics/__")]
    out += [f"ACL {name} exists" for name in plan.unmanaged_acls]
    kept = {t.name for t in plan.topics_to_create}
    out += [f"topics/{t.name} exists" for t in empty.topics_to_create if t.name not in kept]
    created = {t.name: t for t in empty.topics_to_create}
    # a topic's config is shown with its creation (the config znode written with it)
    shown.update({(f"topics/{t.name}", key): value for t in empty.topics_to_create for key, value in t.config.items()})
    for e in plan.entities:
        if e.delete_entity:
            out.append(f"{e.ref.display} deleted")
        for c in e.changes:
            key = (e.ref.display, c.key)
            if c.op == "-":
                out.append(f"{e.ref.display} {c.key} removed")
            elif key not in shown or (not c.sensitive and shown[key] != c.after):
                out.append(f"{e.ref.display} {c.key} set")
    for t in plan.topics_to_create:
        other = created.get(t.name)
        if other is None or (other.partitions, other.replication_factor, dict(other.config)) != (
                t.partitions, t.replication_factor, dict(t.config)):
            out.append(f"topic {t.name} created")
    out += [f"topic {g.name} grown to {g.target} partitions" for g in plan.partition_increases]
    out += [f"topic {d.name} deleted" for d in plan.topics_to_delete]
    granted = {(a.resource, entry) for a in empty.acls for entry in a.add}
    for a in plan.acls:
        out += [f"ACL {a.resource.display}: {entry.display} removed" for entry in a.remove]
        out += [f"ACL {a.resource.display}: {entry.display} added" for entry in a.add
                if (a.resource, entry) not in granted]
    return out
