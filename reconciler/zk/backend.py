"""The ZooKeeper backend (`reconciler.backend.Backend`): a cluster with spec.zookeeper is read with multiRead
(`zk/read.py`), written with versioned multis and change notifications under the apply lock (`zk/write.py`,
`zk/lock.py`), and keeps its audit entries and password fingerprints in znodes under `reconcilerPath`
(`zk/audit.py`); drift is dated by znode mtimes (`zk/drift.py`). One ZooKeeper session per connection,
opened with spec.zookeeper's connect string (allow-listed), TLS files and credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from reconciler.backend import (
    ApplyRequest,
    ApplyResult,
    AuditEntry,
    Backend,
    Connection,
    DriftItem,
    DriftSubject,
    Notify,
    Owner,
    ReadProgress,
    read_types,
)
from reconciler.errors import Diagnostic, ReconcilerError, printable
from reconciler.model import ClusterSpec, DesiredState, LiveState
from reconciler.plan import Plan
from reconciler.secrets.compare import (
    SecretComparison,
    TrustedSecret,
    base_dir,
    compare_secrets,
    encoder_for_cluster,
)
from reconciler.secrets.files import checked_pem
from reconciler.secrets.refs import resolve_optional
from reconciler.zk.aclmode import downgrade_warning, live_acl_mode
from reconciler.zk.audit import with_applied_passwords
from reconciler.zk.drift import date_drift, read_audit
from reconciler.zk.layout import encode_entity_config
from reconciler.zk.owner import claim_owner, read_owner
from reconciler.zk.reassign import keep_record, read_record
from reconciler.zk.session import ConnectError, TlsFiles, ZooKeeperError, connect
from reconciler.zk.target import refuse_without_brokers


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
    if cluster.kraft is not None:  # the backend is chosen from the spec (backends.backend_for): never here
        raise ReconcilerError(f"cluster {cluster.name} is a KRaft cluster (spec.kraft): this needs ZooKeeper, "
                              "which a KRaft cluster has not")
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


def at_root(cluster: ClusterSpec) -> ClusterSpec:
    """The cluster's spec with its ZooKeeper connect string at the ensemble's root (no chroot): the same hosts,
    allow-list, TLS and credentials."""
    return replace(cluster, zookeeper=replace(cluster.zookeeper, connect=cluster.zookeeper.hosts))


def acl_diagnostics(client: KazooClient, desired: DesiredState) -> list[Diagnostic]:
    """A warning when apply would refuse to create open znodes in a cluster secured with Kafka's ACLs."""
    warning = downgrade_warning(live_acl_mode(client), desired.cluster.zookeeper.set_acl)
    return [] if warning is None else [Diagnostic("warning", warning, desired.cluster.source, "setAcl")]


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


class ZooKeeperConnection:
    """One ZooKeeper session of a cluster (`Backend.connect`)."""

    def __init__(self, client: KazooClient, cluster: ClusterSpec, root: Path) -> None:
        self.client, self.cluster, self.root = client, cluster, root

    def read(self, desired: DesiredState, *, entity_types: frozenset[str] | None = None,
             progress: ReadProgress | None = None, checks: list[Diagnostic] | None = None) -> LiveState:
        from reconciler.zk.read import ReadScope, read_live_state  # plan's reader: `apply PLAN` never loads it

        scope = ReadScope(entity_types=read_types(desired) if entity_types is None else entity_types)
        live = read_live_state(self.client, desired.cluster.name, scope, progress=progress)
        live = with_applied_passwords(self.client, desired, live)
        if checks is not None:
            checks.extend(acl_diagnostics(self.client, desired))
        return live

    def check(self, plan: Plan, desired: DesiredState) -> Sequence[Diagnostic]:
        return []  # ZooKeeper validates nothing of Kafka's: the rules did (reconciler/rules/)

    def apply(self, request: ApplyRequest) -> ApplyResult:
        from reconciler.zk.lock import default_lock_wait  # the writer is loaded by an apply only
        from reconciler.zk.write import ApplyOptions, apply_plan

        zk = request.settings.cluster.zookeeper
        if not request.allow_no_brokers:  # a target no declared broker reads: refused before any write
            refuse_without_brokers(self.client, self.cluster, lambda: cluster_client(at_root(self.cluster),
                                                                                    self.root))
        options = ApplyOptions(
            secure_acls=zk.set_acl, reconciler_path=zk.reconciler_path,
            lock_timeout_s=(default_lock_wait(zk.session_timeout_s) if request.lock_timeout_s is None
                            else request.lock_timeout_s),
            **({} if request.max_batch_bytes is None else {"max_batch_bytes": request.max_batch_bytes}))
        return apply_plan(self.client, request.plan, encoder_for=encoder_for_cluster(request.settings, self.root),
                          resolve_secret=request.resolve_secret, audit=request.audit, options=options,
                          audit_log=request.audit_log, progress=request.progress, notify=request.notify,
                          stop=request.stop)

    def audit_entries(self) -> list[AuditEntry] | None:
        return read_audit(self.client, self.cluster.zookeeper.reconciler_path)

    def date_drift(self, items: Sequence[tuple[DriftSubject, DriftItem]], since: AuditEntry,
                   later: Sequence[AuditEntry], live: LiveState, detailed: bool) -> list[DriftItem]:
        return date_drift(self.client, items, since, later, live, detailed)

    def owner(self) -> Owner | None:
        return read_owner(self.client, self.cluster.zookeeper.reconciler_path)

    def claim(self, owner: Owner, replacing: str | None = None) -> Owner:
        zk = self.cluster.zookeeper
        return claim_owner(self.client, zk.reconciler_path, owner, zk.set_acl, replacing)

    def reassignment_record(self) -> Mapping[str, Any] | None:
        return read_record(self.client, self.cluster.zookeeper.reconciler_path)

    def keep_reassignment_record(self, record: Mapping[str, Any] | None) -> None:
        zk = self.cluster.zookeeper
        keep_record(self.client, zk.reconciler_path, record, zk.set_acl)


class ZooKeeperBackend:
    name = "zookeeper"

    def label(self, cluster: ClusterSpec) -> str:
        return printable(f"ZooKeeper {cluster.zookeeper.connect}")

    @contextmanager
    def connect(self, cluster: ClusterSpec, root: Path, notify: Notify | None = None) -> Iterator[Connection]:
        with cluster_client(cluster, root, notify=notify) as client:
            yield ZooKeeperConnection(client, cluster, root)

    def read_summary(self, live: LiveState) -> str:
        return f"{len(live.entities)} config znodes, {len(live.topics)} topics, {len(live.brokers)} brokers"

    def compare_secrets(self, desired: DesiredState, live: LiveState, root: Path,
                        trusted_secret: TrustedSecret | None = None) -> SecretComparison:
        return compare_secrets(desired, live, root, trusted_secret)

    def plan_warnings(self, plan: Plan, desired: DesiredState, live: LiveState) -> list[str]:
        return oversized_znodes(plan, desired, live)

    def migration_refusal(self, cluster: ClusterSpec) -> str | None:
        return None  # ZooKeeper mode is what a KIP-866 migration starts from


ZOOKEEPER = ZooKeeperBackend()
_CONFORMS: Backend = ZOOKEEPER  # mypy checks the seam's protocol here
