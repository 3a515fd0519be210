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
cluster, without connecting anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path, PurePosixPath

from reconciler.catalog import load_catalog
from reconciler.errors import Diagnostic
from reconciler.gitops.tree import manifests_at
from reconciler.manifests.policy import load_policies, today
from reconciler.manifests.validate import load_and_validate, operator_limits
from reconciler.model import (
    BrokerRegistration,
    ClusterSpec,
    DesiredState,
    EntityRef,
    LiveState,
    SecretRef,
    SourceRef,
    ZooKeeperSpec,
    frozen_map,
)
from reconciler.policy.compare import changed_policies, newly_flagged, no_longer_flagged, summary_lines
from reconciler.policy.views import desired_view
from reconciler.progress import NO_PROGRESS
from reconciler.workflow import ClusterPlan, plan_against, read_cluster, with_diagnostics

CONNECTION_NOTICE = "connection settings change: takes effect after merge; not used by this check"
NEW_CLUSTER_NOTICE = ("new cluster in this pull request: validated and planned against an empty cluster, "
                      "without connecting to it (its connection settings are used only after merge)")
_ZK_FIELDS = {"connect": "connect", "auth_scheme": "auth", "auth_credentials": "auth", "tls": "tls",
              "session_timeout_s": "sessionTimeoutSeconds", "set_acl": "setAcl",
              "reconciler_path": "reconcilerPath"}


@dataclass(frozen=True)
class Trusted:
    """The base revision's manifests (a temporary tree) and the clusters valid enough to name a ZooKeeper."""

    root: Path
    states: dict[str, DesiredState]


@contextmanager
def trusted_base(repo_root: Path, base: str, clusters: Sequence[str]) -> Iterator[Trusted]:
    """`clusters/` of revision `base` (the PR's target branch), for the duration of the planning."""
    with manifests_at(repo_root, base, clusters) as (root, _):
        _, states, _ = load_and_validate(root, clusters)
        yield Trusted(root, states)


def changed_settings(head: ClusterSpec, base: ClusterSpec) -> list[str]:
    """The trusted settings the PR changes, named as in the manifest (never their values)."""
    names: list[str] = []
    for f in fields(ZooKeeperSpec):
        if f.name != "source" and getattr(head.zookeeper, f.name) != getattr(base.zookeeper, f.name):
            names.append(f"spec.zookeeper.{_ZK_FIELDS.get(f.name, f.name)}")
    encoders = [e if e is None else replace(e, source=None) for e in (head.password_encoder, base.password_encoder)]
    if encoders[0] != encoders[1]:  # where it is written does not count
        names.append("spec.passwordEncoder")
    krafts = [k if k is None else replace(k, admin=replace(k.admin, source=None), source=None)
              for k in (head.kraft, base.kraft)]
    if krafts[0] != krafts[1]:  # a KRaft cluster's bootstrap servers and client security (docs/kraft.md)
        names.append("spec.kraft")
    admins = [a if a is None else replace(a, source=None) for a in (head.admin, base.admin)]
    if admins[0] != admins[1]:  # the brokers `apply --verify` asks: used only after merge (a PR check never dials)
        names.append("spec.adminClient")
    return list(dict.fromkeys(names))


def _secret_refs(state: DesiredState) -> dict[tuple[EntityRef, str], tuple[SecretRef, str]]:
    """(entity, key) -> (reference, directory of the manifest naming it) for every secret reference and sealed
    value (a sealed value's directory does not matter: it names no file)."""
    out: dict[tuple[EntityRef, str], tuple[SecretRef, str]] = {}
    for ref, entity in state.entities.items():
        for key, value in entity.config.items():
            if isinstance(value.value, SecretRef):
                out[(ref, key)] = (value.value, _source_dir(value.value, value.source))
    return out


def _source_dir(secret: SecretRef, source: SourceRef | None) -> str:
    if secret.encoded is not None:
        return ""
    return str(PurePosixPath(source.file).parent) if source else ""


def plan_pull_request(
    head: DesiredState, trusted: Trusted, revision: str | None
) -> tuple[ClusterPlan, list[str]]:
    """The plan of the PR's manifests, read and resolved with the base's settings; and the notices."""
    base = trusted.states.get(head.cluster.name)
    if base is None:
        empty = LiveState(
            head.cluster.name,
            brokers=frozen_map({b: BrokerRegistration(b, (), frozen_map()) for b in head.cluster.brokers}),
            topics=frozen_map(), entities=frozen_map(), acls=frozen_map(),  # read as empty: every grant is shown
        )
        return _with_notices(plan_against(head, empty, trusted.root, revision, trusted_secret=_never), [
            NEW_CLUSTER_NOTICE]), [NEW_CLUSTER_NOTICE]
    changed = changed_settings(head.cluster, base.cluster)
    notices = [f"{CONNECTION_NOTICE}: {', '.join(changed)}"] if changed else []
    cluster = replace(head.cluster, zookeeper=base.cluster.zookeeper, password_encoder=base.cluster.password_encoder,
                      kraft=base.cluster.kraft, source=base.cluster.source)
    desired = replace(head, cluster=cluster)
    allowed = _secret_refs(base)

    def trusted_secret(ref: EntityRef, key: str, secret: SecretRef, source: SourceRef | None) -> bool:
        # SecretRef equality compares a sealed value's text exactly: one changed byte (an edited IV) is untrusted
        return allowed.get((ref, key)) == (secret, _source_dir(secret, source))

    acl: list[Diagnostic] = []  # the base's connection settings (`cluster`), read by the cluster's backend
    live = read_cluster(desired, trusted.root, NO_PROGRESS, checks=acl)
    result = plan_against(desired, live, trusted.root, revision, trusted_secret=trusted_secret)
    return _with_notices(with_diagnostics(result, acl), notices), notices


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
