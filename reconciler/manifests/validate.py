"""Manifests on disk -> validated desired states: load, schema, build, Kafka's rules; every problem at once."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from reconciler.catalog import Catalog, load_catalog
from reconciler.errors import Diagnostic
from reconciler.manifests.desired import build_desired, build_settings
from reconciler.manifests.repo import CLUSTER_FILE, ClusterSources, Repository, discover
from reconciler.model import ApplySettings, DesiredState, SourceRef
from reconciler.rules.cluster import check_cluster
from reconciler.rules.limits import Limits, limits_from
from reconciler.rules.topics import PartitionCount, check_loaded_partitions
from reconciler.targets import TargetKey, shared_targets, target_keys

# Clusters are checked in shares of this many: memory stays bounded (a share's documents and states are
# dropped once checked, which also keeps the garbage collector's full passes short), and shares can go to
# worker processes. Each share re-reads fleet.yaml, which is small.
SHARE = 25
T = TypeVar("T")


def operator_limits(pull_request: bool = False) -> Limits:
    """The operator's bounds from this process's environment (`RECONCILER_MAX_*`; with `pull_request`, the
    PR check's `RECONCILER_PR_MAX_*` for the aggregate ones): rules/limits.py."""
    return limits_from(os.environ, pull_request)


def load_and_validate(
    root: Path, clusters: Sequence[str] = (), limits: Limits | None = None, *, policies: bool = False
) -> tuple[Repository, dict[str, DesiredState], list[Diagnostic]]:
    """Load, build and check the clusters (all, or `clusters`) within `limits` (default: the operator's); with
    `policies`, judge them by the repository's own policies too (`validate`; a plan judges its after-state)."""
    from reconciler.rules.offline import validate_counted  # here: `apply PLAN` loads this module for its settings

    limits = limits or operator_limits()
    repo, diags = discover(root, clusters, limits=limits)
    counts: dict[str, PartitionCount] = {}

    def check(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
        problems, counts[state.cluster.name] = validate_counted(state, catalog, limits)
        return problems

    states = _each_cluster(repo, diags, build_desired, check)
    diags.extend(check_loaded_partitions(counts, limits))
    if not clusters:  # the whole repository: one target, one directory (a share's load cannot see the others)
        diags.extend(target_conflicts({name: cluster_target(state) for name, state in states.items()}))
    if policies:  # imported here: `apply PLAN` loads this module for its settings only
        from reconciler.manifests.policy import desired_diagnostics

        diags.extend(desired_diagnostics(root, states, [d for s in repo.clusters.values() for d in s.documents]))
    return repo, states, sorted(set(diags), key=Diagnostic.sort_key)


def _each_cluster(
    repo: Repository, diags: list[Diagnostic],
    build: Callable[[Repository, ClusterSources, Catalog], tuple[T | None, list[Diagnostic]]],
    check: Callable[[T, Catalog], list[Diagnostic]],
) -> dict[str, T]:
    """`build` each cluster of `repo` and `check` what it built; every problem goes to `diags`."""
    catalog = load_catalog()
    out: dict[str, T] = {}
    for name, sources in repo.clusters.items():
        built, problems = build(repo, sources, catalog)
        diags.extend(problems)
        if built is not None:
            diags.extend(check(built, catalog))
            out[name] = built
    return out


# The documents `apply PLAN` reads: the connection, policy and password encoder (Cluster, with the fleet's
# defaults) and the brokers' static server.properties, which may set encoder parameters (BrokerConfig).
APPLY_KINDS = frozenset({"Cluster", "FleetDefaults", "BrokerConfig"})


def load_settings(
    root: Path, clusters: Sequence[str] = ()
) -> tuple[dict[str, ApplySettings], list[Diagnostic]]:
    """Each cluster's `ApplySettings`, with every problem of the documents they come from. Applying a plan
    file needs no more: its changes were validated when it was planned, and its id is checked on reading."""
    repo, diags = discover(root, clusters, kinds=APPLY_KINDS, limits=operator_limits())
    settings = _each_cluster(repo, diags, build_settings, lambda built, _catalog: check_cluster(built))
    return settings, sorted(set(diags), key=Diagnostic.sort_key)


def check_repository(root: Path, clusters: Sequence[str] = (), jobs: int = 0) -> tuple[int, list[Diagnostic]]:
    """What `validate` reports: the number of clusters with a desired state, and every diagnostic, exactly
    as `load_and_validate` finds them. A large repository is checked in shares of `SHARE` clusters (they
    are independent), by `jobs` worker processes (0: one per available core; 1: this process only)."""
    names = sorted(set(clusters)) if clusters else _cluster_names(root)
    if len(names) <= SHARE:
        _, states, diags = load_and_validate(root, clusters, policies=True)
        return len(states), diags
    shares = [(root, names[i : i + SHARE]) for i in range(0, len(names), SHARE)]
    workers = min(jobs or _cores(), len(shares))
    if workers > 1:
        import multiprocessing  # only here: most runs never need it

        if "fork" not in multiprocessing.get_all_start_methods():  # workers inherit the loaded modules
            workers = 1
    if workers <= 1:
        results = [_check_share(share) for share in shares]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(_check_share, shares, chunksize=1)
    count = sum(n for n, _, _ in results)
    # problems of the repository as a whole (fleet.yaml, stray files) are found by every share: merged here
    found = {d for _, diags, _ in results for d in diags}
    if not clusters:  # targets shared across shares
        found.update(target_conflicts({name: t for _, _, targets in results for name, t in targets.items()}))
    return count, sorted(found, key=Diagnostic.sort_key)


def _check_share(share: tuple[Path, list[str]]
                 ) -> tuple[int, list[Diagnostic], dict[str, tuple[frozenset[TargetKey], SourceRef | None]]]:
    _, states, diags = load_and_validate(*share, policies=True)
    return len(states), diags, {name: cluster_target(state) for name, state in states.items()}


def cluster_target(state: DesiredState) -> tuple[frozenset[TargetKey], SourceRef | None]:
    cluster = state.cluster
    where = (cluster.kraft.source if cluster.kraft else cluster.zookeeper.source) or cluster.source
    return target_keys(cluster), where


def target_conflicts(targets: Mapping[str, tuple[frozenset[TargetKey], SourceRef | None]]) -> list[Diagnostic]:
    """An error at each cluster whose target (ZooKeeper ensemble + chroot, KRaft brokers) another directory
    names too: each would plan and apply as if the target were its own (targets.py)."""
    shared = shared_targets({name: keys for name, (keys, _) in targets.items()})
    return [Diagnostic("error", f"cluster {name}: its target is also the target of cluster(s) {', '.join(others)}: "
                       "a target belongs to one cluster directory (a rename keeps it with meta.renamedFrom and "
                       "removes the old directory)", targets[name][1], "connect")
            for name, others in shared.items()]


# A reconcile pass forks workers (`cluster_shares`) for at least this many clusters: below it, the fork and the
# second phase cost more than the second core gives.
FANOUT_MIN = 2 * SHARE


def cluster_shares(root: Path, only: Sequence[str] = (), jobs: int = 0) -> list[list[str]] | None:
    """The clusters of `root` split into one share per worker process (`jobs`, 0: one per core), when each
    cluster can be loaded on its own with exactly the problems a whole-repository load finds: no symbolic
    link among the selected cluster directories, each with its cluster.yaml, and every name in `only` a cluster.
    Otherwise (or for a small fleet, or one core, or no fork), None: the caller loads everything in one process.
    Shares are interleaved (every n-th cluster), so that clusters of similar names spread over the workers."""
    workers = jobs or _cores()
    clusters_dir = root.resolve() / "clusters"
    if workers <= 1 or not clusters_dir.is_dir() or clusters_dir.is_symlink():
        return None
    dirs = {p.name: p for p in clusters_dir.iterdir() if p.is_dir() and not p.name.startswith(".")}
    if only and not set(only) <= set(dirs):
        return None
    names = sorted(set(only)) if only else sorted(dirs)
    if any(dirs[n].is_symlink() or not (dirs[n] / CLUSTER_FILE).is_file() for n in names):
        return None
    if len(names) < FANOUT_MIN:
        return None
    import multiprocessing  # only here: most runs never need it

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    workers = min(workers, len(names))
    return [names[i::workers] for i in range(workers)]


def _cluster_names(root: Path) -> list[str]:
    """The cluster directories `discover` would load (none if there is no clusters/ directory)."""
    clusters_dir = root.resolve() / "clusters"
    if not clusters_dir.is_dir():
        return []
    return sorted(p.name for p in clusters_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
