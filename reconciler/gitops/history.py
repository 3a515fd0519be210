"""The manifests of earlier revisions, for drift reports: each revision materialised once per pass."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path

from reconciler.gitops import GitError, Revision, materialize
from reconciler.manifests.validate import load_and_validate
from reconciler.model import DesiredState

log = logging.getLogger(__name__)


class History:
    """The manifests of earlier revisions, materialised once per revision for the pass (thread-safe)."""

    def __init__(
        self, repo: Path | None, now: tuple[Path, Revision | None], current: Mapping[str, DesiredState],
        workdir: Path,
    ) -> None:
        """`repo`: the git repository (None: no history); `now`: where this pass reads its manifests and their
        revision; `current`: this pass's desired states."""
        self.repo, self.current, self.workdir = repo, current, workdir
        self.root, self.revision = now
        self._roots: dict[str, Path | None] = {}
        self._lock = threading.Lock()

    def desired(self, revision: str | None, cluster: str) -> tuple[DesiredState, Path] | None:
        if not revision or revision.endswith("-dirty") or self.repo is None:
            return None  # a dirty apply's manifests were never committed
        now = self.revision
        if now is not None and not now.dirty and now.sha == revision and cluster in self.current:
            return self.current[cluster], self.root
        root = self._root(revision)
        if root is None:
            return None
        _, states, _ = load_and_validate(root, [cluster])
        state = states.get(cluster)
        return (state, root) if state is not None else None

    def _root(self, revision: str) -> Path | None:
        with self._lock:
            if revision not in self._roots and self.repo is not None:
                target = self.workdir / revision
                try:
                    materialize(self.repo, revision, target)
                    self._roots[revision] = target
                except GitError as exc:
                    log.info("drift: cannot read revision %s: %s", revision, exc.message)
                    self._roots[revision] = None
            return self._roots.get(revision)
