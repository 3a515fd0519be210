"""Policies judged over one cluster view: violations, exceptions, and their diagnostics (PURE).

A rule reads the effective value after the change (`views`); a value Kafka hides (a password) or that nothing
sets is not judged by a value check, nor is one that is not a number where a bound expects one (validation
reports it as Kafka would: policies judge only values that parse). Each violation is a Diagnostic at the
manifest line of the value that breaks the rule (else the entity's declaration, else the Cluster document),
naming the policy's file:line, its message and documentation link; `error` blocks (validate, plan, the PR
check), `warn` is a warning. An exception waives the rules it names for one entity until its expiry date
(inclusive); once expired it waives nothing: a violation it would have waived is an error like any other that
names the exception, its line and its expiry; it blocks what it governed, nothing else (in a plan that does not
change that entity it is a warning), and an expired
exception that governs no violation is a warning at its line, to be removed.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from reconciler.errors import Diagnostic
from reconciler.model import SourceRef
from reconciler.policy.model import PolicyDoc, PolicyException, PolicySet, Rule, Selector, Severity
from reconciler.policy.patterns import full_match
from reconciler.policy.views import ClusterView, Subject, Value
from reconciler.units import NEGATIVE_MEANS_UNLIMITED, describe, parse_number

KEY_PREFIX = "policy:"  # a policy diagnostic's key: `policy:<policy>/<rule>` (render.policy_section finds them)


@dataclass(frozen=True, slots=True)
class Violation:
    policy: PolicyDoc
    rule: Rule
    cluster: str
    entity: str  # `topics/orders`, or `cluster` for a count limit
    detail: str  # what is wrong, with the value as read
    source: SourceRef | None  # the value's manifest line (else the entity's, else the Cluster's)
    live: bool = False
    lapsed: PolicyException | None = None  # an expired exception that waived this rule for this entity
    untouched: bool = False  # a plan judged it, and does not change it

    @property
    def severity(self) -> Severity:
        """The rule's; a warning where an exception lapsed on an entity the plan leaves as it is: the exception
        blocks what it governed (a change to that entity), not every other change of the cluster."""
        return "warning" if self.lapsed is not None and self.untouched else self.rule.severity

    def diagnostic(self) -> Diagnostic:
        where = f"{self.rule.source.file}:{self.rule.source.line}"
        docs = f"; see {self.rule.docs}" if self.rule.docs else ""
        said = "in ZooKeeper: " if self.live else ""
        message = (f"policy {self.policy.name}, rule {self.rule.id} ({where}): cluster {self.cluster}: "
                   f"{said}{self.entity}: {self.detail}: {self.rule.message}{docs}")
        if self.lapsed is not None:
            exc = self.lapsed
            message += (f"; the exception for {exc.entity} ({exc.source.file}:{exc.source.line}, reason given: "
                        f"{exc.reason}) expired on {exc.expires.isoformat()}: renew it with a new date or fix "
                        f"{exc.entity}")
            if self.untouched:
                message += f" (this plan does not change {self.entity}, so it does not block it)"
        return Diagnostic(self.severity, message, self.source, f"{KEY_PREFIX}{self.policy.name}/{self.rule.id}")


def cluster_selected(selector: Selector, policy: PolicyDoc, name: str, labels: Mapping[str, str]) -> bool:
    if policy.cluster is not None and policy.cluster != name:
        return False
    if any(labels.get(k) != v for k, v in selector.labels.items()):
        return False
    return not selector.clusters or any(fnmatch.fnmatchcase(name, p) for p in selector.clusters)


def entity_selected(selector: Selector, kind: str, name: str) -> bool:
    return kind in selector.kinds and (not selector.names or any(full_match(p, name) for p in selector.names))


def _number(key: str | None, value: str | None) -> float | None:
    number = parse_number(value)
    if number is not None and number < 0 and key in NEGATIVE_MEANS_UNLIMITED:
        return float("inf")  # -1: no limit, above every bound
    return number


def _shown(key: str, value: Value) -> str:
    return f"{describe(key, value.text)} (from {value.origin})"


def _value_problem(rule: Rule, subject: Subject) -> tuple[str, SourceRef | None] | None:
    """What breaks a value rule on one entity, with the position to report; None when it holds."""
    key = rule.key or ""
    if rule.check == "required":
        missing = [k for k in rule.values if not subject.after(k).is_set]
        if not missing:
            return None
        return f"{', '.join(missing)} not set (Kafka's default applies)", subject.source
    if rule.check == "namePattern":
        if rule.pattern is None or full_match(rule.pattern, subject.name):
            return None
        return f"name {subject.name!r} does not match the pattern {rule.pattern}", subject.source
    value = subject.after(key)
    if value.text is None:
        return None
    at = value.source or subject.source
    if rule.check == "bounds":
        number = _number(key, value.text)
        if number is None:
            return None  # not a number: Kafka's type check reports it (`7d` for a LONG), a bound cannot judge it
        low = rule.minimum is not None and number < rule.minimum
        high = rule.maximum is not None and number > rule.maximum
        if not (low or high):
            return None
        return f"{key} is {_shown(key, value)}, not {rule.bounds_text}", at
    if rule.check in ("allowed", "forbidden"):
        inside = value.text.strip().lower() in {v.lower() for v in rule.values}
        if inside == (rule.check == "allowed"):
            return None
        verb = "allowed" if rule.check == "allowed" else "forbidden"
        return f"{key} is {_shown(key, value)}; {verb}: {', '.join(rule.values)}", at
    if rule.check == "maxDecrease" and subject.before is not None and rule.limit:
        old = subject.before(key)
        b, a = _number(key, old.text), _number(key, value.text)
        if b is None or a is None or a >= b or a * rule.limit >= b:
            return None
        times = "from no limit" if b == float("inf") else f"{b / a:,.1f}×" if a > 0 else "to zero"
        return (f"{key} lowered {times}: {describe(key, old.text)} -> {describe(key, value.text)}, more than "
                f"{rule.limit:g}× at once", at)
    return None


def _governs(exc: PolicyException, rule: Rule, cluster: str, entity: str) -> bool:
    if exc.entity != entity or (exc.rules and rule.id not in exc.rules):
        return False
    return not exc.clusters or any(fnmatch.fnmatchcase(cluster, p) for p in exc.clusters)


def _waiver(policy: PolicyDoc, rule: Rule, cluster: str, entity: str, today: date) -> PolicyException | None:
    return next((e for e in policy.exceptions if e.expires >= today and _governs(e, rule, cluster, entity)), None)


def _lapsed(policy: PolicyDoc, rule: Rule, cluster: str, entity: str, today: date) -> PolicyException | None:
    """The expired exception that would have waived `rule` for `entity` (the violation names it)."""
    return next((e for e in policy.exceptions if e.expires < today and _governs(e, rule, cluster, entity)), None)


def _expired(policy: PolicyDoc, cluster: str, today: date, named: set[PolicyException]) -> list[Diagnostic]:
    """Expired exceptions that govern no violation of `cluster` (those are named by their violations): a
    warning each, to remove them; they waive nothing, so they block nothing."""
    out = []
    for exc in policy.exceptions:
        if exc.expires >= today or exc in named:
            continue
        if not exc.clusters or any(fnmatch.fnmatchcase(cluster, p) for p in exc.clusters):
            out.append(Diagnostic(
                "warning", f"policy {policy.name}: the exception for {exc.entity} expired on "
                f"{exc.expires.isoformat()} (reason given: {exc.reason}) and waives nothing now: remove it",
                exc.source, f"{KEY_PREFIX}{policy.name}/exception"))
    return out


def violations(policies: PolicySet, view: ClusterView, today: date) -> list[Violation]:
    """Every rule broken in `view` that no valid exception waives."""
    found: list[Violation] = []
    for policy in policies.policies:
        sel = policy.selector
        if not cluster_selected(sel, policy, view.name, view.labels):
            continue
        subjects = [s for s in view.subjects if entity_selected(sel, s.ref.entity_type, s.name)]
        for rule in policy.rules:
            if rule.check == "maxCount":
                found += _count(policy, rule, view, today)
                continue
            if rule.check == "maxDecrease" and view.live:
                continue  # a change's size: there is no change in live state
            if rule.check == "maxUnreadLoss":
                continue  # needs consumer offsets: judged by the impact (policy/unread.py)
            for subject in subjects:
                problem = _value_problem(rule, subject)
                entity = subject.ref.display
                if problem is None or _waiver(policy, rule, view.name, entity, today):
                    continue
                found.append(Violation(policy, rule, view.name, entity, problem[0], problem[1] or view.source,
                                       view.live, _lapsed(policy, rule, view.name, entity, today),
                                       not subject.changed))
    return found


def _count(policy: PolicyDoc, rule: Rule, view: ClusterView, today: date) -> list[Violation]:
    sel, out = policy.selector, []
    for kind in sel.kinds:
        names = [n for n in view.population.get(kind, ()) if entity_selected(sel, kind, n)]
        if rule.limit is None or len(names) <= rule.limit or _waiver(policy, rule, view.name, kind, today):
            continue
        out.append(Violation(policy, rule, view.name, kind, f"{len(names):,} {kind}, over the limit of "
                             f"{rule.limit:,.0f}", view.source, view.live, _lapsed(policy, rule, view.name, kind,
                                                                                   today)))
    return out


def diagnostics(policies: PolicySet, view: ClusterView, today: date) -> list[Diagnostic]:
    """The violations of `view` and the expired exceptions of the policies that select it."""
    found = violations(policies, view, today)
    out = [v.diagnostic() for v in found]
    named = {v.lapsed for v in found if v.lapsed is not None}
    for policy in policies.policies:
        if cluster_selected(policy.selector, policy, view.name, view.labels):
            out += _expired(policy, view.name, today, named)
    return out


def is_policy(diagnostic: Diagnostic) -> bool:
    return bool(diagnostic.key and diagnostic.key.startswith(KEY_PREFIX))


def split(diags: Iterable[Diagnostic]) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """(policy diagnostics, the others)."""
    mine: list[Diagnostic] = []
    rest: list[Diagnostic] = []
    for d in diags:
        (mine if is_policy(d) else rest).append(d)
    return mine, rest


def counts(found: Sequence[Violation]) -> dict[tuple[str, str, str], int]:
    """(cluster, policy, rule) -> violations: the figure the impact report computes fleet-wide in Spark."""
    out: dict[tuple[str, str, str], int] = {}
    for v in found:
        k = (v.cluster, v.policy.name, v.rule.id)
        out[k] = out.get(k, 0) + 1
    return out
