"""The backend seam: where a cluster's live state is read from and where a plan is written to. A cluster's
`spec.zookeeper` or `spec.kraft` picks one (`rules.cluster` makes it exactly one):

* ZooKeeper (the original implementation, unchanged): `workflow.read_cluster` reads the znodes
  (`zk.read`), `apply.apply_cluster_plan` writes them under the apply lock (`zk.write`), with the audit znodes;
* KRaft: `kraft.backend.KRAFT` reads and writes through the brokers' Admin API (reconciler/kraft/).

Both produce and consume the same data: a `LiveState` for diff, risk, rules, renderers, drift and `describe`,
and an unchanged `Plan`. `workflow.read_cluster` and `apply.apply_cluster_plan` send a KRaft cluster to the
KRaft backend with one hook each; everything between (diff, risk, render, verify) does not know which backend
read the state. Standard library and core types only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from reconciler.errors import Diagnostic
from reconciler.model import ClusterSettings, ClusterSpec, DesiredState, EntityRef, LiveState, Secret
from reconciler.plan import Change, Plan
from reconciler.progress import Progress


class WriteResult(Protocol):
    """What an apply reports (`zk.write.ApplyResult` is one)."""

    @property
    def entities_written(self) -> int: ...

    @property
    def topics_created(self) -> int: ...

    @property
    def partitions_added(self) -> int: ...

    @property
    def batches(self) -> int: ...


class AuditFields(Protocol):
    """Who applies which plan when (`zk.audit.AuditInfo` is one)."""

    @property
    def plan_id(self) -> str: ...

    @property
    def cluster(self) -> str: ...

    @property
    def user(self) -> str: ...

    @property
    def time(self) -> str: ...


class Backend(Protocol):
    """Read the live state for a desired state; check a plan with the cluster's own validation; apply it."""

    def label(self, cluster: ClusterSpec) -> str:
        """What the progress lines name (`ZooKeeper host:2181/kafka`, `KRaft brokers host:9092`)."""
        ...

    def read(self, desired: DesiredState, root: Path, progress: Progress) -> LiveState: ...

    def check(self, plan: Plan, desired: DesiredState, root: Path) -> Sequence[Diagnostic]:
        """Plan-time checks only the cluster can make (KRaft: validateOnly requests)."""
        ...

    def apply(self, plan: Plan, settings: ClusterSettings, root: Path, *,
              resolve_secret: Callable[[Change, EntityRef], Secret], audit: AuditFields, audit_log: Path | None,
              progress: Callable[[int, int], None] | None) -> WriteResult:
        """Execute exactly `plan`; `resolve_secret` gives a sensitive change's value (the manifests' own
        reference, checked by `apply.check_named_secrets`); the audit entry carries `audit`."""
        ...
