"""The driver's half of the topic side: for every topic the job looks at, the keys whose effective value may
change, each already resolved down to what only the topic's own data can still decide. Pure Python.

Effective value of topic key k on broker b (KIP-226 precedence, `LogConfig` over the broker's `KafkaConfig`):
the topic's override of k if it has one, else the broker-side value of k on b (`brokerside`, Kafka's default
included). An undeclared topic keeps its overrides (apply never touches it), so an override shields it: its
value changes only where it has none and the broker side of k changes. A declared topic's overrides before
(the first query's `declared_live`) and after (the manifests, `overrides`) are known here. So every value a
topic row can hold, before and after, is known on the driver, and so is its risk (the plan's own rules,
`reconciler.risk.fired_rules`): Spark never compares or rates a value. What is left for Spark, per topic:
  - uniform keys (every broker of the cluster has the same value before and the same after): the change hits
    the whole topic unless an override shields it;
  - mixed keys: the partitions with a replica on a broker whose value changes (`hb`), shown on the lowest such
    broker, rated as the union of those brokers' rules.
Candidates for undeclared topics are per cluster (`by_cluster`), for declared topics per topic (`by_topic`,
complete: Spark uses them instead of the cluster's). Sizes stay bounded by what the driver holds anyway (the
broker side and the manifests), whatever the number of topics: there is no fleet-wide product of values.
A rating depends on the replication factor only for `above_rf` rules; those keys carry one rating per
replication factor found in the cluster (`rrf`, -1 for an unknown one), the others one rating under -1.

A rating also depends on the topic's effective cleanup.policy after the change, as the plan's does
(`risk.assess(cleanup_policy=...)`: without `delete`, lowering retention deletes nothing). Each rating is made
for both cases, a policy with `delete` (`mask`, `level`, `why`) and one without (`nmask`, `nlevel`, `nwhy`), and
each topic row picks by its own policy: its cleanup.policy override (the job reads it, `pol`), else the broker
side's after value on that broker (`ind`: true when it lacks `delete`). A declared topic's policy after apply is
known here (`fixed`: its ratings or its `ind` hold, whatever its live override). When brokers of a cluster
disagree on the inherited policy and the rating depends on it, the candidate is made per broker, as for values
that differ.
`why` indexes `Candidates.reasons`: the plan's reasons of that rating (`risk.assess`), shipped to Spark as an id.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.impact import keys as K
from reconciler.impact.brokerside import BrokerSide, same
from reconciler.impact.overrides import DeclaredOverrides
from reconciler.impact.riskexpr import RULES, mask_of
from reconciler.model import RISK_ORDER, ChangeOp, EntityRef
from reconciler.risk import assess, fired_rules, rules_for_key

NO_RF = -1
_RATING = "ARRAY<STRUCT<mask: BIGINT, level: INT, why: INT, nmask: BIGINT, nlevel: INT, nwhy: INT>>"
CAND_DDL = (f"STRUCT<key: STRING, idx: INT, src: STRING, uniform: BOOLEAN, changed: BOOLEAN, own: BOOLEAN, "
            f"fixed: BOOLEAN, ind: BOOLEAN, vb: STRING, va: STRING, rrf: ARRAY<INT>, rv: {_RATING}, "
            f"hb: ARRAY<INT>, hv: ARRAY<STRUCT<vb: STRING, va: STRING, ind: BOOLEAN, rrf: ARRAY<INT>, rv: {_RATING}>>>")
Cand = dict[str, Any]
POLICY_KEY = "cleanup.policy"
_TOPIC = EntityRef("topics", "topic")  # assess reads only the entity's type
_WITH_DELETE, _WITHOUT_DELETE = frozenset({"delete"}), frozenset({"compact"})


def no_delete(value: str | None) -> bool:
    """A cleanup.policy value without `delete` (unset or empty: Kafka's `delete`, as `RiskContext` reads it)."""
    return "delete" not in {p.strip().lower() for p in (value or "delete").split(",") if p.strip()}


class Rater:
    """The plan's rating of every distinct topic change (`risk.assess` for risk and reasons, `risk.fired_rules`
    for the rule ids), once per case; reasons are numbered (`reasons[why]`, 0: none) so Spark carries an int."""

    def __init__(self) -> None:
        self.reasons: list[tuple[str, ...]] = [()]
        self._ids: dict[tuple[str, ...], int] = {(): 0}
        self._memo: dict[tuple[Any, ...], dict[str, int]] = {}

    def _why(self, reasons: tuple[str, ...]) -> int:
        if (found := self._ids.get(reasons)) is None:
            found = self._ids[reasons] = len(self.reasons)
            self.reasons.append(reasons)
        return found

    def rate(self, key: str, op: ChangeOp, before: str | None, after: str | None, rf: int | None,
             fixed: bool | None = None) -> dict[str, int]:
        """Both cleanup-policy cases of one change of effective values (`op`: how the topic's own override
        changes, `~` when only the inherited value does); `fixed`: the topic's own case, known here."""
        case = (key, op, before, after, rf, fixed)
        if (found := self._memo.get(case)) is None:
            with_delete = self._one(key, op, before, after, rf, _WITHOUT_DELETE if fixed else _WITH_DELETE)
            without = with_delete if fixed is not None else self._one(key, op, before, after, rf, _WITHOUT_DELETE)
            found = self._memo[case] = {**with_delete, **{"n" + k: v for k, v in without.items()}}
        return found

    def _one(self, key: str, op: ChangeOp, before: str | None, after: str | None, rf: int | None,
             policy: frozenset[str]) -> dict[str, int]:
        inherited = before if op == "+" else after if op == "-" else None
        risk, reasons = assess(key, op, None if op == "+" else before, None if op == "-" else after, entity=_TOPIC,
                               topic_rf=rf, inherited=inherited, cleanup_policy=policy)
        rules = _kept(fired_rules(key, before, after, topic=True, rf=rf), reasons,
                      assess(key, op, None if op == "+" else before, None if op == "-" else after, entity=_TOPIC,
                             topic_rf=rf, inherited=inherited, cleanup_policy=_WITH_DELETE)[1], RISK_ORDER[risk])
        return {"mask": mask_of(rules), "level": RISK_ORDER[risk], "why": self._why(reasons)}


def _kept(rules: tuple[str, ...], reasons: tuple[str, ...], unfiltered: tuple[str, ...], level: int
          ) -> tuple[str, ...]:
    """The rules of `rules` (fired with no policy, i.e. `delete`) that still fire under the case's policy:
    `fired_rules` takes no cleanup.policy, so each rule is matched with its reason in `assess`'s unfiltered
    reasons (ordered most severe first, table order within a risk) and kept if the case still gives it."""
    if reasons == unfiltered:
        return rules
    order = sorted(rules, key=lambda r: (-RISK_ORDER[RULES[r].risk], list(RULES).index(r)))
    if len(order) == len(unfiltered):
        return tuple(r for r, why in zip(order, unfiltered, strict=True) if why in reasons)
    return tuple(r for r in rules if RISK_ORDER[RULES[r].risk] <= level)  # reasons merged: by risk only


@dataclass
class Candidates:
    by_cluster: dict[str, list[Cand]] = field(default_factory=dict)  # undeclared topics of the cluster
    by_topic: dict[tuple[str, str], list[Cand]] = field(default_factory=dict)  # every declared topic
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (cluster, key) of by_cluster: shields to read
    replica_clusters: list[str] = field(default_factory=list)  # a mixed key hits some broker: replicas needed
    replica_topics: list[tuple[str, str]] = field(default_factory=list)  # declared topics elsewhere needing them
    policy_clusters: list[str] = field(default_factory=list)  # a rating depends on a topic's own cleanup.policy
    rater: Rater = field(default_factory=Rater)  # every rating made, with its reasons (`reasons[why]`)

    @property
    def reasons(self) -> list[tuple[str, ...]]:
        return self.rater.reasons

    def __len__(self) -> int:
        return sum(map(len, self.by_cluster.values())) + sum(map(len, self.by_topic.values()))


@functools.cache
def rf_keys() -> frozenset[str]:
    """Topic keys whose rating depends on the replication factor."""
    return frozenset(k for k in K.topic_keys() if any(r.kind == "above_rf" and r.keys for r in rules_for_key(k)))


@functools.cache
def key_index() -> dict[str, int]:
    """Topic key -> its bit in a topic's shield mask (36 keys: a BIGINT holds them)."""
    return {k: i for i, k in enumerate(K.topic_keys())}


def _op(ob: str | None, oa: str | None) -> ChangeOp:
    """How a topic's own override changes (`~` also when it has none and only the inherited value changes)."""
    return "+" if ob is None and oa is not None else "-" if ob is not None and oa is None else "~"


def _rating(rater: Rater, key: str, before: str | None, after: str | None, rfs: Iterable[int],
            op: ChangeOp = "~", fixed: bool | None = None) -> dict[str, list[Any]]:
    """`rrf`/`rv`: the rating of the pair for each replication factor it depends on, both policy cases."""
    by_rf = [NO_RF, *sorted(set(rfs))] if key in rf_keys() else [NO_RF]
    return {"rrf": by_rf,
            "rv": [rater.rate(key, op, before, after, None if rf == NO_RF else rf, fixed) for rf in by_rf]}


def _first(*values: str | None) -> str | None:
    return next((v for v in values if v is not None), None)


@dataclass(frozen=True)
class _Policy:
    """What decides a candidate's cleanup-policy case: per broker, whether the inherited policy after the change
    lacks `delete`; `fixed`: a declared topic's own override after apply (None: it inherits, or undeclared);
    `declared`: the topic's policy after apply is known here (its live override, which Spark reads, is not it)."""

    inherited: Mapping[int, bool]  # brokers where some layer sets it (else Kafka's default, with `delete`)
    fixed: bool | None = None
    declared: bool = False

    def of(self, broker: int) -> bool:
        return self.fixed if self.fixed is not None else self.inherited.get(broker, False)

    @property
    def uniform(self) -> bool:
        return self.fixed is not None or len(set(self.inherited.values())) <= 1

    def shared(self) -> bool:
        return self.fixed if self.fixed is not None else next(iter(self.inherited.values()), False)


def _cand(rater: Rater, key: str, src: str, uniform_values: tuple[str | None, str | None] | None,
          per_broker: Mapping[int, tuple[str | None, str | None]], rfs: Iterable[int], policy: _Policy, *,
          idx: int, op: ChangeOp = "~") -> Cand:
    """One candidate: uniform when `uniform_values` is given (and the rating does not depend on a policy that
    differs between brokers), else per broker (only brokers where it changes)."""
    is_list = key in K.list_keys()
    cand: Cand = {"key": key, "idx": idx, "src": src, "uniform": True, "changed": False, "own": False,
                  "fixed": policy.declared, "ind": policy.shared(), "vb": None, "va": None, "rrf": [],
                  "rv": [], "hb": [], "hv": []}
    if uniform_values is not None:
        vb, va = uniform_values
        cand |= {"vb": vb, "va": va, "changed": not same(vb, va, is_list)}
        if not cand["changed"]:
            return cand
        cand |= _rating(rater, key, vb, va, rfs, op, policy.fixed)
        if policy.uniform or all(r["mask"] == r["nmask"] and r["why"] == r["nwhy"] for r in cand["rv"]):
            return cand
        per_broker = {b: (vb, va) for b in policy.inherited}  # the rating differs with each broker's policy
        cand |= {"vb": None, "va": None, "changed": False, "rrf": [], "rv": []}
    cand["uniform"] = False
    for b in sorted(per_broker):
        vb, va = per_broker[b]
        if not same(vb, va, is_list):
            cand["hb"].append(b)
            cand["hv"].append({"vb": vb, "va": va, "ind": policy.of(b),
                               **_rating(rater, key, vb, va, rfs, op, policy.fixed)})
    return cand


def _broker_facts(bs: BrokerSide, cluster: str, key: str, default: str | None
                  ) -> tuple[bool, bool, str | None, str | None]:
    """(uniform across brokers, changed anywhere, before, after) of a topic key's broker side; a key no layer
    sets is Kafka's default on every broker, before and after."""
    return bs.topic_keys.get((cluster, key), (True, False, default, default))


def _hits(cand: Cand) -> bool:
    return bool(cand["changed"] or cand["hb"])


def _depends_on_policy(cand: Cand) -> bool:
    """The topic's own cleanup.policy override may change the candidate's rating (undeclared topics only)."""
    ratings = [*cand["rv"], *(r for h in cand["hv"] for r in h["rv"])]
    return not cand["fixed"] and any(r["mask"] != r["nmask"] or r["why"] != r["nwhy"] for r in ratings)


def candidates(bs: BrokerSide, decl: DeclaredOverrides, clusters: Iterable[str], rfs: Mapping[str, set[int]],
               *, full: bool = False) -> Candidates:
    """Every cluster's candidates (the keys changed at its broker side, or with `full` every topic key) and
    every declared topic's (those keys plus its own override changes)."""
    defaults = {r[0]: r[3] for r in K.key_rows() if r[1]}
    per_broker: dict[tuple[str, str], dict[int, tuple[str | None, str | None]]] = {}
    for (c, b, k), values in bs.values.items():
        per_broker.setdefault((c, k), {})[b] = values
    inherited: dict[str, dict[int, bool]] = {}  # cluster -> broker -> its cleanup.policy after lacks `delete`
    for (c, b, k), (_vb, va) in bs.values.items():
        if k == POLICY_KEY:
            inherited.setdefault(c, {})[b] = no_delete(va)
    changed_keys: dict[str, list[str]] = {}
    for c, k, *_ in bs.changed_pairs():
        changed_keys.setdefault(c, []).append(k)
    out = Candidates()
    covered: dict[str, list[str]] = {}
    for c in clusters:
        covered[c] = list(K.topic_keys()) if full else changed_keys.get(c, [])
        out.by_cluster[c] = []
        policy = _Policy(inherited.get(c, {}))
        for k in covered[c]:
            uniform, broker_changed, vb, va = _broker_facts(bs, c, k, defaults[k])
            cand = _cand(out.rater, k, "broker" if broker_changed else "override", (vb, va) if uniform else None,
                         per_broker.get((c, k), {}), rfs.get(c, set()), policy, idx=key_index()[k])
            if full or _hits(cand):
                out.by_cluster[c].append(cand)
                out.pairs.append((c, k))
    out.by_topic = _declared(out.rater, bs, decl, covered, per_broker, rfs, defaults, inherited, full)
    mixed = {c for c, cands in out.by_cluster.items() if any(cand["hb"] for cand in cands)}
    out.replica_clusters = sorted(mixed)
    out.replica_topics = sorted(ct for ct, cands in out.by_topic.items() if ct[0] not in mixed
                                and any(cand["hb"] or cand["own"] for cand in cands))
    out.policy_clusters = sorted(c for c, cands in out.by_cluster.items() if any(map(_depends_on_policy, cands)))
    return out


def _declared(rater: Rater, bs: BrokerSide, decl: DeclaredOverrides, covered: Mapping[str, list[str]],
              per_broker: Mapping[tuple[str, str], Mapping[int, tuple[str | None, str | None]]],
              rfs: Mapping[str, set[int]], defaults: Mapping[str, str | None], inherited: Mapping[str, dict[int, bool]],
              full: bool) -> dict[tuple[str, str], list[Cand]]:
    """A declared topic's candidates: its overrides before and after applied to every broker-side value, rated
    with its own cleanup.policy after apply (its override, else the broker side's)."""
    live: dict[tuple[str, str], dict[str, str | None]] = {t: {} for t in decl.topics}
    after: dict[tuple[str, str], dict[str, str | None]] = {t: {} for t in decl.topics}
    own: dict[tuple[str, str], set[str]] = {t: set() for t in decl.topics}  # keys whose override changes
    for c, t, k, ob, _oa in decl.changed:
        live.setdefault((c, t), {})[k] = ob
        own.setdefault((c, t), set()).add(k)
    for c, t, k, v in decl.after_values:
        after.setdefault((c, t), {})[k] = v
    out: dict[tuple[str, str], list[Cand]] = {}
    for (c, t), keys in own.items():
        cands = []
        override = after[(c, t)].get(POLICY_KEY)
        policy = _Policy(inherited.get(c, {}), None if override is None else no_delete(override), declared=True)
        for k in sorted(set(covered.get(c, [])) | keys):
            if k not in defaults:
                continue  # not a topic config Kafka knows: no effective value to change
            ob = live[(c, t)].get(k, after[(c, t)].get(k))  # unchanged overrides are the same after
            oa = after[(c, t)].get(k)
            op = _op(ob, oa)
            uniform, broker_changed, vb, va = _broker_facts(bs, c, k, defaults[k])
            src = "broker" if broker_changed else "override"
            if uniform:
                cand = _cand(rater, k, src, (_first(ob, vb), _first(oa, va)), {}, rfs.get(c, set()), policy,
                             idx=-1, op=op)
                cand["own"] = cand["changed"] and not broker_changed  # its hosts count as hit brokers
            else:
                brokers = {b: (_first(ob, x), _first(oa, y)) for b, (x, y) in per_broker.get((c, k), {}).items()}
                cand = _cand(rater, k, src, None, brokers, rfs.get(c, set()), policy, idx=-1, op=op)
            if full or _hits(cand):
                cands.append(cand)
        out[(c, t)] = cands
    return out
