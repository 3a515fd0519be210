"""Planning a pull request: what the PR may change is planned; where it connects and which secrets it uses
come from the trusted base revision (the branch the PR merges into).

A PR author controls every file under `clusters/`. Like Atlantis, which keeps server-side settings out of
what a PR can edit, `plan --git-base` takes these from the base revision and never from the PR head:

* `spec.zookeeper` (connect string, auth, TLS, session timeout, setAcl, reconcilerPath) and
  `spec.passwordEncoder`: the live read goes to the base's ZooKeeper with the base's credentials;
  `spec.adminClient` (the brokers `apply --verify` asks) is never dialled by a PR check, and a change to it is
  named like the others: it takes effect after merge;
* every secret reference (`{secret: {env|file}}`): resolved only where the base has the very same
  reference for the same entity and key, read from the base's tree; any other is compared as `unknown`;
* every sealed value (`{encoded: ...}`): decrypted with the base's encoder secret only where the base has the
  very same text for the same entity and key. Any other is never decrypted (`unknown`, or `unchanged` when it is
  the very text stored): decrypting what a PR supplies would make the comment a padding/decoding oracle.

The policies (`kind: Policy`, manifests/policy.py) that judge the PR are the base's too: the plan reads them
from the base's tree (`plan_against` is given it as its root), so a PR cannot loosen the rule that judges it.
A PR that edits a policy is told which, and what the edited versions would newly flag across the fleet's
manifests (`policy_changes`).

A PR that changes them is told so prominently ("takes effect after merge; not used by this check"). A
cluster that is new in the PR has no trusted settings: it is validated and planned against an empty
cluster, without connecting anywhere, and its first apply refuses to change anything already at its target
(`ownership.py`), so the plan shown is what merging writes. A new directory that names the target of a cluster
of the base is refused unless it says it is that cluster renamed (`meta.renamedFrom`). All of the base's side
comes from one place, the trusted view (`gitops/trusted.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from reconciler.catalog import load_catalog
from reconciler.errors import Diagnostic, ReconcilerError
from reconciler.gitops.tree import manifests_at
from reconciler.gitops.trusted import Trusted, changed_settings
from reconciler.manifests.policy import load_policies, today
from reconciler.manifests.validate import load_and_validate, operator_limits
from reconciler.model import DesiredState, EntityRef, SecretRef, SourceRef
from reconciler.policy.compare import changed_policies, newly_flagged, no_longer_flagged, summary_lines
from reconciler.policy.views import desired_view
from reconciler.progress import NO_PROGRESS
from reconciler.targets import describe
from reconciler.workflow import ClusterPlan, empty_live_state, plan_against, read_cluster, with_diagnostics

CONNECTION_NOTICE = "connection settings change: takes effect after merge; not used by this check"
NEW_CLUSTER_NOTICE = ("new cluster in this pull request: validated and planned against an empty cluster, "
                      "without connecting to it (its connection settings are used only after merge)")
FIRST_APPLY_NOTICE = ("its first apply writes only what this plan shows: it refuses to change or remove anything "
                      "already at the target (a cluster that exists is brought in with `reconciler import`)")


class TargetConflictError(ReconcilerError):
    """A cluster directory names the target (ZooKeeper ensemble + chroot, KRaft brokers) of another."""


def plan_pull_request(
    head: DesiredState, trusted: Trusted, revision: str | None
) -> tuple[ClusterPlan, list[str]]:
    """The plan of the PR's manifests, read and resolved with the base's settings; and the notices."""
    cluster = head.cluster
    others = trusted.owner_of(cluster)
    if others:
        where = (cluster.kraft.source if cluster.kraft else cluster.zookeeper.source) or cluster.source
        at = f" ({where.file}:{where.line})" if where else ""
        raise TargetConflictError(
            f"cluster {cluster.name}: {describe(cluster)}{at} is the target of cluster {others[0]} on the base "
            "branch: a target belongs to one cluster directory. A rename keeps the target with meta.renamedFrom: "
            f"{others[0]} (and removes clusters/{others[0]}/)")
    base_name = trusted.base_name(cluster)
    renamed = base_name is not None and base_name != cluster.name
    if renamed and (trusted.head_root / "clusters" / str(base_name)).exists():
        raise TargetConflictError(f"cluster {cluster.name}: meta.renamedFrom: {base_name}, but clusters/{base_name}/ "
                                  "is still there: a rename removes the old directory (two directories would "
                                  "manage one target)")
    if base_name is None:
        empty = empty_live_state(cluster)
        notices = [f"{NEW_CLUSTER_NOTICE}; target {describe(cluster)}; {FIRST_APPLY_NOTICE}"]
        return _with_notices(plan_against(head, empty, trusted.root, revision, trusted_secret=_never), notices), \
            notices
    base = trusted.states[base_name].cluster
    notices = _notices(head, base_name, trusted)
    desired = trusted.connection(head)
    acl: list[Diagnostic] = []  # the base's connection settings (`desired.cluster`), read by the cluster's backend
    live = read_cluster(desired, trusted.root, NO_PROGRESS, checks=acl)
    name, labels = trusted.judged_as(cluster)
    result = plan_against(desired, live, trusted.root, revision, trusted_secret=trusted.secret_trust(head),
                          judged_as=replace(base, name=name, labels=labels))
    return _with_notices(with_diagnostics(result, acl), notices), notices


def _notices(head: DesiredState, base_name: str, trusted: Trusted) -> list[str]:
    """What this check took from the base instead of the pull request, and the reviewed changes it shows first:
    connection settings (TLS files by content), labels, a rename."""
    base = trusted.states[base_name].cluster
    notices = []
    changed = changed_settings(head.cluster, base, trusted)
    if changed:
        notices.append(f"{CONNECTION_NOTICE}: {', '.join(changed)}")
    if dict(head.cluster.labels) != dict(base.labels):
        def shown(labels: object) -> str:
            return ", ".join(f"{k}={v}" for k, v in sorted(dict(labels).items())) or "none"  # type: ignore[call-overload]
        notices.append(f"labels change ({shown(base.labels)} → {shown(head.cluster.labels)}): policies judge this "
                       "pull request by the base's labels; the new ones select its policies after merge")
    if base_name != head.cluster.name:
        notices.append(f"renames cluster {base_name} → {head.cluster.name} (same target, {describe(base)}): planned "
                       f"with {base_name}'s settings and judged as {base_name}; policies that select it by name "
                       "stop judging it after merge unless they name the new one")
    return notices


def _never(ref: EntityRef, key: str, secret: SecretRef, source: SourceRef | None) -> bool:
    return False


def _with_notices(result: ClusterPlan, notices: Sequence[str]) -> ClusterPlan:
    if not notices:
        return result
    plan = replace(result.plan, warnings=(*notices, *result.plan.warnings)).with_id()
    return replace(result, plan=plan)


def policy_changes(repo_root: Path, base: str) -> list[str]:
    """The policies the work tree changes against `base`, and the violations their new versions would add over
    the fleet's manifests (pure evaluation, policy.compare); empty when no policy changes."""
    head, _ = load_policies(repo_root)
    with manifests_at(repo_root, base) as (root, _revision):
        old, _ = load_policies(root)
    changes = changed_policies(old, head)
    if not changes:
        return []
    # the work tree is the pull request's: loaded within the PR check's bounds (RECONCILER_PR_MAX_*), as its
    # selected clusters are
    _, states, diags = load_and_validate(repo_root, (), operator_limits(pull_request=True))
    over = [d for d in diags if d.severity == "error" and d.key and d.key.startswith("RECONCILER_PR_MAX_")]
    if over:  # past a bound nothing more is parsed: say so rather than compare a part of the fleet
        return [f"not compared across the fleet: {over[0].message}"]
    catalog = load_catalog()
    views = [desired_view(state, catalog) for state in states.values()]
    day = today()
    return summary_lines(changes, newly_flagged(old, head, views, day), no_longer_flagged(old, head, views, day))


def notice_diagnostics(cluster: str, notices: Sequence[str]) -> list[Diagnostic]:
    return [Diagnostic("warning", f"cluster {cluster}: {n}") for n in notices]
