"""The fleet impact report's access section: per cluster, the ACL entries a change adds and removes and the
principals that lose access.

It is the plan's own computation (`diff.acls.plan_acls`, `AclPlan.losing` and the broad-grant table of
`risk/acls.py`) over the inventory's ACLs, so the
report and `plan` agree by construction. ACL entries are few next to topic configs: the inventory's `acls` table
is read only when a selected cluster declares ACLs (or prunes them), filtered to those clusters and collected
to the driver; a fleet without Acls manifests spends no Spark work on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.diff.acls import plan_acls
from reconciler.model import AclEntry, AclResource, DesiredState, LiveAcls
from reconciler.risk.acls import rate_acl_plan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REASONS_SHOWN = 20  # per cluster, in the report; the counts are complete
LiveByCluster = Mapping[str, Mapping[AclResource, LiveAcls]]


def declaring(states: Mapping[str, DesiredState]) -> list[str]:
    """The clusters whose ACLs a change can touch: those declaring ACLs or pruning undeclared ones."""
    return sorted(n for n, s in states.items() if s.acls or s.cluster.policy.prune_acls)


def read_live_acls(spark: SparkSession, inventory: Path, clusters: list[str]) -> LiveByCluster | None:
    """The inventory's ACLs of `clusters`, as the live model holds them; None when the inventory has no acls
    table (made before ACLs were inventoried)."""
    from pyspark.sql import functions as F

    from reconciler.impact.inventory import SCHEMAS

    if not (inventory / "acls").exists():
        return None
    rows = (spark.read.schema(SCHEMAS["acls"]).parquet(str(inventory / "acls"))
            .where(F.col("cluster").isin(clusters)).collect())
    found: dict[str, dict[AclResource, set[AclEntry]]] = {}
    for r in rows:
        resource = AclResource(r["resource_type"], r["pattern"], r["name"])
        entry = AclEntry(r["principal"], r["host"], r["operation"], r["permission"])
        found.setdefault(r["cluster"], {}).setdefault(resource, set()).add(entry)
    # the znode version is not inventoried: it only guards apply, which the report never does
    return {c: {res: LiveAcls(res, frozenset(e), 0) for res, e in by.items()} for c, by in found.items()}


def access_summary(states: Mapping[str, DesiredState], live: LiveByCluster | None) -> dict[str, Any] | None:
    """The report's `access` section; None when no selected cluster declares ACLs."""
    names = declaring(states)
    if not names:
        return None
    if live is None:
        return {"clusters": [], "note": "the inventory has no ACLs (taken before ACLs were inventoried): run "
                                        "`reconciler snapshot` again to assess ACL changes"}
    clusters: list[dict[str, Any]] = []
    losing: set[str] = set()
    for name in names:
        state = states[name]
        plans, unmanaged = plan_acls(state.acls, live.get(name, {}), state.cluster.policy.prune_acls)
        plans = [rate_acl_plan(p) for p in plans]  # broad grants, as the plan rates them (risk/acls.py)
        losing |= {who for p in plans for who in p.losing}
        clusters.append({
            "cluster": name,
            "resourcesChanged": len(plans),
            "entriesAdded": sum(len(p.add) for p in plans),
            "entriesRemoved": sum(len(p.remove) for p in plans),
            "principalsLosingAccess": sorted({who for p in plans for who in p.losing}),
            "broadGrants": sum(len(p.grant_reasons) for p in plans),
            "reasons": [reason for p in plans for reason in p.reasons][:REASONS_SHOWN],
            "unmanagedResources": len(unmanaged),
        })
    return {
        "clusters": clusters,
        "entriesAdded": sum(c["entriesAdded"] for c in clusters),
        "entriesRemoved": sum(c["entriesRemoved"] for c in clusters),
        "principalsLosingAccess": sorted(losing),
    }


def assess_access(spark: SparkSession, inventory: Path, states: Mapping[str, DesiredState]) -> dict[str, Any] | None:
    """`access_summary` over the inventory's ACLs, read only when a selected cluster declares ACLs."""
    names = declaring(states)
    return access_summary(states, read_live_acls(spark, inventory, names)) if names else None


__all__ = ["access_summary", "assess_access", "declaring", "read_live_acls"]
