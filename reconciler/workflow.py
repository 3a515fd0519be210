"""Use cases that join the adapters to the pure core: plan a cluster, guard and apply plans.

manifests -> DesiredState ─┐
ZooKeeper -> LiveState ────┴─ secret verdicts, live rules -> diff -> risk -> Plan -> apply (exactly that plan)
"""

from __future__ import annotations

import getpass
import logging
import os
import re
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from reconciler.diff import build_plan
from reconciler.errors import (
    Diagnostic,
    ReconcilerError,
    RefusedError,
    SecretError,
    ValidationError,
    has_errors,
    printable,
)
from reconciler.manifests.validate import load_and_validate, load_settings
from reconciler.model import (
    DEFAULT_ENTITY,
    ApplySettings,
    ClusterSettings,
    ClusterSpec,
    DesiredState,
    EntityRef,
    LiveState,
    Secret,
)
from reconciler.plan import Change, Plan
from reconciler.progress import NO_PROGRESS, Progress
from reconciler.render.common import plan_totals, summary
from reconciler.risk import annotate
from reconciler.rules.live import check_live
from reconciler.secrets.compare import TrustedSecret, base_dir, cluster_encoders, compare_secrets
from reconciler.secrets.encoder import EncoderParams, decode
from reconciler.secrets.files import MAX_SECRET_BYTES, FileAccessError, approved_secret_dirs, confine, read_regular
from reconciler.secrets.refs import resolve, resolve_optional
from reconciler.secrets.rotation import rotated_passwords, rotation_warnings
from reconciler.zk.aclmode import downgrade_warning, live_acl_mode
from reconciler.zk.audit import with_applied_passwords
from reconciler.zk.layout import encode_entity_config
from reconciler.zk.lock import Notify, default_lock_wait
from reconciler.zk.read import ReadScope, read_live_state
from reconciler.zk.session import TlsFiles, ZooKeeperError, connect
from reconciler.zk.write import ApplyOptions, ApplyResult, AuditInfo, apply_plan

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
    allowed = approved_secret_dirs()

    def checked(name: str | None, what: str) -> Path | None:
        if name is None:
            return None
        try:
            path = confine(where / name, root, shown=f"{what} {name}", allowed=allowed)
            read_regular(path, MAX_SECRET_BYTES, shown=f"{what} {name}")
        except FileAccessError as exc:
            raise SecretError(f"cluster {cluster.name}: zookeeper.tls: {exc.message}") from None
        return path

    key = tls.key_file.file if tls.key_file is not None else None
    return TlsFiles(
        ca=checked(tls.ca_file, "CA file"),
        certificate=checked(tls.cert_file, "certificate file"),
        key=checked(key, "key file"),
        key_password=resolve_optional(tls.key_password, where, root),
        verify_hostname=tls.verify_hostname,
    )


@contextmanager
def cluster_client(cluster: ClusterSpec, root: Path) -> Iterator[KazooClient]:
    """A connected client for the cluster (TLS when configured), authenticated as the brokers' ZooKeeper
    identity when configured."""
    credentials = resolve_optional(cluster.zookeeper.auth_credentials, base_dir(root, cluster.source), root)
    try:
        client = connect(cluster.zookeeper, credentials, tls=tls_files(cluster, root))
    except ZooKeeperError as exc:  # one line that says which manifest chose this ZooKeeper
        where = cluster.zookeeper.source or cluster.source
        raise ZooKeeperError(f"{exc.message} (cluster {cluster.name}, spec.zookeeper.connect at "
                             f"{where.file}:{where.line})" if where else exc.message) from exc
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
    secrets = compare_secrets(desired, live, root, trusted_secret)
    diags = check_live(desired, live)
    diags.extend(Diagnostic("error", problem, desired.cluster.source) for problem in secrets.problems)
    plan, problems = build_plan(  # the id is computed once, of the final plan (below)
        desired, live, secret_states=secrets.states, revision=revision, created_at=now_utc(), with_id=False
    )
    diags.extend(problems)
    plan = annotate(plan, desired, live, with_id=False)
    warnings = tuple(sorted(set(plan.warnings) | set(secrets.warnings) | set(oversized_znodes(plan, desired, live))
                            | set(rotation_warnings(plan, desired))))
    plan = replace(plan, warnings=warnings, kafka_version=desired.cluster.kafka_version,
                   verified_passwords=tuple(sorted(secrets.verified))).with_id()
    return ClusterPlan(plan, desired, tuple(diags))


def acl_diagnostics(client: KazooClient, desired: DesiredState) -> list[Diagnostic]:
    """A warning when apply would refuse to create open znodes in a cluster secured with Kafka's ACLs."""
    warning = downgrade_warning(live_acl_mode(client), desired.cluster.zookeeper.set_acl)
    return [] if warning is None else [Diagnostic("warning", warning, desired.cluster.source, "setAcl")]


def with_diagnostics(result: ClusterPlan, extra: Sequence[Diagnostic]) -> ClusterPlan:
    return replace(result, diagnostics=(*result.diagnostics, *extra)) if extra else result


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


def read_cluster(desired: DesiredState, root: Path, progress: Progress = NO_PROGRESS,
                 scope: ReadScope | None = None, checks: list[Diagnostic] | None = None) -> LiveState:
    """The live state `plan` needs (or `scope`), as one progress phase. `checks` collects what the same
    session finds about the cluster besides (the ACL mode, see `acl_diagnostics`)."""
    zk = desired.cluster.zookeeper
    with progress.phase(printable(f"{desired.cluster.name}: read ZooKeeper {zk.connect}")) as phase:
        with cluster_client(desired.cluster, root) as client:
            live = read_live_state(client, desired.cluster.name, scope or read_scope(desired), progress=phase.update)
            live = with_applied_passwords(client, desired, live)
            if checks is not None:
                checks.extend(acl_diagnostics(client, desired))
        phase.done(f"{len(live.entities)} config znodes, {len(live.topics)} topics, {len(live.brokers)} brokers")
    return live


def plan_cluster(
    desired: DesiredState, root: Path, revision: str | None = None, progress: Progress = NO_PROGRESS
) -> ClusterPlan:
    checks: list[Diagnostic] = []
    live = read_cluster(desired, root, progress, checks=checks)
    with progress.phase(f"{desired.cluster.name}: plan") as phase:
        result = with_diagnostics(plan_against(desired, live, root, revision), checks)
        phase.done(summary(plan_totals(result.plan)) if not result.plan.is_empty else "no changes")
    return result


def load_desired(root: Path, clusters: Sequence[str]) -> tuple[dict[str, DesiredState], list[Diagnostic]]:
    """Validated desired states; raises ValidationError (every problem) when any is invalid."""
    _, states, diags = load_and_validate(root, clusters)
    if has_errors(diags):
        raise ValidationError(diags)
    return states, diags


def load_apply_settings(root: Path, clusters: Sequence[str]) -> dict[str, ApplySettings]:
    """What `apply PLAN` needs of each cluster (`manifests.validate.load_settings`); raises ValidationError."""
    settings, diags = load_settings(root, clusters)
    if has_errors(diags):
        raise ValidationError(diags)
    return settings


# --- apply ----------------------------------------------------------------------------------------------


def guard(plan: Plan, desired: ClusterSettings, allow_destructive: bool, allow_secret_rotation: bool = False) -> None:
    """Refuse destructive changes and more than policy.maxDeletes removals unless allowed, and a rotation of the
    password encoder secret without --allow-secret-rotation."""
    rotated = rotated_passwords(plan)
    if rotated and not allow_secret_rotation:
        raise RefusedError(
            f"cluster {plan.cluster}: the plan re-encodes {len(rotated)} password(s) stored with "
            "passwordEncoder.oldSecret with the new secret. Brokers running without the new secret as "
            "password.encoder.secret (and the old one as password.encoder.old.secret) would drop them: restart "
            "them so first, then re-run with --allow-secret-rotation:\n  "
            + "\n  ".join(printable(r) for r in rotated[:20])
        )
    policy = desired.cluster.policy
    allowed = allow_destructive or policy.allow_destructive
    if plan.max_risk == "destructive" and not allowed:
        reasons = [
            printable(f"{e.ref.display} {c.key}: {'; '.join(c.reasons) or 'destructive'}")
            for e in plan.entities
            for c in e.changes
            if c.risk == "destructive"
        ]
        raise RefusedError(
            f"cluster {plan.cluster}: the plan has destructive changes; re-run with --allow-destructive "
            "to apply them:\n  " + "\n  ".join(reasons[:20])
        )
    removals = plan.counts.remove
    if removals > policy.max_deletes and not allowed:
        raise RefusedError(
            f"cluster {plan.cluster}: the plan removes {removals} keys, more than policy.maxDeletes="
            f"{policy.max_deletes}; re-run with --allow-destructive if that is intended"
        )


def encoder_for_cluster(desired: ClusterSettings, root: Path) -> Callable[[EntityRef], EncoderParams | None]:
    encoders = cluster_encoders(desired.cluster, root)

    def encoder_for(ref: EntityRef) -> EncoderParams | None:
        if encoders.current is None:
            raise SecretError(f"cannot encode passwords for {ref.display}: {encoders.problem}")
        static = desired.static.get(ref.name) if ref.name != DEFAULT_ENTITY else None
        if static is None:
            return encoders.current
        # a broker's own server.properties may set its encoding parameters (never its secret here)
        params = encoders.current
        cipher = static.get("password.encoder.cipher.algorithm")
        length = static.get("password.encoder.key.length")
        iterations = static.get("password.encoder.iterations")
        return replace(
            params,
            cipher_algorithm=str(cipher.value) if cipher else params.cipher_algorithm,
            key_length=int(str(length.value)) if length else params.key_length,
            iterations=int(str(iterations.value)) if iterations else params.iterations,
        )

    return encoder_for


def _secret_resolver(desired: ClusterSettings, root: Path) -> Callable[[Change, EntityRef], Secret]:
    encoders = cluster_encoders(desired.cluster, root)

    def resolve_change(change: Change, ref: EntityRef) -> Secret:
        if change.secret is None:
            raise SecretError(f"{change.key} on {ref.display}: the plan carries no secret reference")
        if change.secret.encoded is not None:
            if encoders.current is None:
                raise SecretError(f"{change.key} on {ref.display}: {encoders.problem}")
            return decode(change.secret.encoded, encoders.current)
        return resolve(change.secret, base_dir(root, change.source), root)

    return resolve_change


def apply_cluster_plan(
    plan: Plan,
    desired: ClusterSettings,
    root: Path,
    *,
    allow_destructive: bool = False,
    allow_secret_rotation: bool = False,
    audit_log: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    user: str | None = None,
    lock_timeout_s: float | None = None,
    notify: Notify | None = None,
    client: KazooClient | None = None,
) -> ApplyResult:
    """`user`: who the audit entry names (default: RECONCILER_USER, else login@host). `lock_timeout_s`: how
    long to wait for another apply's lock (--lock-timeout; default RECONCILER_LOCK_TIMEOUT, else a little more
    than the cluster's session timeout, so that a crashed apply's lock expires within the wait). `client`: a
    session of this very cluster (`cluster_client`) that planned it, reused rather than a second one opened."""
    guard(plan, desired, allow_destructive, allow_secret_rotation)
    zk = desired.cluster.zookeeper
    tuning = {"lock_timeout_s": default_lock_wait(zk.session_timeout_s), **apply_tuning()}
    if lock_timeout_s is not None:
        tuning["lock_timeout_s"] = lock_timeout_s
    options = ApplyOptions(secure_acls=zk.set_acl, reconciler_path=zk.reconciler_path, **tuning)
    audit = AuditInfo(
        plan_id=plan.plan_id,
        cluster=plan.cluster,
        revision=plan.revision,
        user=user or default_user(),
        time=now_utc(),
    )
    with ExitStack() as stack:
        if client is None:
            client = stack.enter_context(cluster_client(desired.cluster, root))
        return apply_plan(
            client,
            plan,
            encoder_for=encoder_for_cluster(desired, root),
            resolve_secret=_secret_resolver(desired, root),
            audit=audit,
            options=options,
            audit_log=audit_log,
            progress=progress,
            notify=notify,
        )


def apply_tuning() -> dict[str, Any]:
    """Operator overrides from the environment (docs/operations.md): RECONCILER_MAX_BATCH_BYTES bounds each
    multi-transaction (default 512 KiB, at least 1024), RECONCILER_LOCK_TIMEOUT is how long apply waits for
    another apply's lock before exiting 3 (a duration: 90, 30s, 2m; default: see apply_cluster_plan)."""
    out: dict[str, Any] = {}
    raw = os.environ.get("RECONCILER_MAX_BATCH_BYTES", "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            raise ReconcilerError(f"RECONCILER_MAX_BATCH_BYTES={raw!r} is not a number") from None
        if value < 1024:
            raise ReconcilerError(f"RECONCILER_MAX_BATCH_BYTES={raw!r}: a batch must be allowed at least 1024 bytes")
        out["max_batch_bytes"] = value
    raw = os.environ.get("RECONCILER_LOCK_TIMEOUT", "").strip()
    if raw:
        try:
            out["lock_timeout_s"] = lock_wait_seconds(raw)
        except ValueError as exc:
            raise ReconcilerError(f"RECONCILER_LOCK_TIMEOUT={raw!r}: {exc}") from None
    return out


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> float:
    """`90`, `30s`, `1.5m`, `1h30m` -> seconds (a bare number is seconds). ValueError says what is expected."""
    text = text.strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("not a duration (e.g. 30s, 5m, 1h30m)")
    return sum(float(n) * _UNITS[u or "s"] for n, u in parts)


def lock_wait_seconds(text: str) -> float:
    """A lock wait (Terraform's -lock-timeout): a duration from 0 (do not wait) to less than a day."""
    seconds = duration_seconds(text)
    if seconds >= 86400:
        raise ValueError("expected a lock wait below one day (0 does not wait)")
    return seconds


def default_user() -> str:
    return os.environ.get("RECONCILER_USER") or f"{getpass.getuser()}@{socket.gethostname()}"


def default_audit_log() -> Path:
    state = os.environ.get("RECONCILER_AUDIT_LOG")
    if state:
        return Path(state)
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "kafka-reconciler" / "audit.jsonl"
