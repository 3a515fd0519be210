"""kind Policy across the fleet, in Spark: violations per cluster and rule over the after-state of every topic.

What `validate` and `plan` judge entity by entity (reconciler/policy, pure) this counts for every topic of the
inventory's clusters, declared or not, as apply would leave them (`afterstate`): a topic's overrides are its
declared config if the manifests declare it (policy.ignoreKeys kept), its live ones otherwise; its partitions
and replication factor are the live ones, or the declared ones for a topic created or grown. A key a topic does
not override takes the cluster's value resolved on the driver with `effective.EntityResolver` (Kafka's
ConfigHelper precedence: `brokers/<default>` after apply, then server.properties, then Kafka's default; a topic
described with `broker=None`, as `plan` judges it). Every rule becomes one Spark column expression over a topic
row (`_violates`); one hash aggregate by cluster counts them all in one job.

Scope: topic rules (`kinds` containing topics) and the topic count limit; broker and quota entities are few and
judged by `plan` and `reconcile` (pure). Selector names and name patterns are matched on the driver with RE2, as
the pure evaluator matches them (`policy.patterns`), over the distinct topic names (one small job): Spark's
`rlike` is Java's backtracking engine, where a pull request's own pattern such as `(a+)+b` would hang the job.
Exceptions are resolved on the driver: a valid one removes its (cluster, topic) from its rules; an expired one
waives nothing.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from reconciler.catalog import Catalog, load_catalog
from reconciler.effective import EntityResolver, Setting
from reconciler.impact.afterstate import AfterRows, after_apply
from reconciler.impact.frames import is_in, local_df, pair_in
from reconciler.impact.inventory import Inventory
from reconciler.model import DEFAULT_ENTITY, EntityRef
from reconciler.policy.evaluate import cluster_selected
from reconciler.policy.model import PolicyDoc, PolicySet, Rule
from reconciler.policy.patterns import full_match
from reconciler.units import NEGATIVE_MEANS_UNLIMITED

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_DEFAULT = EntityRef("brokers", DEFAULT_ENTITY)
_ANY_TOPIC = EntityRef("topics", "")  # a topic without overrides: the cluster's value of a key


class _RowLayers:
    """`effective.Layers` over a cluster's broker rows: `brokers/<default>` and the shared server.properties."""

    def __init__(self, dynamic: Mapping[str, str], static: Mapping[str, str]) -> None:
        self._dynamic = {k: Setting(v, "brokers/<default>") for k, v in dynamic.items()}
        self._static = {k: Setting(v, "server.properties") for k, v in static.items()}

    def dynamic(self, ref: EntityRef) -> Mapping[str, Setting]:
        return self._dynamic if ref == _DEFAULT else {}

    def static(self, broker: str) -> Mapping[str, Setting]:
        return self._static if broker == DEFAULT_ENTITY else {}


def _fallbacks(catalog: Catalog, dynamic: Mapping[str, str], static: Mapping[str, str], keys: Sequence[str]
               ) -> dict[str, tuple[str | None, bool]]:
    """key -> (the value a topic without an override gets, whether anything but Kafka's default sets it)."""
    resolve = EntityResolver(_RowLayers(dynamic, static), catalog, _ANY_TOPIC)
    out = {}
    for key in keys:
        eff = resolve(key)
        out[key] = (eff.value, eff.head is not None and eff.head.source != "DEFAULT_CONFIG")
    return out


def _topic_rules(policies: PolicySet) -> list[tuple[PolicyDoc, Rule]]:
    return [(p, r) for p in policies.policies if "topics" in p.selector.kinds for r in p.rules]


class _Names:
    """Which topic names each pattern matches, with RE2 on the driver (`policy.patterns.full_match`): the
    distinct names of the assessed topics, collected once, only when a policy has a name pattern."""

    def __init__(self, spark: SparkSession, topics: DataFrame) -> None:
        self._spark, self._topics = spark, topics
        self._names: list[str] | None = None
        self._matched: dict[str, Column] = {}

    def matching(self, pattern: str) -> Column:
        """`topic` is a name `pattern` matches whole."""
        if pattern not in self._matched:
            if self._names is None:
                self._names = [r["topic"] for r in self._topics.select("topic").distinct().collect()]
            self._matched[pattern] = is_in(self._spark, "topic", [n for n in self._names if full_match(pattern, n)])
        return self._matched[pattern]


def _number(value: Column, key: str) -> Column:
    from pyspark.sql import functions as F

    n = F.trim(value).try_cast("double")
    if key in NEGATIVE_MEANS_UNLIMITED:  # -1: no limit, above every bound (policy.evaluate._number)
        n = F.when(n < 0, F.lit(float("inf"))).otherwise(n)
    return n


def _value(key: str, after: bool = True) -> Column:
    from pyspark.sql import functions as F

    if key == "partitions":
        return F.col("partitions").cast("string") if after else F.col("partitions_before").cast("string")
    if key == "replicationFactor":
        return F.col("rf").cast("string")
    own, fb = ("after_cfg", "fb_after") if after else ("before_cfg", "fb_before")
    return F.coalesce(F.col(own)[key], F.col(fb)[key])


def _violates(rule: Rule, names: _Names) -> Column | None:
    """A topic row breaks `rule` (None for rules that are not about one topic's values)."""
    from pyspark.sql import functions as F

    key = rule.key or ""
    if rule.check == "namePattern" and rule.pattern is not None:
        return ~names.matching(rule.pattern)
    if rule.check == "required":
        missing = [F.col("after_cfg")[k].isNull() & F.col("fb_set")[k].isNull() for k in rule.values]
        return functools.reduce(lambda x, y: x | y, missing)
    value = _value(key)
    if rule.check == "bounds":
        n = _number(value, key)
        out = F.lit(False)
        if rule.minimum is not None:
            out = out | n.isNull() | (n < rule.minimum)
        if rule.maximum is not None:
            out = out | n.isNull() | (n > rule.maximum)
        return value.isNotNull() & out
    if rule.check in ("allowed", "forbidden"):
        inside = F.lower(F.trim(value)).isin([v.lower() for v in rule.values])
        return value.isNotNull() & (~inside if rule.check == "allowed" else inside)
    if rule.check == "maxDecrease" and rule.limit:
        b, a = _number(_value(key, after=False), key), _number(value, key)
        return F.col("existed") & a.isNotNull() & b.isNotNull() & (a < b) & (a * rule.limit < b)
    return None


def _selected(spark: SparkSession, policy: PolicyDoc, clusters: Sequence[str], names: _Names) -> Column:
    sel = is_in(spark, "cluster", list(clusters))
    if policy.selector.names:
        sel = sel & functools.reduce(lambda x, y: x | y, [names.matching(p) for p in policy.selector.names])
    return sel


def _waived(spark: SparkSession, policy: PolicyDoc, rule: Rule, clusters: Sequence[str], today: date) -> Column:
    from pyspark.sql import functions as F

    pairs = [(c, e.entity.split("/", 1)[1]) for e in policy.exceptions
             if e.expires >= today and e.entity.startswith("topics/") and (not e.rules or rule.id in e.rules)
             for c in clusters if not e.clusters or any(fnmatch.fnmatchcase(c, p) for p in e.clusters)]
    return pair_in(spark, "cluster", "topic", pairs) if pairs else F.lit(False)


def _topic_rows(spark: SparkSession, inv: Inventory, after: AfterRows, clusters: list[str], keys: list[str],
                fallbacks: Mapping[str, tuple[dict[str, str | None], dict[str, str | None], dict[str, bool]]]
                ) -> DataFrame:
    """(cluster, topic, partitions, partitions_before, rf, existed, after_cfg, before_cfg, fb_after, fb_before,
    fb_set): every topic of `clusters` after apply, its overrides of `keys` after and before as maps."""
    from pyspark.sql import functions as F

    live = only_clusters(spark, inv.topics, clusters).select(
        "cluster", "topic", F.col("partitions").alias("lp"), F.col("replication_factor").alias("lrf"))
    declared = local_df(spark, [t for t in after.topics if t[0] in clusters],
                        "cluster STRING, topic STRING, dp INT, drf INT")
    topics = live.join(declared, ["cluster", "topic"], "full_outer").select(
        "cluster", "topic", F.coalesce(F.greatest("lp", "dp"), "lp", "dp").alias("partitions"),
        F.col("lp").alias("partitions_before"), F.coalesce("lrf", "drf").alias("rf"),
        F.col("lp").isNotNull().alias("existed"))
    overrides = only_clusters(spark, inv.configs, clusters).filter(
        (F.col("entity_type") == "topics") & F.col("key").isin(keys)).select(
        "cluster", F.col("entity").alias("topic"), "key", "value")
    declared_topics = [(c, e) for c, t, e in after.declared if t == "topics" and c in clusters]
    ignored = [(c, k) for c, _prune, ignore in after.policies if c in clusters for k in ignore or ()]
    kept = overrides.filter(~pair_in(spark, "cluster", "topic", declared_topics)
                            | pair_in(spark, "cluster", "key", ignored)) if declared_topics else overrides
    wanted = set(keys)
    desired = local_df(spark, [(c, e, k, v) for c, t, e, k, v in after.configs
                               if t == "topics" and c in clusters and k in wanted],
                       "cluster STRING, topic STRING, key STRING, value STRING")
    after_cfg = kept.unionByName(desired).groupBy("cluster", "topic").agg(
        F.map_from_entries(F.collect_list(F.struct("key", "value"))).alias("after_cfg"))
    before_cfg = overrides.groupBy("cluster", "topic").agg(
        F.map_from_entries(F.collect_list(F.struct("key", "value"))).alias("before_cfg"))
    fb = local_df(spark, [(c, a, b, {k: "1" for k, s in set_.items() if s}) for c, (a, b, set_) in fallbacks.items()],
                  "cluster STRING, fb_after MAP<STRING,STRING>, fb_before MAP<STRING,STRING>, "
                  "fb_set MAP<STRING,STRING>")
    empty = F.create_map().cast("map<string,string>")
    return (topics.join(after_cfg, ["cluster", "topic"], "left").join(before_cfg, ["cluster", "topic"], "left")
            .join(F.broadcast(fb), "cluster", "left")
            .select("cluster", "topic", "partitions", "partitions_before", "rf", "existed",
                    F.coalesce("after_cfg", empty).alias("after_cfg"), F.coalesce("before_cfg", empty)
                    .alias("before_cfg"), "fb_after", "fb_before", "fb_set"))


def only_clusters(spark: SparkSession, df: DataFrame, clusters: list[str]) -> DataFrame:
    return df.filter(is_in(spark, "cluster", clusters))


def _cluster_fallbacks(spark: SparkSession, inv: Inventory, after: AfterRows, clusters: list[str],
                       keys: list[str], catalog: Catalog
                       ) -> dict[str, tuple[dict[str, str | None], dict[str, str | None], dict[str, bool]]]:
    """cluster -> (values after, values before, set after): a topic's inherited values, resolved on the driver
    from the few `brokers/<default>` rows (live, and as apply leaves them) and the shared server.properties."""
    from pyspark.sql import functions as F

    rows = only_clusters(spark, inv.configs, clusters).filter(
        (F.col("entity_type") == "brokers") & (F.col("entity") == DEFAULT_ENTITY)).select(
        "cluster", "entity", "key", "value").collect()
    live = [(r["cluster"], r["entity"], r["key"], r["value"]) for r in rows]
    kept = after_apply(live, after, "brokers", prunable=True)
    out = {}
    for c in clusters:
        static = {k: v for sc, b, k, v in after.static if sc == c and b == DEFAULT_ENTITY}
        now = {k: v for lc, _e, k, v in live if lc == c}
        later = {k: v for (kc, e, k), v in kept.items() if kc == c and e == DEFAULT_ENTITY}
        a, b = _fallbacks(catalog, later, static, keys), _fallbacks(catalog, now, static, keys)
        out[c] = ({k: v for k, (v, _) in a.items()}, {k: v for k, (v, _) in b.items()},
                  {k: s for k, (_, s) in a.items()})
    return out


def policy_counts(spark: SparkSession, inv: Inventory, after: AfterRows, labels: Mapping[str, Mapping[str, str]],
                  policies: PolicySet, today: date, catalog: Catalog | None = None) -> dict[str, Any]:
    """The report's `policy` section: per (cluster, policy, rule) the topics that break it after the change."""
    from pyspark.sql import functions as F

    catalog = catalog or load_catalog()
    present = {r["cluster"] for r in inv.topics.select("cluster").distinct().collect()}
    clusters = [c for c in after.clusters if c in present]
    rules = _topic_rules(policies)
    keys = sorted({r.key for _, r in rules if r.key and r.key not in ("partitions", "replicationFactor")}
                  | {k for _, r in rules if r.check == "required" for k in r.values})
    columns: list[Column] = []
    named: list[tuple[PolicyDoc, Rule, str]] = []
    if clusters and rules:
        t = _topic_rows(spark, inv, after, clusters, keys,
                        _cluster_fallbacks(spark, inv, after, clusters, keys, catalog))
        names = _Names(spark, t)
        for i, (policy, rule) in enumerate(rules):
            selected = [c for c in clusters if cluster_selected(policy.selector, policy, c, labels.get(c, {}))]
            if not selected:
                continue
            sel = _selected(spark, policy, selected, names)
            bad = F.lit(True) if rule.check == "maxCount" else _violates(rule, names)
            if bad is None:
                continue
            hit = sel & F.coalesce(bad, F.lit(False)) & ~_waived(spark, policy, rule, selected, today)
            columns.append(F.sum(F.when(hit, 1).otherwise(0)).alias(f"r{i}"))
            named.append((policy, rule, f"r{i}"))
        found = t.groupBy("cluster").agg(*columns).collect() if columns else []
    else:
        found = []
    return _section(found, named)


def _section(found: list[Any], named: list[tuple[PolicyDoc, Rule, str]]) -> dict[str, Any]:
    by_cluster: list[dict[str, Any]] = []
    for row in sorted(found, key=lambda r: r["cluster"]):
        for policy, rule, col in named:
            n = int(row[col] or 0)
            if rule.check == "maxCount":  # the count itself; one violation when over the limit
                n = 1 if rule.limit is not None and n > rule.limit else 0
            if n:
                by_cluster.append({"cluster": row["cluster"], "policy": policy.name, "rule": rule.id,
                                   "severity": rule.severity, "violations": n})
    totals: dict[tuple[str, str], dict[str, Any]] = {}
    for r in by_cluster:
        t = totals.setdefault((r["policy"], r["rule"]), {"policy": r["policy"], "rule": r["rule"],
                                                         "severity": r["severity"], "clusters": 0, "violations": 0})
        t["clusters"] += 1
        t["violations"] += r["violations"]
    return {
        "rules": sorted(totals.values(), key=lambda t: (t["severity"] != "error", -t["violations"], t["policy"],
                                                        t["rule"])),
        "byCluster": by_cluster,
        "errors": sum(r["violations"] for r in by_cluster if r["severity"] == "error"),
        "warnings": sum(r["violations"] for r in by_cluster if r["severity"] == "warning"),
        "clusters": len({r["cluster"] for r in by_cluster}),
    }


POLICY_ROWS = 20  # per table in the Markdown report


def policy_markdown(section: dict[str, Any] | None, cell: Any = str) -> list[str]:
    """The report's "Policy" section (`cell` escapes a name for a Markdown table: report._cell)."""
    if not section or not section.get("rules"):
        return [] if section is None else ["", "### Policy", "", "No policy violation after the change."]
    out = ["", f"### Policy: {section['errors']:,} error(s), {section['warnings']:,} warning(s) in "
               f"{section['clusters']:,} cluster(s), after the change", "",
           "| policy | rule | severity | clusters | violations |", "| --- | --- | --- | ---: | ---: |"]
    out += [f"| {cell(r['policy'])} | {cell(r['rule'])} | {r['severity']} | {r['clusters']:,} | {r['violations']:,} |"
            for r in section["rules"][:POLICY_ROWS]]
    out += ["", "| cluster | policy | rule | violations |", "| --- | --- | --- | ---: |"]
    worst = sorted(section["byCluster"], key=lambda r: (-r["violations"], r["cluster"]))[:POLICY_ROWS]
    out += [f"| {cell(r['cluster'])} | {cell(r['policy'])} | {cell(r['rule'])} | {r['violations']:,} |" for r in worst]
    if len(section["byCluster"]) > POLICY_ROWS:
        out += ["", f"… and {len(section['byCluster']) - POLICY_ROWS:,} more rows in report.json"]
    return out


def fleet_policy_counts(spark: SparkSession, inv: Inventory, after: AfterRows, states: Mapping[str, Any],
                        repo: Any, base: Any = None) -> dict[str, Any] | None:
    """What `run_impact` adds to the summary as `policy`: the policies of the manifests at `repo` over the
    assessed clusters (`states`: their labels), or None when the repository has none. `base`: a manifests root
    holding the policy files of `--git-base` (impact/gitbase.py); when the branch changes the policies, the
    section is `policy_change_counts` (what the edit newly flags or clears across the fleet)."""
    from reconciler.manifests.policy import load_policies, today

    policies, problems = load_policies(repo)
    if any(d.severity == "error" for d in problems):
        return None
    labels = {name: dict(state.cluster.labels) for name, state in states.items()}
    if base is not None:
        before, base_problems = load_policies(base)
        if before != policies and not any(d.severity == "error" for d in base_problems):
            return policy_change_counts(spark, inv, after, labels, before, policies, today())
    if not policies:
        return None
    return policy_counts(spark, inv, after, labels, policies, today())


def policy_change_counts(spark: SparkSession, inv: Inventory, after: AfterRows,
                         labels: Mapping[str, Mapping[str, str]], base: PolicySet, head: PolicySet, today: date
                         ) -> dict[str, Any]:
    """A pull request that edits policies, fleet-wide: the head's policies counted as `policy_counts` counts them,
    with the base's counts beside them per (cluster, policy, rule) (`newly`: violations the edit adds)."""
    old = policy_counts(spark, inv, after, labels, base, today)
    new = policy_counts(spark, inv, after, labels, head, today)
    key = ("cluster", "policy", "rule")
    before = {tuple(r[k] for k in key): r["violations"] for r in old["byCluster"]}
    later = {tuple(r[k] for k in key): r["violations"] for r in new["byCluster"]}
    rows = [{"cluster": c, "policy": p, "rule": r, "base": before.get((c, p, r), 0), "head": later.get((c, p, r), 0)}
            for c, p, r in sorted(before.keys() | later.keys())]
    rows = [r for r in rows if r["base"] != r["head"]]
    return {**new, "change": {"rows": rows, "newly": sum(max(0, r["head"] - r["base"]) for r in rows),
                              "cleared": sum(max(0, r["base"] - r["head"]) for r in rows),
                              "base": {"errors": old["errors"], "warnings": old["warnings"]}}}


def policy_change_markdown(section: dict[str, Any], cell: Any = str) -> list[str]:
    """The fleet-wide figure of a policy edit: per cluster and rule, the base's count and the head's."""
    change = section.get("change")
    if not change:
        return []
    out = ["", f"### Policy edit across the fleet: {change['newly']:,} violation(s) newly flagged, "
               f"{change['cleared']:,} no longer flagged", ""]
    if not change["rows"]:
        return [*out, "The edited policies flag exactly what the base's flag."]
    out += ["| cluster | policy | rule | base | head |", "| --- | --- | --- | ---: | ---: |"]
    out += [f"| {cell(r['cluster'])} | {cell(r['policy'])} | {cell(r['rule'])} | {r['base']:,} | {r['head']:,} |"
            for r in change["rows"][:POLICY_ROWS]]
    return out
