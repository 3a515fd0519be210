"""The trusted view of a pull request: what the base revision (the branch it merges into) says, made in one place.

A pull request's author controls every file of its checkout. Every PR-mode command (`plan --git-base`,
`impact --git-base`) asks this view, never a head setting, for:

* where to connect and with which credentials: the base's `spec.zookeeper` / `spec.kraft` /
  `spec.passwordEncoder` (`connection`);
* which secrets may be resolved: a reference the base has for the same entity and key, whose file content the
  pull request leaves as it is (`secret_trust`); a changed file is a change, never compared;
* which name and labels policies select the cluster by (`judged_as`: the base's; a relabel cannot move a
  cluster out of a policy, a rename only with `meta.renamedFrom`, and both are shown);
* which cluster directory owns each target (`owner_of`: the base's index of every cluster's ZooKeeper ensemble
  + chroot or KRaft brokers, `targets.py`), so a new directory cannot alias an existing cluster;
* whether an input file's content changed (`same_file`): TLS files compare by content, not by path.

Read from git (the base commit's `clusters/`), never from the work tree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path, PurePosixPath

from reconciler.errors import ReconcilerError, has_errors
from reconciler.gitops.revision import open_repo, resolve_commit
from reconciler.gitops.tree import blob_bytes, clusters_tree, manifests_at
from reconciler.manifests.load import MAX_FILE_BYTES, load_text
from reconciler.manifests.repo import CLUSTER_FILE
from reconciler.manifests.validate import load_and_validate
from reconciler.model import ClusterSpec, DesiredState, EntityRef, SecretRef, SourceRef, TlsSpec, ZooKeeperSpec
from reconciler.secrets.compare import SecretTrust, TrustedSecret
from reconciler.secrets.files import MAX_SECRET_BYTES, FileAccessError, approved_secret_dirs, read_named
from reconciler.targets import TargetKey, describe, document_keys, target_keys

_ZK_FIELDS = {"connect": "connect", "auth_scheme": "auth", "auth_credentials": "auth", "tls": "tls",
              "session_timeout_s": "sessionTimeoutSeconds", "set_acl": "setAcl",
              "reconciler_path": "reconcilerPath"}


@dataclass(frozen=True)
class Trusted:
    """The base revision's manifests (a temporary tree holding the clusters to plan), their desired states, and
    the target of every cluster of the base (read from its cluster.yaml)."""

    root: Path  # the base's manifests root
    head_root: Path  # the pull request's manifests root (its work tree)
    states: Mapping[str, DesiredState]
    targets: Mapping[str, frozenset[TargetKey]]

    def base_name(self, head: ClusterSpec) -> str | None:
        """The base cluster a head cluster continues: its own name, or the name it declares it was renamed
        from (`meta.renamedFrom`); None for a cluster new in the pull request."""
        if head.name in self.states:
            return head.name
        if head.renamed_from is not None and head.renamed_from in self.states:
            return head.renamed_from
        return None

    def owner_of(self, head: ClusterSpec) -> list[str]:
        """The base clusters, other than the one `head` continues, whose target `head` names."""
        keys = target_keys(head)
        continues = self.base_name(head)
        return sorted(name for name, theirs in self.targets.items() if name != continues and keys & theirs)

    def connection(self, head: DesiredState) -> DesiredState:
        """`head` with the base's connection settings and password encoder (never the pull request's)."""
        base = self.states[self.base_name(head.cluster) or head.cluster.name].cluster
        cluster = replace(head.cluster, zookeeper=base.zookeeper, password_encoder=base.password_encoder,
                          kraft=base.kraft, admin=base.admin, source=base.source)
        return replace(head, cluster=cluster)

    def judged_as(self, head: ClusterSpec) -> tuple[str, Mapping[str, str]]:
        """The name and labels policies select by: the base's (a new cluster: its own)."""
        name = self.base_name(head)
        if name is None:
            return head.name, head.labels
        return name, self.states[name].cluster.labels

    def same_file(self, head_source: SourceRef | None, base_source: SourceRef | None, name: str) -> bool:
        """Whether the file `name` (relative to the manifest at `head_source` / `base_source`) has the same content
        in the pull request as in the base. A file that cannot be read on either side counts as changed."""
        contents = [_content(root, source, name) for root, source in
                    ((self.head_root, head_source), (self.root, base_source))]
        return contents[0] is not None and contents[0] == contents[1]

    def secret_trust(self, head: DesiredState) -> TrustedSecret:
        """The `trusted_secret` verdict for the pull request's secret references (secrets/compare.py)."""
        base_name = self.base_name(head.cluster)
        allowed = _secret_refs(self.states[base_name]) if base_name is not None else {}

        def trusted_secret(ref: EntityRef, key: str, secret: SecretRef, source: SourceRef | None) -> SecretTrust:
            found = allowed.get((ref, key))
            # SecretRef equality compares a sealed value's text exactly: one changed byte (an edited IV) is untrusted
            if found is None or (found[0], _source_dir(found[0], found[1])) != (secret, _source_dir(secret, source)):
                return False
            if secret.file is not None and not self.same_file(source, found[1], secret.file):
                return "changed"  # the base's reference, the pull request's content: what merging writes
            return True

        return trusted_secret


def _content(root: Path, source: SourceRef | None, name: str) -> bytes | None:
    if source is None:
        return None
    directory = root / PurePosixPath(source.file).parent
    try:
        return read_named(directory / name, directory, root, MAX_SECRET_BYTES, shown=name,
                          allowed=approved_secret_dirs())
    except FileAccessError:
        return None


def _secret_refs(state: DesiredState) -> dict[tuple[EntityRef, str], tuple[SecretRef, SourceRef | None]]:
    """(entity, key) -> (reference, where the manifest naming it is) for every secret reference and sealed value."""
    out: dict[tuple[EntityRef, str], tuple[SecretRef, SourceRef | None]] = {}
    for ref, entity in state.entities.items():
        for key, value in entity.config.items():
            if isinstance(value.value, SecretRef):
                out[(ref, key)] = (value.value, value.source)
    return out


def _source_dir(secret: SecretRef, source: SourceRef | None) -> str:
    """A file reference is relative to the manifest naming it; a sealed value or a variable names no file."""
    if secret.file is None:
        return ""
    return str(PurePosixPath(source.file).parent) if source else ""


def changed_settings(head: ClusterSpec, base: ClusterSpec, trusted: Trusted | None = None) -> list[str]:
    """The trusted settings the pull request changes, named as in the manifest (never their values). With
    `trusted`, a TLS file named by the same path but with other content counts as changed (finding 14)."""
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
    if trusted is not None:
        sections = (("spec.zookeeper.tls", head.zookeeper.tls, base.zookeeper.tls),
                    ("spec.kraft.tls", head.kraft.admin.tls if head.kraft else None,
                     base.kraft.admin.tls if base.kraft else None),
                    ("spec.adminClient.tls", head.admin.tls if head.admin else None,
                     base.admin.tls if base.admin else None))
        for section, mine, theirs in sections:
            for name in _changed_tls_files(trusted, head.source, base.source, mine, theirs):
                names.append(f"{section} (the content of {name})")
    return list(dict.fromkeys(names))


def _changed_tls_files(trusted: Trusted, head_source: SourceRef | None, base_source: SourceRef | None,
                       mine: TlsSpec | None, theirs: TlsSpec | None) -> list[str]:
    """The TLS files named by the same path at both revisions whose content differs (a changed path is a
    changed setting already)."""
    if mine is None or theirs is None:
        return []
    pairs = ((mine.ca_file, theirs.ca_file), (mine.cert_file, theirs.cert_file),
             (mine.key_file.file if mine.key_file else None, theirs.key_file.file if theirs.key_file else None))
    return [a for a, b in pairs if a is not None and a == b and not trusted.same_file(head_source, base_source, a)]


def _base_targets(repo_root: Path, base: str) -> dict[str, frozenset[TargetKey]]:
    """Every cluster directory of the base revision and its target, from its cluster.yaml alone (read from git:
    one small file per cluster, not the whole fleet)."""
    repo, prefix = open_repo(repo_root)
    tree = clusters_tree(resolve_commit(repo, base), prefix)
    if tree is None:
        return {}
    out: dict[str, frozenset[TargetKey]] = {}
    for item in tree.trees:
        data = blob_bytes(tree, f"{item.name}/{CLUSTER_FILE}")
        if data is None or len(data) > MAX_FILE_BYTES:
            continue
        docs, diags = load_text(data, f"clusters/{item.name}/{CLUSTER_FILE}")
        if has_errors(diags):
            continue
        for doc in docs:
            if isinstance(doc.data, dict) and doc.data.get("kind") == "Cluster":
                out[item.name] = document_keys(doc.data)
                break
    return out


@contextmanager
def trusted_base(repo_root: Path, base: str, heads: Sequence[DesiredState]) -> Iterator[Trusted]:
    """The trusted view for the pull request's clusters `heads` (and the clusters they say they were renamed
    from), for the duration of the planning."""
    names = sorted({h.cluster.name for h in heads} | {h.cluster.renamed_from for h in heads
                                                       if h.cluster.renamed_from is not None})
    with manifests_at(repo_root, base, names) as (root, _):
        _, states, _ = load_and_validate(root, names)
        yield Trusted(root, repo_root, states, _base_targets(repo_root, base))


@contextmanager
def trusted_reads(repo_root: Path, base: str, heads: Mapping[str, DesiredState]
                  ) -> Iterator[tuple[Path, dict[str, DesiredState]]]:
    """For reading the live state of a pull request's clusters (`impact --git-base` without an inventory): the
    base's manifests root and each cluster with the base's connection settings. A cluster new in the pull
    request has nothing trusted to read and is left out (its "before" is empty); one naming another cluster's
    target is refused (`prmode.TargetConflictError`'s message)."""
    with trusted_base(repo_root, base, list(heads.values())) as trusted:
        states: dict[str, DesiredState] = {}
        for name, head in heads.items():
            if others := trusted.owner_of(head.cluster):
                raise ReconcilerError(f"cluster {name}: {describe(head.cluster)} is the target of cluster "
                                      f"{others[0]} on the base branch: a target belongs to one cluster directory")
            if trusted.base_name(head.cluster) is not None:
                states[name] = trusted.connection(head)
        yield trusted.root, states
