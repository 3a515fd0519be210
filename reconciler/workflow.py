"""The plan use case, joining the adapters to the pure core (its sibling `reconciler.apply` executes plans):

manifests -> DesiredState ─┐
ZooKeeper -> LiveState ────┴─ secret verdicts, live rules -> diff -> risk -> Plan -> apply (exactly that plan)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from reconciler.diff import build_plan
from reconciler.errors import (
    Diagnostic,
    ReconcilerError,
    ValidationError,
    has_errors,
    printable,
)
from reconciler.kraft.backend import KRAFT
from reconciler.kraft.passwords import compare_kraft_secrets
from reconciler.manifests.policy import planned_diagnostics
from reconciler.manifests.validate import load_and_validate
from reconciler.model import (
    ClusterSpec,
    DesiredState,
    LiveState,
)
from reconciler.plan import Plan
from reconciler.plan import with_diagnostics as plan_with_diagnostics
from reconciler.progress import NO_PROGRESS, Progress
from reconciler.render.common import plan_totals, summary
from reconciler.risk import annotate
from reconciler.rules.live import check_live
from reconciler.secrets.compare import TrustedSecret, base_dir, compare_secrets
from reconciler.secrets.files import checked_pem
from reconciler.secrets.refs import resolve_optional
from reconciler.secrets.rotation import rotation_warnings
from reconciler.zk.aclmode import downgrade_warning, live_acl_mode
from reconciler.zk.audit import with_applied_passwords
from reconciler.zk.layout import encode_entity_config
from reconciler.zk.read import ReadScope, read_live_state
from reconciler.zk.session import ConnectError, TlsFiles, ZooKeeperError, connect

log = logging.getLogger(__name__)


def now_utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tls_files(cluster: ClusterSpec, root: Path) -> TlsFiles | None:
    """The cluster's TLS files, each checked like every manifest-named file (inside the repository or
    RECONCILER_SECRET_DIRS, regular, bounded); kazoo then loads them by path."""
    tls = cluster.zookeeper.tls
    if tls is None:
        return None
    where = base_dir(root, cluster.source)
    section = f"cluster {cluster.name}: zookeeper.tls"
    return TlsFiles(
        ca=checked_pem(tls.ca_file, where, root, what="CA file", section=section),
        certificate=checked_pem(tls.cert_file, where, root, what="certificate file", section=section),
        key=checked_pem(tls.key_file.file if tls.key_file else None, where, root, what="key file", section=section),
        key_password=resolve_optional(tls.key_password, where, root),
        verify_hostname=tls.verify_hostname,
    )


@contextmanager
def cluster_client(
    cluster: ClusterSpec, root: Path, notify: Callable[[str], None] | None = None
) -> Iterator[KazooClient]:
    """A connected client for the cluster (TLS when configured), authenticated as the brokers' ZooKeeper
    identity when configured. `notify(line)`: told at once when the session does not come up within half a
    second (`c1: connecting to ZooKeeper HOST:PORT/chroot (up to 10 s)…`)."""
    if cluster.is_kraft:  # no ZooKeeper to open: the callers that need one say so (docs/kraft.md)
        raise ReconcilerError(f"cluster {cluster.name} is a KRaft cluster (spec.kraft): this needs ZooKeeper "
                              "(the apply lock, ZooKeeper audit entries or znodes), which a KRaft cluster has not")
    credentials = resolve_optional(cluster.zookeeper.auth_credentials, base_dir(root, cluster.source), root)

    def connecting(timeout_s: float) -> None:
        if notify is not None:
            notify(printable(f"{cluster.name}: connecting to ZooKeeper {cluster.zookeeper.connect} "
                             f"(up to {timeout_s:g} s)…"))

    try:
        client = connect(cluster.zookeeper, credentials, tls=tls_files(cluster, root), connecting=connecting)
    except ZooKeeperError as exc:  # the first line says which manifest chose this ZooKeeper
        where = cluster.zookeeper.source or cluster.source
        message = (f"{exc.message} (cluster {cluster.name}, spec.zookeeper.connect at {where.file}:{where.line})"
                   if where else exc.message)
        if isinstance(exc, ConnectError) and exc.checks:
            message += "\n  check: " + "\n  check: ".join(exc.checks)
        raise ZooKeeperError(message) from exc
    try:
        yield client
    finally:
        client.stop()
        client.close()


def read_scope(desired: DesiredState) -> ReadScope:
    """Read whole entity types the manifests manage (ownership needs them), every type when pruning
    (undeclared entities must be seen to be removed); always brokers and topics."""
    if desired.cluster.policy.prune:
        return ReadScope()
    types = {ref.entity_type for ref in desired.entities} | {"topics"}
    if desired.cluster.policy.prune_scram_users:  # every user's credentials must be seen to be removed
        types.add("users")
    return ReadScope(entity_types=frozenset(types))


@dataclass(frozen=True)
class ClusterPlan:
    plan: Plan
    desired: DesiredState
    diagnostics: tuple[Diagnostic, ...]


def plan_against(
    desired: DesiredState, live: LiveState, root: Path, revision: str | None,
    trusted_secret: TrustedSecret | None = None,
) -> ClusterPlan:
    """Pure planning once live state is read (used by `plan`, `reconcile` and tests). `trusted_secret`: which
    secret references may be resolved (a pull request's plan: only those of its base revision)."""
    # KRaft never returns passwords: its verdicts come from recorded fingerprints (kraft/passwords.py)
    secrets = (compare_kraft_secrets if desired.cluster.is_kraft else compare_secrets)(desired, live, root,
                                                                                        trusted_secret)
    diags = check_live(desired, live)
    diags.extend(Diagnostic("error", problem, desired.cluster.source) for problem in secrets.problems)
    plan, problems = build_plan(  # the id is computed once, of the final plan (below)
        desired, live, secret_states=secrets.states, revision=revision, created_at=now_utc(), with_id=False
    )
    diags.extend(problems)
    diags.extend(planned_diagnostics(root, desired, live, plan))  # the policies of `root`: in PR mode the base's
    plan = annotate(plan, desired, live, with_id=False)
    znodes = [] if desired.cluster.is_kraft else oversized_znodes(plan, desired, live)
    warnings = tuple(sorted(set(plan.warnings) | set(secrets.warnings) | set(znodes)
                            | set(rotation_warnings(plan, desired))))
    plan = replace(plan, warnings=warnings, kafka_version=desired.cluster.kafka_version,
                   verified_passwords=tuple(sorted(secrets.verified)))
    plan = plan_with_diagnostics(plan, diags).with_id()  # its warnings travel with it (the PR comment, `show`)
    return ClusterPlan(plan, desired, tuple(diags))


def acl_diagnostics(client: KazooClient, desired: DesiredState) -> list[Diagnostic]:
    """A warning when apply would refuse to create open znodes in a cluster secured with Kafka's ACLs."""
    warning = downgrade_warning(live_acl_mode(client), desired.cluster.zookeeper.set_acl)
    return [] if warning is None else [Diagnostic("warning", warning, desired.cluster.source, "setAcl")]


def with_diagnostics(result: ClusterPlan, extra: Sequence[Diagnostic]) -> ClusterPlan:
    if not extra:
        return result
    return replace(result, plan=plan_with_diagnostics(result.plan, extra), diagnostics=(*result.diagnostics, *extra))


# ZooKeeper refuses a request larger than jute.maxbuffer (1 MiB by default, on servers and clients); a
# config write carries the path and headers besides the data. Kafka's encoded passwords are ~700 bytes.
ZNODE_DATA_LIMIT = 1024 * 1024 - 1024
_ENCODED_PASSWORD_BYTES = 1024


def oversized_znodes(plan: Plan, desired: DesiredState, live: LiveState) -> list[str]:
    """Warnings for config znodes the plan would write larger than ZooKeeper accepts by default."""
    def size(config: Mapping[str, Any]) -> int:
        # JSON takes at most 6 bytes a character (`\u001f`): most znodes are far below the limit unencoded
        bound = 32 + 6 * sum(len(k) + (len(v) if isinstance(v, str) else _ENCODED_PASSWORD_BYTES) + 1
                             for k, v in config.items())
        if bound <= ZNODE_DATA_LIMIT:
            return bound
        plain = {k: v if isinstance(v, str) else "x" * _ENCODED_PASSWORD_BYTES for k, v in config.items()}
        return len(encode_entity_config(plain))

    found: list[tuple[str, int]] = []
    for e in plan.entities:
        wanted = desired.entities.get(e.ref)
        current = live.entities.get(e.ref)
        config = {**(current.config if current else {}), **({k: v.value for k, v in wanted.config.items()}
                                                                if wanted else {})}
        found.append((e.ref.display, size(config)))
    found += [(f"topics/{t.name}", size(t.config)) for t in plan.topics_to_create]
    return [f"{name}: its config znode would be about {n:,} bytes, over ZooKeeper's default jute.maxbuffer "
            "(1 MiB with the request's overhead): the write will be refused unless every ZooKeeper server and "
            "client raises jute.maxbuffer" for name, n in found if n > ZNODE_DATA_LIMIT]


def _notifier(progress: Progress) -> Callable[[str], None] | None:
    """The progress's one-off line on stderr (`note`), when it has one (the command line's does)."""
    note = getattr(progress, "note", None)
    return note if callable(note) else None


def read_cluster(desired: DesiredState, root: Path, progress: Progress = NO_PROGRESS,
                 scope: ReadScope | None = None, checks: list[Diagnostic] | None = None) -> LiveState:
    """The live state `plan` needs (or `scope`), as one progress phase. `checks` collects what the same
    session finds about the cluster besides (the ACL mode, see `acl_diagnostics`). A KRaft cluster is read
    by its backend (reconciler/backend.py)."""
    if desired.cluster.is_kraft:
        return KRAFT.read(desired, root, progress)
    zk = desired.cluster.zookeeper
    with progress.phase(printable(f"{desired.cluster.name}: read ZooKeeper {zk.connect}")) as phase:
        with cluster_client(desired.cluster, root, notify=_notifier(progress)) as client:
            live = read_live_state(client, desired.cluster.name, scope or read_scope(desired), progress=phase.update)
            live = with_applied_passwords(client, desired, live)
            if checks is not None:
                checks.extend(acl_diagnostics(client, desired))
        phase.done(f"{len(live.entities)} config znodes, {len(live.topics)} topics, {len(live.brokers)} brokers")
    return live


def with_backend_checks(result: ClusterPlan, desired: DesiredState, root: Path) -> ClusterPlan:
    """A KRaft cluster's own validation (validateOnly) of what the plan writes; ZooKeeper has none to ask."""
    return with_diagnostics(result, KRAFT.check(result.plan, desired, root)) if desired.cluster.is_kraft else result


def plan_cluster(
    desired: DesiredState, root: Path, revision: str | None = None, progress: Progress = NO_PROGRESS
) -> ClusterPlan:
    checks: list[Diagnostic] = []
    live = read_cluster(desired, root, progress, checks=checks)
    with progress.phase(f"{desired.cluster.name}: plan") as phase:
        result = with_backend_checks(with_diagnostics(plan_against(desired, live, root, revision), checks),
                                     desired, root)
        errors = sum(d.severity == "error" for d in result.diagnostics)
        phase.done(f"{errors} error(s), no plan" if errors else
                   summary(plan_totals(result.plan)) if not result.plan.is_empty else "no changes")
    return result


def load_desired(root: Path, clusters: Sequence[str]) -> tuple[dict[str, DesiredState], list[Diagnostic]]:
    """Validated desired states; raises ValidationError (every problem) when any is invalid."""
    _, states, diags = load_and_validate(root, clusters)
    if has_errors(diags):
        raise ValidationError(diags)
    return states, diags
