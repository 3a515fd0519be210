"""The summary's arithmetic: the aggregate's few thousand rows and the driver's broker rows, added up into the
report's sections (SPEC §8 JSON). Pure Python.

A topic counts once however many of its keys change; its affected partitions are the union over its keys;
bytes are the sizes of those partitions (null when the inventory has no sizes). `byKey` counts, per key, the
topics whose effective value of that key changes and the brokers on which it changes (broker-level keys have no
topics); `byRule` likewise per risk rule: its brokers are those whose own value fires it and those hosting a
replica of a topic change that fires it there, as `byKey` counts a key's brokers. `changes` of a cluster =
changed (topic, key) plus changed (broker, key) values. Lists are sorted most affected first.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from reconciler.impact.deletions import section as deletion_section
from reconciler.impact.riskexpr import RULES, rules_of
from reconciler.model import RISK_ORDER

if TYPE_CHECKING:
    from reconciler.impact.job import Changes

SUMMARY_FORMAT = 1
Rows = list[dict[str, Any]]


def unpack(facts: Rows, has_sizes: bool) -> dict[str, Rows]:
    """The aggregate's rows as the sections the summary adds up."""
    out: dict[str, Rows] = {"topics": [], "keys": [], "rules": [], "hosts": [], "deletion": []}
    est: dict[str, float] = defaultdict(float)
    for r in facts:
        section, c, dim = r["section"], r["cluster"], r["dim"]
        counts = {"cluster": c, "topics": r["topics"], "partitions": r["partitions"], "bytes": r["bytes"]}
        if section == "hosts":
            out["hosts"].append({"cluster": c, "key": dim, "broker": r["broker"], "rules": rules_of(r["mask"])})
        elif section == "keys":
            out["keys"].append(counts | {"key": dim, "level": r["level"], "rules": rules_of(r["mask"])})
        elif section == "rules":
            out["rules"].append(counts | {"rule": dim})
        else:
            out["topics"].append(counts | {"level": int(dim)})
            est[c] += r["est"] or 0.0
    if has_sizes:
        out["deletion"] = [{"cluster": c, "bytes": int(v)} for c, v in est.items()]
    return out


def broker_sections(ch: Changes, hosts: Rows, sample: int) -> dict[str, Rows]:
    """The broker side of the summary, from the rows the driver resolved, and the inventory's facts."""
    rows = ch.broker_side.rows  # (cluster, broker, key, topic_key, before, after, rules, risk, reasons)
    # a topic key counts the brokers on which its effective value changes (a synonym's own value, or a replica of a
    # changed topic); a broker key (log.retention.ms) the brokers whose own value of it changes
    hits = (ch.broker_side.hits() | {(h["cluster"], h["key"], h["broker"]) for h in hosts}
            | {(r[0], r[2], r[1]) for r in ch.broker_side.rows})
    per_key: dict[tuple[str, str], set[int]] = defaultdict(set)
    per_cluster: dict[str, set[int]] = defaultdict(set)
    for c, k, b in hits:
        per_key[(c, k)].add(b)
        per_cluster[c].add(b)
    keys: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"changes": 0, "level": 0, "rules": set()})
    rule_brokers: dict[tuple[str, str], set[int]] = defaultdict(set)
    by_risk = dict.fromkeys(sorted(RISK_ORDER, key=RISK_ORDER.__getitem__, reverse=True), 0)
    for c, b, k, _tk, _vb, _va, rules, risk, _why in rows:
        by_risk[risk] += 1
        acc = keys[(c, k)]  # the broker key: its rating is the broker value's, as the plan rates that entity
        acc["changes"] += 1
        acc["level"] = max(acc["level"], RISK_ORDER[risk])
        acc["rules"] |= set(rules)
        for r in rules:
            rule_brokers[(c, r)].add(b)
    for h in hosts:  # brokers hosting a replica of a topic change that fires the rule there
        for r in h.get("rules") or ():
            rule_brokers[(h["cluster"], r)].add(h["broker"])
    order = sorted(rows, key=lambda r: (-RISK_ORDER[r[7]], r[0], r[1], r[2]))[:sample]
    facts = ch.facts
    # spec.brokers of the clusters in the inventory: a declared broker that is down is still one of the fleet's
    declared = {(c, b) for c, b in ch.declared_brokers if c in facts.present}
    return {
        "hits": [{"cluster": c, "key": k, "brokers": len(bs)} for (c, k), bs in per_key.items()],
        "hitBrokers": [{"cluster": c, "brokers": len(bs)} for c, bs in per_cluster.items()],
        "brokerKeys": [{"cluster": c, "key": k, "changes": a["changes"], "level": a["level"],
                        "rules": sorted(a["rules"])} for (c, k), a in keys.items()],
        "ruleKeys": [{"rule": r, "key": k} for k, r in {(row[2], r) for row in rows for r in row[6]}],
        "ruleBrokers": [{"cluster": c, "rule": r, "brokers": len(bs)} for (c, r), bs in rule_brokers.items()],
        "inventory": [{"topics": sum(t[0] for t in facts.topics.values()),
                       "partitions": sum(t[1] for t in facts.topics.values())}],
        "inventoryBrokers": [{"n": len(set(facts.brokers) | declared)}],
        "unregistered": [{"cluster": c, "brokers": sorted(b for c2, b in declared - set(facts.brokers) if c2 == c)}
                         for c in sorted({c for c, _ in declared - set(facts.brokers)})],
        "brokersByRisk": [by_risk],
        "present": [{"cluster": c} for c in facts.present],
        "created": [{"n": facts.created}],
        "grown": [{"n": facts.grown}],
        "sampleBrokers": [{"cluster": r[0], "broker": r[1], "key": r[2], "before": r[4], "after": r[5],
                           "risk": r[7], "rules": r[6], "reasons": r[8]} for r in order],
    }


def _name(level: int | None) -> str:
    return next((n for n, v in RISK_ORDER.items() if v == (level or 0)), "safe")


def _add(total: int | None, part: int | None) -> int | None:
    return None if total is None and part is None else (total or 0) + (part or 0)


def tally(s: dict[str, Rows], ch: Changes) -> dict[str, Any]:
    """The summary from the sections (`unpack` + `broker_sections` + the samples)."""
    has_sizes = ch.sizes_known
    by_risk = {name: 0 for name in sorted(RISK_ORDER, key=RISK_ORDER.__getitem__, reverse=True)}
    topics = partitions = 0
    bytes_: int | None = 0 if has_sizes else None
    for r in s["topics"]:
        by_risk[_name(r["level"])] += r["topics"]
        topics += r["topics"]
        partitions += r["partitions"] or 0
        bytes_ = _add(bytes_, r["bytes"]) if has_sizes else None
    affected = {r["cluster"] for r in s["keys"]} | {r["cluster"] for r in s["hits"]}
    present = {r["cluster"] for r in s["present"]}
    inventory = s["inventory"][0]
    deleted = {r["cluster"]: r["bytes"] for r in s.get("deletion", [])}
    topics_deleted = deletion_section(ch.facts.deleted)
    affected |= {r["cluster"] for r in topics_deleted["byCluster"]}
    return {
        "format": SUMMARY_FORMAT,
        "clusters": ch.clusters,
        "clustersAffected": len(affected),
        "brokersAffected": sum(r["brokers"] for r in s["hitBrokers"]),
        "topicsAffected": topics,
        "partitionsAffected": partitions,
        "bytesAffected": bytes_,
        "topicsByRisk": by_risk,
        "brokerValuesByRisk": s["brokersByRisk"][0],
        "topicChangesTotal": sum(r["topics"] for r in s["keys"]),
        "brokerChangesTotal": sum(r["changes"] for r in s["brokerKeys"]),
        "byKey": _by_key(s, has_sizes),
        "byRule": _by_rule(s, has_sizes),
        "byCluster": _by_cluster(s, has_sizes, deleted, topics_deleted["byCluster"]),
        "bytesDeletedEstimate": sum(deleted.values()) if has_sizes else None,
        "inventory": {"clusters": len(present), "brokers": s["inventoryBrokers"][0]["n"],
                      "topics": inventory["topics"], "partitions": int(inventory["partitions"] or 0)},
        "missingClusters": sorted(set(ch.clusters) - present),
        "brokersNotRegistered": s["unregistered"],
        "topicsCreated": s["created"][0]["n"],
        "partitionIncreases": s["grown"][0]["n"],
        "topicsDeleted": topics_deleted,
        "topicChanges": s["sampleTopics"],
        "brokerChanges": s["sampleBrokers"],
    }


def _rule_order(ids: set[str]) -> list[str]:
    order = list(RULES)
    return sorted(ids, key=order.index)


def _count(acc: dict[str, Any], row: dict[str, Any], has_sizes: bool) -> dict[str, Any]:
    """Add one aggregate row (a cluster's topics, partitions, bytes) to a key's or a rule's totals."""
    acc["clusters"].add(row["cluster"])
    acc["topics"] += row["topics"]
    acc["partitions"] += row["partitions"] or 0
    acc["bytes"] = _add(acc["bytes"], row["bytes"]) if has_sizes else None
    return acc


def _by_key(s: dict[str, Rows], has_sizes: bool) -> Rows:
    acc: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "clusters": set(), "brokers": 0, "topics": 0, "partitions": 0, "bytes": 0 if has_sizes else None,
        "level": 0, "rules": set()})
    for r in s["keys"]:
        a = _count(acc[r["key"]], r, has_sizes)
        a["level"] = max(a["level"], r["level"] or 0)
        a["rules"] |= set(r["rules"] or [])
    for r in s["hits"]:
        acc[r["key"]]["clusters"].add(r["cluster"])
        acc[r["key"]]["brokers"] += r["brokers"]
    for r in s["brokerKeys"]:
        acc[r["key"]]["level"] = max(acc[r["key"]]["level"], r["level"] or 0)
        acc[r["key"]]["rules"] |= set(r["rules"] or [])
    out = [{"key": k, "clusters": len(a["clusters"]), "brokers": a["brokers"], "topics": a["topics"],
            "partitions": a["partitions"], "bytes": a["bytes"], "risk": _name(a["level"]),
            "rules": _rule_order(a["rules"])} for k, a in acc.items()]
    out.sort(key=lambda r: (-r["topics"], -r["partitions"], -r["brokers"], r["key"]))
    return out


def _by_rule(s: dict[str, Rows], has_sizes: bool) -> Rows:
    acc: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "clusters": set(), "brokers": 0, "topics": 0, "partitions": 0, "bytes": 0 if has_sizes else None,
        "keys": set()})
    for r in s["rules"]:
        _count(acc[r["rule"]], r, has_sizes)
    for r in s["ruleBrokers"]:
        acc[r["rule"]]["clusters"].add(r["cluster"])
        acc[r["rule"]]["brokers"] += r["brokers"]
    for r in s["ruleKeys"]:
        acc[r["rule"]]["keys"].add(r["key"])
    out = [{"rule": rule, "risk": RULES[rule].risk, "keys": sorted(a["keys"]), "clusters": len(a["clusters"]),
            "brokers": a["brokers"], "topics": a["topics"], "partitions": a["partitions"], "bytes": a["bytes"]}
           for rule, a in acc.items()]
    out.sort(key=lambda r: (-RISK_ORDER[r["risk"]], -r["topics"], -r["brokers"], r["rule"]))
    return out


def _by_cluster(s: dict[str, Rows], has_sizes: bool, deleted: dict[str, int],
                topics_deleted: Rows | None = None) -> Rows:
    """Per cluster, most at risk first, then the most topics, partitions and changes. `topicsDeleted`,
    `partitionsDeleted`, `topicBytesDeleted`: the topics its policy.deleteTopics deletes (`deletions.section`'s
    rows; a cluster deleting topics is destructive, even with no config change)."""
    acc: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "brokers": 0, "topics": 0, "partitions": 0, "bytes": 0 if has_sizes else None, "changes": 0, "level": 0,
        "topicsDeleted": 0, "partitionsDeleted": 0, "topicBytesDeleted": 0 if has_sizes else None})
    for r in s["topics"]:
        a = acc[r["cluster"]]
        a["topics"] += r["topics"]
        a["partitions"] += r["partitions"] or 0
        a["bytes"] = _add(a["bytes"], r["bytes"]) if has_sizes else None
        a["level"] = max(a["level"], r["level"] or 0)
    for r in s["keys"]:
        acc[r["cluster"]]["changes"] += r["topics"]
    for r in s["brokerKeys"]:
        acc[r["cluster"]]["changes"] += r["changes"]
        acc[r["cluster"]]["level"] = max(acc[r["cluster"]]["level"], r["level"] or 0)
    for r in s["hitBrokers"]:
        acc[r["cluster"]]["brokers"] = r["brokers"]
    for r in topics_deleted or ():
        a = acc[r["cluster"]]
        a |= {"topicsDeleted": r["topics"], "partitionsDeleted": r["partitions"],
              "topicBytesDeleted": r["bytes"] if has_sizes else None}
        a["level"] = max(a["level"], RISK_ORDER[r["risk"]])
    out = [{"cluster": c, "brokers": a["brokers"], "topics": a["topics"], "partitions": a["partitions"],
            "bytes": a["bytes"], "changes": a["changes"], "risk": _name(a["level"]),
            "bytesDeletedEstimate": deleted.get(c, 0) if has_sizes else None, "topicsDeleted": a["topicsDeleted"],
            "partitionsDeleted": a["partitionsDeleted"], "topicBytesDeleted": a["topicBytesDeleted"],
            "level": a["level"]} for c, a in acc.items()]
    out.sort(key=lambda r: (-r["level"], -r["topics"], -r["partitions"], -r["changes"], r["cluster"]))
    for r in out:
        del r["level"]
    return out
