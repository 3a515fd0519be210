"""Which secret references cannot be resolved here, found all at once, before anything connects or writes.

`plan` reports them as warnings (a password it cannot read shows as unknown; apply would fail) and as
errors only for what planning itself needs (the ZooKeeper credentials); `apply` refuses a plan whose
secrets are missing, or whose secret references are not the ones the manifests name, before it writes
anything. Each diagnostic names the entity, the key and the manifest
line; none holds a value (only `resolve`'s messages, which name the variable or the file).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from reconciler.errors import Diagnostic, SecretError, Severity
from reconciler.model import ClusterSettings, DesiredState, DesiredValue, EntityRef, SecretRef, SourceRef
from reconciler.plan import Change, EntityPlan, Plan
from reconciler.secrets.compare import base_dir, cluster_encoders
from reconciler.secrets.refs import resolve


def _problem(ref: SecretRef, root: Path, source: SourceRef | None) -> str | None:
    if ref.encoded is not None:
        return None  # needs the encoder secret, reported once for the cluster
    try:
        resolve(ref, base_dir(root, source), root)  # confined to the repository, as apply resolves it
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


# (entity, key) -> the secret reference (or sealed value) the manifests declare for it, with its manifest line
NamedSecrets = Mapping[tuple[EntityRef, str], DesiredValue]


def named_secrets(desired: DesiredState) -> dict[tuple[EntityRef, str], DesiredValue]:
    """Every secret reference and sealed value the manifests of one cluster name, by entity and key."""
    return {(ref, key): value for ref, entity in desired.entities.items() for key, value in entity.config.items()
            if isinstance(value.value, SecretRef)}


def secret_changes(plan: Plan) -> Iterator[tuple[EntityPlan, Change]]:
    """The changes apply resolves a secret for (a sensitive set or re-encode; a removal resolves nothing)."""
    for entity in plan.entities:
        for change in entity.changes:
            if change.sensitive and change.op != "-":
                yield entity, change


def unnamed_secrets(plan: Plan, named: NamedSecrets) -> list[Diagnostic]:
    """Every password change whose secret reference is not the one the manifests name for that entity and key
    now. A plan file is data anyone who can write it can change (its id is an unkeyed hash): apply resolves
    only what the manifests name, so an edited reference (`{env: AWS_SECRET_ACCESS_KEY}`) is refused before
    anything is resolved or written. The message never repeats the plan's reference."""
    out: list[Diagnostic] = []
    for entity, change in secret_changes(plan):
        wanted = named.get((entity.ref, change.key))
        if wanted is None or change.secret is None or wanted.value != change.secret:
            out.append(Diagnostic(
                "error", f"{entity.ref.display}: the plan's secret reference for this password is not the one the "
                "cluster's manifests name for it now; refusing to resolve it (plan again from the manifests)",
                wanted.source if wanted is not None else None, change.key))
    return out


def plan_secret_problems(
    plan: Plan, desired: ClusterSettings, root: Path, named: NamedSecrets, severity: Severity = "error"
) -> list[Diagnostic]:
    """What `apply` of `plan` would fail on: a secret reference the manifests (`named`) do not name for its
    key, and every secret a change must resolve or encode (as the manifests name it, from their directory)."""
    out = unnamed_secrets(plan, named)
    if out:
        return out  # nothing of an unnamed reference is resolved, not even to check that it resolves
    encoders = None
    for entity, change in secret_changes(plan):
        encoders = encoders or cluster_encoders(desired.cluster, root)  # apply encodes every password
        # a SCRAM credential needs no encoder, nor does a KRaft cluster (passwords go as they are, kraft/write.py)
        if encoders.current is None and change.iterations is None and not desired.cluster.is_kraft:
            out.append(Diagnostic(severity, f"{entity.ref.display}: cannot encode the password: "
                                  f"{encoders.problem}", change.source, change.key))
        wanted = named[(entity.ref, change.key)]
        assert isinstance(wanted.value, SecretRef)  # unnamed_secrets checked it
        problem = _problem(wanted.value, root, wanted.source)
        if problem is not None:
            out.append(Diagnostic(severity, f"{entity.ref.display}: {problem}", wanted.source, change.key))
    return out
