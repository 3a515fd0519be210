"""Find and load the manifest repository: `clusters/fleet.yaml` and one directory per cluster.

Every document is parsed strictly and checked against its JSON Schema here; documents with schema errors
are dropped from what follows (their problems are already reported) so later steps see only sound shapes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.errors import Diagnostic
from reconciler.manifests.load import Document, load_file
from reconciler.manifests.schema import salvage, validate_document
from reconciler.model import SourceRef
from reconciler.rules.limits import Limits
from reconciler.secrets.files import FileAccessError, cluster_scope, confine

FLEET_FILE = "fleet.yaml"
POLICY_FILE = "policies.yaml"  # kind Policy: the fleet's and each cluster's (manifests/policy.py)
CLUSTER_FILE = "cluster.yaml"
MANIFEST_SUFFIXES = (".yaml", ".yml")


@dataclass
class ClusterSources:
    name: str
    directory: Path
    documents: list[Document] = field(default_factory=list)


class OverBudget(Exception):
    """The manifests loaded so far are over one of the operator's aggregate bounds; nothing more is read."""


@dataclass
class Budget:
    """What one load has read so far, against the operator's aggregate bounds (rules/limits.py). A file's size
    is checked before it is read, its documents and entities as soon as it is parsed, so a load stops within
    one file (at most 16 MiB and 500,000 YAML nodes) of a bound."""

    limits: Limits
    bytes: int = 0
    documents: int = 0
    entities: int = 0

    def before(self, size: int, shown: str) -> None:
        self.bytes += size
        if self.bytes > self.limits.manifest_bytes:
            raise self._over("manifest_bytes", "bytes of manifests", SourceRef(shown, 1, 1))

    def after(self, docs: list[Document]) -> None:
        for doc in docs:
            self.documents += 1
            if self.documents > self.limits.documents:
                raise self._over("documents", "YAML documents", doc.mark(()))
            self.entities += entities_of(doc)
            if self.entities > self.limits.entities:
                raise self._over("entities", "entities (topics, quota entities, other documents)", doc.mark(()))

    def _over(self, name: str, what: str, where: SourceRef) -> OverBudget:
        setting, bound = self.limits.setting(name), getattr(self.limits, name)
        return OverBudget(
            Diagnostic("error", f"the manifests loaded reach more than {bound:,} {what} here, over {setting}; "
                       "nothing after this is read. Change fewer clusters at once, or ask the operator to raise "
                       f"{setting}", where, setting),
            Diagnostic("error", f"manifests over {setting} ({bound:,} {what}): loading stopped, so no cluster is "
                       "planned or applied"),
        )


def entities_of(doc: Document) -> int:
    """What a document declares, for the bound on entities: its topics, its quota entities, else 1."""
    data = doc.data
    spec = data.get("spec") if isinstance(data, dict) else None
    kind = data.get("kind") if isinstance(data, dict) else None
    if not isinstance(spec, dict):
        return 1
    if kind == "Topics" and isinstance(spec.get("topics"), dict):
        return max(1, len(spec["topics"]))
    if kind == "Quotas":
        sections = [spec.get(s) for s in ("clients", "users", "ips")]
        count = sum(len(s) for s in sections if isinstance(s, dict))
        pairs = spec.get("userClients")
        if isinstance(pairs, dict):
            count += sum(len(c) if isinstance(c, dict) else 1 for c in pairs.values())
        return max(1, count)
    return 1


@dataclass
class Repository:
    root: Path  # the repository root (manifests under root/clusters)
    fleet: list[Document] = field(default_factory=list)
    clusters: dict[str, ClusterSources] = field(default_factory=dict)
    budget: Budget = field(default_factory=lambda: Budget(Limits()))

    def display(self, path: Path) -> str:
        """Paths in diagnostics are relative to the repository root, as a PR reviewer sees them."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


def _link_problem(repo: Repository, path: Path) -> Diagnostic | None:
    """None when `path` (a symlink in a cluster's directory) resolves inside that directory; else why it is
    refused. The target is never named: it may be a secret's path. A cluster reads only its own directory
    (`secrets.files.cluster_scope`: what a pull request changes is found by path)."""
    scope, where = cluster_scope(path.parent, repo.root)
    try:
        confine(path, scope, shown=repo.display(path), scope=where)
    except FileAccessError:
        return Diagnostic("error", f"a symbolic link that leads outside {where} (or nowhere); refused: "
                          "a cluster's manifests and the files they name must be inside its own directory",
                          SourceRef(repo.display(path), 1, 1))
    return None


def _fixed_file_problem(repo: Repository, path: Path) -> Diagnostic:
    """clusters/, a cluster's directory, fleet.yaml and policies.yaml are never links: which files define and
    judge the clusters is fixed by path (a link would change them where no diff of clusters/ shows it)."""
    return Diagnostic("error", "a symbolic link where the repository's structure must be a real file or directory "
                      "(clusters/, clusters/<cluster>/, fleet.yaml, policies.yaml); refused",
                      SourceRef(repo.display(path), 1, 1))


def _manifest_files(repo: Repository, directory: Path, diags: list[Diagnostic]) -> list[Path]:
    """Manifest files under `directory`, walked without following directory links. A link (to a file or a
    directory) leading outside the repository is an error; a directory link inside it is not walked (the
    directory it points to is walked where it is, if it is under the cluster)."""
    found: list[Path] = []
    for top, dirs, files in os.walk(directory, followlinks=False):
        here = Path(top)
        for name in sorted(dirs):
            link = here / name
            if link.is_symlink() and (problem := _link_problem(repo, link)) is not None:
                diags.append(problem)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = here / name
            if name.startswith(".") or path.suffix not in MANIFEST_SUFFIXES:
                continue
            if path.is_symlink() and (problem := _link_problem(repo, path)) is not None:
                diags.append(problem)
            elif path.is_file():
                found.append(path)
    return sorted(found)


def _load(repo: Repository, path: Path, diags: list[Diagnostic], kinds: frozenset[str] | None = None) -> list[Document]:
    shown = repo.display(path)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # load_file reports why it cannot be read
    repo.budget.before(size, shown)
    # with `kinds`, a file that cannot hold one of them is not parsed (its documents are not counted either)
    docs, problems = load_file(path, shown, kinds)
    diags.extend(problems)
    repo.budget.after(docs)
    if kinds is not None:  # only these kinds are wanted: the others are neither checked nor kept
        docs = [d for d in docs if isinstance(d.data, dict) and d.data.get("kind") in kinds]
    sound: list[Document] = []
    for doc in docs:
        schema_problems = validate_document(doc)
        diags.extend(schema_problems)
        if not schema_problems:
            sound.append(doc)
        elif (rest := salvage(doc)) is not None:  # the other entries still meet Kafka's rules
            sound.append(rest)
    return sound


def discover(
    root: Path, only: Sequence[str] = (), kinds: frozenset[str] | None = None, limits: Limits | None = None
) -> tuple[Repository, list[Diagnostic]]:
    """Load `root/clusters`. With `only`, load just those clusters (and the fleet file); with `kinds`, keep
    (and check against their schemas) only documents of those kinds; a file that cannot hold one is not even
    parsed (`load.may_hold`: no kind's name in its text). Files are read within the aggregate bounds of
    `limits` (default: the defaults; every file's bytes count, the documents and entities of those parsed): past
    one, loading stops with an error at the manifest where it was crossed and one that concerns every cluster."""
    repo = Repository(root=root.resolve(), budget=Budget(limits or Limits()))
    diags: list[Diagnostic] = []
    try:
        _discover(repo, only, kinds, diags)
    except OverBudget as over:
        diags.extend(over.args)
    return repo, diags


def _discover(repo: Repository, only: Sequence[str], kinds: frozenset[str] | None, diags: list[Diagnostic]) -> None:
    clusters_dir = repo.root / "clusters"
    if not clusters_dir.is_dir():
        diags.append(Diagnostic("error", f"no clusters/ directory under {repo.root}"))
        return

    if clusters_dir.is_symlink():
        diags.append(_fixed_file_problem(repo, clusters_dir))
        return
    fleet = clusters_dir / FLEET_FILE
    if fleet.is_symlink():
        diags.append(_fixed_file_problem(repo, fleet))
    elif fleet.is_file():
        repo.fleet = _load(repo, fleet, diags, kinds)
        for doc in repo.fleet:
            if doc.data.get("kind") != "FleetDefaults":
                diags.append(_misplaced(doc, "fleet.yaml may only hold FleetDefaults documents"))

    for entry in sorted(clusters_dir.iterdir()):
        if entry.is_file() and entry.suffix in MANIFEST_SUFFIXES and entry.name not in (FLEET_FILE, POLICY_FILE):
            diags.append(
                Diagnostic(
                    "error",
                    "manifests belong in a cluster directory (clusters/<cluster>/...); only fleet.yaml "
                    "and policies.yaml may sit directly in clusters/",
                    SourceRef(repo.display(entry), 1, 1),
                )
            )
    wanted = set(only)
    for cluster_dir in sorted(p for p in clusters_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if wanted and cluster_dir.name not in wanted:
            continue
        if cluster_dir.is_symlink():
            diags.append(_fixed_file_problem(repo, cluster_dir))
            continue
        sources = ClusterSources(cluster_dir.name, cluster_dir)
        for path in _manifest_files(repo, cluster_dir, diags):
            sources.documents.extend(_load(repo, path, diags, kinds))
        repo.clusters[cluster_dir.name] = sources
        if not (cluster_dir / CLUSTER_FILE).is_file():
            diags.append(
                Diagnostic(
                    "error",
                    f"cluster directory {repo.display(cluster_dir)} has no {CLUSTER_FILE} (one kind: Cluster document)",
                    SourceRef(repo.display(cluster_dir), 1, 1),
                )
            )
    for name in sorted(wanted - set(repo.clusters)):
        known = ", ".join(sorted(p.name for p in clusters_dir.iterdir() if p.is_dir())) or "none"
        diags.append(Diagnostic("error", f"unknown cluster {name!r} (clusters in this repository: {known})"))


def _misplaced(doc: Document, message: str) -> Diagnostic:
    return Diagnostic("error", message, doc.mark(("kind",)), "kind")
