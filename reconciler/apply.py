"""The apply use case: a plan is guarded (destructive changes, maxDeletes, password rotation), its secret
references checked against the manifests', then handed to the cluster's backend, which executes it exactly under
the cluster's lock and keeps its audit entry (`Connection.apply`: zk/backend.py or kraft/backend.py).
`apply PLAN` reads the cluster's settings of the manifests (`load_apply_settings`) and, when the plan changes a
password, the secret references they name: a plan's reference is resolved only when it
is the one the manifests name for that entity and key (`check_named_secrets`), never because a plan file says so.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.backend import ApplyRequest, ApplyResult, AuditEntry, AuditInfo, Connection, Notify, Owner
from reconciler.backends import backend_for
from reconciler.errors import ReconcilerError, RefusedError, SecretError, ValidationError, has_errors, printable
from reconciler.manifests.validate import load_settings
from reconciler.model import ApplySettings, ClusterSettings, DesiredState, EntityRef, Secret
from reconciler.ownership import Verdict, beyond_empty, decide
from reconciler.plan import Change, Plan
from reconciler.secrets.check import NamedSecrets, named_secrets, secret_changes, unnamed_secrets
from reconciler.secrets.compare import base_dir, cluster_encoders
from reconciler.secrets.encoder import decode
from reconciler.secrets.refs import resolve
from reconciler.secrets.rotation import rotated_passwords

if TYPE_CHECKING:  # replica moves, feature levels and planning are imported where a plan needs them: `apply
    # PLAN` of topic configs loads none of them (its start-up is part of every apply)
    from reconciler.reassigning import MoveOptions


def load_apply_settings(root: Path, clusters: Sequence[str]) -> dict[str, ApplySettings]:
    """What `apply PLAN` needs of each cluster (`manifests.validate.load_settings`); raises ValidationError."""
    settings, diags = load_settings(root, clusters)
    if has_errors(diags):
        raise ValidationError(diags)
    return settings


def guard(plan: Plan, desired: ClusterSettings, allow_destructive: bool, allow_secret_rotation: bool = False,
          allow_downgrade: bool = False) -> None:
    """Refuse destructive changes and more than policy.maxDeletes removals unless allowed, a rotation of the
    password encoder secret without --allow-secret-rotation, and a feature level lowered without
    --allow-downgrade (kafka-features.sh downgrades only when asked to, too)."""
    features = [e for e in plan.entities if e.ref.entity_type == "features"]
    if features:
        from reconciler.risk.features import is_downgrade

        lowered = [f"{c.key} {c.before} -> {c.after}" for e in features for c in e.changes
                   if is_downgrade(c.before, c.after)]
    else:
        lowered = []
    if lowered and not allow_downgrade:
        raise RefusedError(f"cluster {plan.cluster}: the plan lowers feature levels ({printable(', '.join(lowered))}); "
                           "re-run with --allow-downgrade to send them as safe downgrades")
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
        if plan.reassignment is not None and plan.reassignment.risk == "destructive":
            reasons += [printable(f"reassignment: {r}") for r in plan.reassignment.reasons]
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


def load_named_secrets(root: Path, clusters: Sequence[str]) -> dict[str, NamedSecrets]:
    """The secret references each cluster's manifests name now (`apply PLAN` checks the plan's against them);
    raises ValidationError when the manifests are invalid."""
    from reconciler.workflow import load_desired

    states, _ = load_desired(root, clusters)
    return {name: named_secrets(state) for name, state in states.items()}


def named_for(plan: Plan, desired: ClusterSettings, root: Path) -> NamedSecrets:
    """What the manifests name for `plan`'s cluster: from `desired` when it is a desired state (apply CLUSTER,
    reconcile), else read now (a plan file's apply; only when the plan changes a password)."""
    if isinstance(desired, DesiredState):
        return named_secrets(desired)
    if next(secret_changes(plan), None) is None:
        return {}
    return load_named_secrets(root, [plan.cluster]).get(plan.cluster, {})


def check_named_secrets(plan: Plan, named: NamedSecrets) -> None:
    """Refuse, before anything is resolved or written, a plan whose secret references are not the manifests'."""
    problems = unnamed_secrets(plan, named)
    if problems:
        raise ReconcilerError(f"{len(problems)} problem(s) with the passwords to apply: nothing was written",
                              problems)


def _secret_resolver(
    desired: ClusterSettings, root: Path, named: NamedSecrets
) -> Callable[[Change, EntityRef], Secret]:
    """Resolves what the manifests name for a change's entity and key (from their directory), never a reference
    taken from the plan alone: the plan's must be that very one (`check_named_secrets`)."""
    encoders = cluster_encoders(desired.cluster, root)

    def resolve_change(change: Change, ref: EntityRef) -> Secret:
        wanted = named.get((ref, change.key))
        if change.secret is None or wanted is None or wanted.value != change.secret:
            raise SecretError(f"{change.key} on {ref.display}: the plan's secret reference is not the one the "
                              "manifests name for it")
        secret = change.secret
        if secret.encoded is not None:
            if encoders.current is None:
                raise SecretError(f"{change.key} on {ref.display}: {encoders.problem}")
            return decode(secret.encoded, encoders.current)
        return resolve(secret, base_dir(root, wanted.source), root)

    return resolve_change


def apply_cluster_plan(
    plan: Plan,
    desired: ClusterSettings,
    root: Path,
    *,
    allow_destructive: bool = False,
    allow_secret_rotation: bool = False,
    allow_downgrade: bool = False,
    audit_log: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    user: str | None = None,
    lock_timeout_s: float | None = None,
    notify: Notify | None = None,
    connection: Connection | None = None,
    named: NamedSecrets | None = None,
    stop: Callable[[], bool] | None = None,
    allow_no_brokers: bool | None = None,
    moves: MoveOptions | None = None,
    adopt: bool = False,
) -> ApplyResult:
    """`user`: who the audit entry names (default: RECONCILER_USER, else login@host). `lock_timeout_s`: how
    long to wait for another apply's lock (--lock-timeout; default RECONCILER_LOCK_TIMEOUT, else the backend's:
    long enough for a crashed apply's lock to expire within the wait). `connection`: the cluster's connection
    that planned it (`Backend.connect`), reused rather than a second one opened. `named`: the secret references
    the cluster's manifests name (default: `named_for`); every one the plan resolves must be among them.
    `stop()`: asked between writes; true ends the apply there, reporting and auditing what was written.
    `allow_no_brokers`: write even where no broker of the declared ids is registered (default: the operator's
    RECONCILER_ALLOW_NO_BROKERS, else refused by the backend before the first write). `moves`: the pacing of the
    plan's replica moves (bounds per step, how long to wait for them). `adopt`: an operator's `apply` takes a
    target nobody applied to for this cluster although it holds state a plan against an empty cluster did not
    show; the scheduled `reconcile` never does (`owner_verdict`)."""
    guard(plan, desired, allow_destructive, allow_secret_rotation, allow_downgrade)
    named = named_for(plan, desired, root) if named is None else named
    check_named_secrets(plan, named)
    tuning = apply_tuning()
    if lock_timeout_s is not None:
        tuning["lock_timeout_s"] = lock_timeout_s
    audit = AuditInfo(
        plan_id=plan.plan_id,
        cluster=plan.cluster,
        revision=plan.revision,
        user=user or default_user(),
        time=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),  # as workflow.now_utc
    )
    if allow_no_brokers is None:
        allow_no_brokers = allow_no_brokers_default()
    request = ApplyRequest(plan, desired, _secret_resolver(desired, root, named), audit, audit_log=audit_log,
                           progress=progress, notify=notify, stop=stop, allow_no_brokers=allow_no_brokers,
                           **tuning)
    with ExitStack() as stack:
        if connection is None:
            connection = stack.enter_context(backend_for(desired.cluster).connect(desired.cluster, root,
                                                                                  notify=notify))
        return _apply_and_move(request, connection, root, moves, adopt)


def _apply_and_move(request: ApplyRequest, connection: Connection, root: Path, moves: MoveOptions | None,
                    adopt: bool = False) -> ApplyResult:
    """The plan's writes (the backend's apply), then its replica moves (reconciler/reassigning.py: throttled,
    resumable). A plan of moves an earlier pass started only (or their throttles to remove) writes, locks and
    audits nothing here: the pass that started them has its audit entry."""
    plan = request.plan
    if plan.reassignment is not None and not plan.reassignment.pending and replace(plan, reassignment=None).is_empty:
        result = ApplyResult(0, 0, 0, 0, 0, None)
    else:
        result = _owned_apply(connection, request, root, adopt)
    if plan.reassignment is None:
        return result
    from reconciler.brokers.reassign import reassign_admin
    from reconciler.reassigning import run_reassignment

    with reassign_admin(request.settings.cluster, root) as admin:
        outcome = run_reassignment(plan, request.settings.cluster, connection, admin, user=request.audit.user,
                                   now=request.audit.time, options=moves, notify=request.notify, stop=request.stop)
    return replace(result, reassignment=outcome)


def _owned_apply(connection: Connection, request: ApplyRequest, root: Path, adopt: bool) -> ApplyResult:
    """The backend's apply, between the owner check (before any write) and the owner record (after)."""
    plan, desired = request.plan, request.settings
    verdict = None if plan.is_empty else owner_verdict(connection, plan, desired, root, adopt)
    result = connection.apply(request)
    if verdict is not None:
        record_owner(connection, verdict, plan, desired, request.audit)
    return result


def owner_verdict(connection: Connection, plan: Plan, desired: ClusterSettings, root: Path,
                  adopt: bool = False) -> Verdict:
    """Before anything is written: may this cluster directory write to this target (`ownership.decide`)? Refuses
    (nothing written) a directory that is not the target's owner, and a first apply that would write what a plan
    against an empty cluster (what its pull request showed) does not."""
    cluster = desired.cluster
    owner = connection.owner()
    legacy = legacy_owner(connection.audit_entries()) if owner is None else None
    extra = None
    if owner is None and legacy is None and not adopt:
        from reconciler.workflow import empty_cluster_changes, load_desired

        state = desired if isinstance(desired, DesiredState) else load_desired(root, [cluster.name])[0][cluster.name]
        extra = beyond_empty(plan, empty_cluster_changes(state, root, plan.revision))
    verdict = decide(cluster, owner.cluster if owner else None, legacy, extra, adopt)
    if verdict.action == "refuse":
        raise RefusedError(printable(f"cluster {cluster.name}: {verdict.reason}; nothing was written"))
    return verdict


def record_owner(connection: Connection, verdict: Verdict, plan: Plan, desired: ClusterSettings,
                 audit: AuditInfo) -> None:
    """After the apply: record this directory as the target's owner (the first apply; a declared rename hands
    it over). Recorded after the writes, so an apply the backend refused (a secured cluster, no broker registered)
    leaves no record either."""
    if verdict.action not in ("claim", "transfer"):
        return
    cluster = desired.cluster
    claimed = Owner(cluster.name, audit.user, audit.time, plan.plan_id)
    recorded = connection.claim(claimed, cluster.renamed_from if verdict.action == "transfer" else None)
    if recorded.cluster != cluster.name:  # another directory's first apply claimed it meanwhile
        raise RefusedError(printable(f"cluster {cluster.name}: the target was claimed by cluster {recorded.cluster} "
                                     f"({recorded.claimed_by}) while this apply wrote: check both directories"))


def legacy_owner(entries: Sequence[AuditEntry] | None) -> str | None:
    """The cluster the newest successful apply at the target names: the owner of a target applied to before
    owner records existed."""
    for entry in reversed(list(entries or ())):
        if entry.record.get("result") == "applied" and isinstance(entry.record.get("cluster"), str):
            return str(entry.record["cluster"])
    return None


def allow_no_brokers_default() -> bool:
    """RECONCILER_ALLOW_NO_BROKERS=1 (or true/yes): `--allow-no-brokers` for every apply of this environment
    (a pipeline that pre-seeds clusters before their brokers first start)."""
    raw = os.environ.get("RECONCILER_ALLOW_NO_BROKERS", "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise ReconcilerError(f"RECONCILER_ALLOW_NO_BROKERS={raw!r}: expected 1 or 0")


def apply_tuning() -> dict[str, Any]:
    """Operator overrides from the environment (docs/operations.md): RECONCILER_MAX_BATCH_BYTES bounds each
    multi-transaction (default 64 KiB, at least 1024: `zk.write.ApplyOptions` says why), RECONCILER_LOCK_TIMEOUT
    is how long apply waits for another apply's lock before exiting 3 (a duration: 90, 30s, 2m; default: see
    apply_cluster_plan)."""
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
