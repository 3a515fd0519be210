"""GitOps: manifests at any revision without a checkout (GitPython), the clusters a revision range changes,
the revision recorded in plans and audit entries, the mirror of a remote manifests repo, and the scheduled
reconcile loop built on them.

    revision.py  open the repository holding the manifests; `Revision` (sha, author, dirty); dirty check
    tree.py      `clusters/` of a revision written to a directory (`materialize`, `manifests_at`)
    changes.py   `changed_clusters`: cluster directories, fleet.yaml selectors and labels
    remote.py    `sync_remote`: a bare mirror of a manifests repository in a cache directory
    reconcile.py one reconcile pass: every cluster planned and applied in parallel, failures isolated
    drift.py     what changed in ZooKeeper since the last audited apply (change notifications, audit)
    reconcile_report.py  a pass rendered as text or JSON
"""

from __future__ import annotations

from reconciler.gitops.changes import ChangeSet, changed_clusters, compute_changes
from reconciler.gitops.remote import sync_remote
from reconciler.gitops.revision import (
    DirtyTreeError,
    GitError,
    Revision,
    current_revision,
    open_repo,
    require_clean,
    revision_info,
)
from reconciler.gitops.tree import manifests_at, materialize

__all__ = [
    "ChangeSet",
    "DirtyTreeError",
    "GitError",
    "Revision",
    "changed_clusters",
    "compute_changes",
    "current_revision",
    "manifests_at",
    "materialize",
    "open_repo",
    "require_clean",
    "revision_info",
    "sync_remote",
]
