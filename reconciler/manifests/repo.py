"""Find and load the manifest repository: `clusters/fleet.yaml` and one directory per cluster.

Every document is parsed strictly and checked against its JSON Schema here; documents with schema errors
are dropped from what follows (their problems are already reported) so later steps see only sound shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.errors import Diagnostic
from reconciler.manifests.load import Document, load_file
from reconciler.manifests.schema import validate_document
from reconciler.model import SourceRef

FLEET_FILE = "fleet.yaml"
CLUSTER_FILE = "cluster.yaml"
MANIFEST_SUFFIXES = (".yaml", ".yml")


@dataclass
class ClusterSources:
    name: str
    directory: Path
    documents: list[Document] = field(default_factory=list)


@dataclass
class Repository:
    root: Path  # the repository root (manifests under root/clusters)
    fleet: list[Document] = field(default_factory=list)
    clusters: dict[str, ClusterSources] = field(default_factory=dict)

    def display(self, path: Path) -> str:
        """Paths in diagnostics are relative to the repository root, as a PR reviewer sees them."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


def _manifest_files(directory: Path) -> list[Path]:
    return sorted(
        p for p in directory.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES and not p.name.startswith(".")
    )


def _load(repo: Repository, path: Path, diags: list[Diagnostic]) -> list[Document]:
    docs, problems = load_file(path, repo.display(path))
    diags.extend(problems)
    sound: list[Document] = []
    for doc in docs:
        schema_problems = validate_document(doc)
        diags.extend(schema_problems)
        if not schema_problems:
            sound.append(doc)
    return sound


def discover(root: Path, only: Sequence[str] = ()) -> tuple[Repository, list[Diagnostic]]:
    """Load `root/clusters`. With `only`, load just those clusters (and the fleet file)."""
    repo = Repository(root=root.resolve())
    diags: list[Diagnostic] = []
    clusters_dir = repo.root / "clusters"
    if not clusters_dir.is_dir():
        diags.append(Diagnostic("error", f"no clusters/ directory under {repo.root}"))
        return repo, diags

    fleet = clusters_dir / FLEET_FILE
    if fleet.is_file():
        repo.fleet = _load(repo, fleet, diags)
        for doc in repo.fleet:
            if doc.data.get("kind") != "FleetDefaults":
                diags.append(_misplaced(doc, "fleet.yaml may only hold FleetDefaults documents"))

    for entry in sorted(clusters_dir.iterdir()):
        if entry.is_file() and entry.suffix in MANIFEST_SUFFIXES and entry.name != FLEET_FILE:
            diags.append(
                Diagnostic(
                    "error",
                    "manifests belong in a cluster directory (clusters/<cluster>/...); only fleet.yaml "
                    "may sit directly in clusters/",
                    SourceRef(repo.display(entry), 1, 1),
                )
            )
    wanted = set(only)
    for cluster_dir in sorted(p for p in clusters_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if wanted and cluster_dir.name not in wanted:
            continue
        sources = ClusterSources(cluster_dir.name, cluster_dir)
        for path in _manifest_files(cluster_dir):
            sources.documents.extend(_load(repo, path, diags))
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
    return repo, diags


def _misplaced(doc: Document, message: str) -> Diagnostic:
    return Diagnostic("error", message, doc.mark(("kind",)), "kind")
