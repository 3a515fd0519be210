"""`kind: Policy` documents -> `policy.model.PolicySet`: where they may be written, and every problem at its line.

Policies live in `clusters/policies.yaml` (the fleet's) and `clusters/<cluster>/policies.yaml` (that cluster's
only); a Policy anywhere else is an error, so that which files can judge a change is fixed and known (PR mode
reads exactly these two files of the base revision: gitops/prmode.py). Each document is checked against
`schemas/policy.json`; what a schema cannot say is checked here: one check per rule, a key for value checks,
bounds that parse (`7d`, `1 GiB`: `policy.model.parse_bound`), regular expressions that compile, dates that
exist, rule ids and policy names that are unique, exceptions naming a rule of their policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from reconciler.catalog import load_catalog
from reconciler.errors import Diagnostic, has_errors
from reconciler.manifests.load import Document, load_file
from reconciler.manifests.repo import POLICY_FILE
from reconciler.manifests.schema import validate_document
from reconciler.model import ClusterSpec, DesiredState, LiveState, SourceRef, frozen_map
from reconciler.plan import Plan
from reconciler.policy import evaluate
from reconciler.policy.model import (
    KINDS,
    TOPIC_SETTINGS,
    Check,
    PolicyDoc,
    PolicyException,
    PolicySet,
    Rule,
    Selector,
    canonical_value,
    parse_bound,
)
from reconciler.policy.patterns import pattern_problem
from reconciler.policy.views import desired_view, live_view, planned_view

_CHECKS: tuple[tuple[str, Check], ...] = (
    ("min", "bounds"), ("max", "bounds"), ("allowed", "allowed"), ("forbidden", "forbidden"),
    ("required", "required"), ("namePattern", "namePattern"), ("maxCount", "maxCount"),
    ("maxDecrease", "maxDecrease"), ("maxUnreadLoss", "maxUnreadLoss"),
)
_NEEDS_KEY = frozenset({"bounds", "allowed", "forbidden", "maxDecrease"})


def policy_files(root: Path, clusters: Sequence[str] = ()) -> list[Path]:
    """The files that may hold policies: the fleet's, and those of `clusters` (all when empty)."""
    base = root / "clusters"
    files = [base / POLICY_FILE]
    names = list(clusters) or (sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else [])
    files += [base / name / POLICY_FILE for name in names]
    return [f for f in files if f.is_file() or f.is_symlink()]


def load_policies(root: Path, clusters: Sequence[str] = ()) -> tuple[PolicySet, list[Diagnostic]]:
    """Every Policy of the repository at `root` that concerns `clusters` (all when empty)."""
    root = root.resolve()
    docs: list[Document] = []
    diags: list[Diagnostic] = []
    for path in policy_files(root, clusters):
        if path.is_symlink():  # which files judge a change is fixed: never another file's content
            diags.append(Diagnostic("error", f"{POLICY_FILE} must be a regular file, not a symbolic link",
                                    SourceRef(str(path.relative_to(root)), 1, 1)))
            continue
        found, problems = load_file(path, str(path.relative_to(root)))
        diags += problems
        for doc in found:
            schema = validate_document(doc)
            diags += schema
            if schema:
                continue
            if doc.data.get("kind") == "Policy":
                docs.append(doc)
            elif path.parent.name == "clusters":  # the cluster directories' other kinds are checked as usual
                diags.append(Diagnostic("error", f"clusters/{POLICY_FILE} may only hold Policy documents",
                                        doc.mark(("kind",)), "kind"))
    policies, problems = build_policies(docs)
    return policies, diags + problems


def misplaced(documents: Sequence[Document]) -> list[Diagnostic]:
    """A Policy outside the two policy files (found among a cluster's manifests)."""
    return [Diagnostic("error", f"a Policy document belongs in clusters/{POLICY_FILE} (the fleet) or "
                       f"clusters/<cluster>/{POLICY_FILE}; elsewhere it would judge nothing",
                       d.mark(("kind",)), "kind")
            for d in documents if d.data.get("kind") == "Policy" and Path(d.file).name != POLICY_FILE]


def build_policies(docs: Sequence[Document]) -> tuple[PolicySet, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    out: list[PolicyDoc] = []
    seen: dict[str, SourceRef] = {}
    for doc in docs:
        name = str(doc.data["meta"]["name"])
        where = doc.mark(("meta", "name"))
        if name in seen:
            diags.append(Diagnostic("error", f"second Policy named {name!r} (first at {seen[name]})", where, "name"))
            continue
        seen[name] = where
        policy = _policy(doc, name, diags)
        if policy is not None:
            out.append(policy)
    return PolicySet(tuple(out)), diags


def _cluster_of(doc: Document) -> str | None:
    parts = Path(doc.file).parts
    return parts[-2] if len(parts) >= 3 and parts[-3] == "clusters" else None


def _policy(doc: Document, name: str, diags: list[Diagnostic]) -> PolicyDoc | None:
    spec: Mapping[str, Any] = doc.data["spec"]
    before = len(diags)
    selector = _selector(doc, spec.get("selector") or {}, diags)
    rules: list[Rule] = []
    ids: dict[str, SourceRef] = {}
    for i, raw in enumerate(spec["rules"]):
        rule = _rule(doc, ("spec", "rules", i), raw, diags)
        if rule is None:
            continue
        if rule.id in ids:
            diags.append(Diagnostic("error", f"second rule {rule.id!r} in policy {name} (first at {ids[rule.id]})",
                                    rule.source, "id"))
            continue
        ids[rule.id] = rule.source
        rules.append(rule)
    exceptions = [e for i, raw in enumerate(spec.get("exceptions") or ())
                  if (e := _exception(doc, ("spec", "exceptions", i), raw, set(ids), diags)) is not None]
    if len(diags) > before:
        return None
    return PolicyDoc(name, selector, tuple(rules), tuple(exceptions), doc.mark(()), _cluster_of(doc))


def _regexes(doc: Document, found: Sequence[tuple[tuple[str | int, ...], str]], diags: list[Diagnostic]) -> bool:
    """Each (path, pattern) one RE2 accepts (policy.patterns); a diagnostic at the pattern's line otherwise."""
    ok = True
    for path, pattern in found:
        problem = pattern_problem(pattern)
        if problem is not None:
            key = next((str(p) for p in reversed(path) if isinstance(p, str)), "names")
            diags.append(Diagnostic("error", f"regular expression {_shown(pattern)}: {problem}", doc.mark(path), key))
            ok = False
    return ok


def _shown(pattern: str) -> str:
    """A pattern as written (no doubled backslashes), cut when long."""
    return pattern if len(pattern) <= 80 else f"{pattern[:70]}… ({len(pattern):,} characters)"


def _selector(doc: Document, raw: Mapping[str, Any], diags: list[Diagnostic]) -> Selector:
    names = tuple(str(n) for n in raw.get("names") or ())
    _regexes(doc, [(("spec", "selector", "names", i), n) for i, n in enumerate(names)], diags)
    kinds = tuple(dict.fromkeys(str(k) for k in raw.get("kinds") or ("topics",)))
    return Selector(
        labels=frozen_map({str(k): str(v) for k, v in (raw.get("labels") or {}).items()}),
        clusters=tuple(str(c) for c in raw.get("clusters") or ()), kinds=tuple(k for k in kinds if k in KINDS),
        names=names, source=doc.mark(("spec", "selector")),
    )


def _rule(doc: Document, path: tuple[str | int, ...], raw: Mapping[str, Any], diags: list[Diagnostic]) -> Rule | None:
    source = doc.mark((*path, "id"))
    given = [(field, check) for field, check in _CHECKS if field in raw]
    checks = {check for _, check in given}
    if len(checks) != 1:
        listed = ", ".join(f for f, _ in _CHECKS)
        said = "no check" if not checks else f"several checks ({', '.join(f for f, _ in given)})"
        diags.append(Diagnostic("error", f"rule {raw['id']!r} has {said}: give exactly one of {listed} "
                                "(min and max together are one)", source, "id"))
        return None
    check = checks.pop()
    key = str(raw["key"]) if "key" in raw else None
    if check in _NEEDS_KEY and key is None:
        diags.append(Diagnostic("error", f"rule {raw['id']!r}: {given[0][0]} needs the config key it reads (key:)",
                                source, "key"))
        return None
    if check == "maxDecrease" and key in TOPIC_SETTINGS:
        diags.append(Diagnostic("error", f"rule {raw['id']!r}: maxDecrease reads a config value, not {key}",
                                doc.mark((*path, "key")), "key"))
        return None
    minimum = maximum = None
    texts = []
    for field in ("min", "max"):
        if field in raw:
            try:
                number = parse_bound(raw[field])
            except ValueError as exc:
                diags.append(Diagnostic("error", f"rule {raw['id']!r}: {field}: {exc}", doc.mark((*path, field)),
                                        field))
                return None
            minimum, maximum = (number, maximum) if field == "min" else (minimum, number)
            texts.append(f"{'at least' if field == 'min' else 'at most'} {canonical_value(raw[field])}")
    if minimum is not None and maximum is not None and minimum > maximum:
        diags.append(Diagnostic("error", f"rule {raw['id']!r}: min is above max", doc.mark((*path, "min")), "min"))
        return None
    pattern = str(raw["namePattern"]) if "namePattern" in raw else None
    if pattern is not None and not _regexes(doc, [((*path, "namePattern"), pattern)], diags):
        return None
    values: tuple[str, ...] = ()
    for field in ("allowed", "forbidden", "required"):
        if field in raw:
            values = tuple(canonical_value(v) for v in raw[field])
    limit = raw.get("maxCount", raw.get("maxDecrease", raw.get("maxUnreadLoss")))
    return Rule(
        id=str(raw["id"]), check=check, severity="warning" if raw.get("severity") == "warn" else "error",
        message=str(raw["message"]), source=source, docs=str(raw["docs"]) if "docs" in raw else None, key=key,
        minimum=minimum, maximum=maximum, bounds_text=" and ".join(texts), values=values, pattern=pattern,
        limit=float(limit) if limit is not None else None,
    )


def _exception(doc: Document, path: tuple[str | int, ...], raw: Mapping[str, Any], rule_ids: set[str],
               diags: list[Diagnostic]) -> PolicyException | None:
    source = doc.mark((*path, "entity"))
    try:
        expires = date.fromisoformat(str(raw["expires"]))
    except ValueError:
        diags.append(Diagnostic("error", f"expires {raw['expires']!r} is not a date (YYYY-MM-DD)",
                                doc.mark((*path, "expires")), "expires"))
        return None
    entity = str(raw["entity"])
    kind = entity.split("/", 1)[0]
    if kind not in KINDS or ("/" not in entity and kind != entity):
        diags.append(Diagnostic("error", f"exception entity {entity!r} must be KIND/NAME (kinds: {', '.join(KINDS)}) "
                                "or a kind alone for a maxCount rule", source, "entity"))
        return None
    rules = tuple(str(r) for r in raw.get("rules") or ())
    unknown = [r for r in rules if r not in rule_ids]
    if unknown:
        diags.append(Diagnostic("error", f"exception for {entity} names unknown rule(s) {', '.join(unknown)} "
                                f"(rules of this policy: {', '.join(sorted(rule_ids))})",
                                doc.mark((*path, "rules")), "rules"))
        return None
    return PolicyException(entity, str(raw["reason"]), expires, source, rules,
                           tuple(str(c) for c in raw.get("clusters") or ()))


# --- where they run: the policies of `root` over a view of each cluster --------------------------------------


def today() -> date:
    """The date exceptions are judged on (UTC, as CI runners keep it)."""
    return datetime.now(UTC).date()


def desired_diagnostics(root: Path, states: Mapping[str, DesiredState],
                        documents: Sequence[Document] = ()) -> list[Diagnostic]:
    """`validate`: the policies of `root` over the manifests of `states`; Policy documents among `documents`
    (a cluster's manifests) outside the policy files."""
    diags = misplaced(documents)
    policies, problems = load_policies(root, sorted(states))
    diags += problems
    if not policies or has_errors(problems):
        return diags
    catalog, day = load_catalog(), today()
    for state in states.values():
        diags += evaluate.diagnostics(policies, desired_view(state, catalog), day)
    return diags


def planned_diagnostics(root: Path, desired: DesiredState, live: LiveState, plan: Plan,
                        judged_as: ClusterSpec | None = None) -> list[Diagnostic]:
    """`plan` (and in PR mode, with `root` the base revision's tree: the base's policies): the policies of
    `root` over the declared entities once `plan` is applied. `judged_as`: the name and labels that select the
    policies (PR mode: the base's, so a relabel or a rename cannot move a cluster out of a policy)."""
    subject = judged_as or desired.cluster
    policies, problems = load_policies(root, [subject.name])
    if not policies or has_errors(problems):
        return problems
    view = planned_view(desired, live, plan, load_catalog())
    if judged_as is not None:
        view = replace(view, name=judged_as.name, labels=judged_as.labels)
    return problems + evaluate.diagnostics(policies, view, today())


def live_violations(root: Path, desired: DesiredState, live: LiveState) -> list[evaluate.Violation]:
    """`reconcile`'s drift: the policies of `root` over ZooKeeper as it is (every live entity)."""
    policies, problems = load_policies(root, [desired.cluster.name])
    if not policies or has_errors(problems):
        return []
    return evaluate.violations(policies, live_view(live, load_catalog(), desired), today())
