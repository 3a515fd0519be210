"""Which secret references cannot be resolved here, found all at once, before anything connects or writes.

`plan` reports them as warnings (a password it cannot read shows as unknown; apply would fail) and as
errors only for what planning itself needs (the ZooKeeper credentials); `apply` refuses a plan whose
secrets are missing before it writes anything. Each diagnostic names the entity, the key and the manifest
line; none holds a value (only `resolve`'s messages, which name the variable or the file).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from reconciler.errors import Diagnostic, SecretError, Severity
from reconciler.model import ClusterSettings, DesiredState, EntityRef, SecretRef, SourceRef
from reconciler.plan import Plan
from reconciler.secrets.compare import base_dir, cluster_encoders
from reconciler.secrets.refs import resolve


def _problem(ref: SecretRef, root: Path, source: SourceRef | None) -> str | None:
    if ref.encoded is not None:
        return None  # needs the encoder secret, reported once for the cluster
    try:
        resolve(ref, base_dir(root, source))
    except SecretError as exc:
        return exc.message
    return None


def _entity_secrets(desired: DesiredState) -> Iterator[tuple[EntityRef, str, SecretRef, SourceRef | None]]:
    for ref, entity in desired.entities.items():
        for key, value in entity.config.items():
            if isinstance(value.value, SecretRef):
                yield ref, key, value.value, value.source or entity.source


def missing_secrets(desired: DesiredState, root: Path) -> list[Diagnostic]:
    """Every unresolvable reference of one cluster: errors for the ZooKeeper credentials, else warnings."""
    cluster = desired.cluster
    out: list[Diagnostic] = []
    zk = cluster.zookeeper
    if zk.auth_credentials is not None:
        where = zk.source or cluster.source
        problem = _problem(zk.auth_credentials, root, cluster.source)
        if problem is not None:
            out.append(Diagnostic("error", f"cluster {cluster.name}: ZooKeeper credentials: {problem}", where,
                                  "spec.zookeeper.auth.credentials"))
    encoder = cluster.password_encoder
    for field, encoder_ref in (("secret", encoder.secret if encoder else None),
                               ("oldSecret", encoder.old_secret if encoder else None)):
        problem = _problem(encoder_ref, root, cluster.source) if encoder_ref is not None else None
        if problem is not None:
            out.append(Diagnostic("warning", f"cluster {cluster.name}: passwordEncoder.{field}: {problem}; "
                                  "passwords cannot be compared (shown as unknown) nor applied",
                                  encoder.source if encoder and encoder.source else cluster.source,
                                  f"spec.passwordEncoder.{field}"))
    for ref, key, secret, source in _entity_secrets(desired):
        problem = _problem(secret, root, source)
        if problem is not None:
            out.append(Diagnostic("warning", f"{ref.display}: {problem}; the plan shows it as unknown and "
                                  "apply will refuse it", source, key))
    return out


def plan_secret_problems(plan: Plan, desired: ClusterSettings, root: Path, severity: Severity = "error") -> list[
    Diagnostic
]:
    """What `apply` of `plan` would fail on: every secret a change must resolve or encode."""
    out: list[Diagnostic] = []
    encoders = None
    for entity in plan.entities:
        for change in entity.changes:
            if not change.sensitive or change.op == "-":
                continue
            encoders = encoders or cluster_encoders(desired.cluster, root)  # apply encodes every password
            if encoders.current is None:
                out.append(Diagnostic(severity, f"{entity.ref.display}: cannot encode the password: "
                                      f"{encoders.problem}", change.source, change.key))
            problem = _problem(change.secret, root, change.source) if change.secret is not None else None
            if problem is not None:
                out.append(Diagnostic(severity, f"{entity.ref.display}: {problem}", change.source, change.key))
    return out
