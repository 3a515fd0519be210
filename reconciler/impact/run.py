"""The `impact` use case: manifests (after) + inventory or live ZooKeeper (before) -> Spark job -> reports."""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.impact.kafka4 import kafka4_summary
from reconciler.model import DesiredState
from reconciler.progress import NO_PROGRESS, Progress

log = logging.getLogger(__name__)
TrustedReads = Callable[[dict[str, DesiredState]], AbstractContextManager[tuple[Path, dict[str, DesiredState]]]]


@dataclass(frozen=True)
class ImpactOptions:
    repo: Path
    clusters: Sequence[str] = ()
    git_base: str | None = None
    inventory: Path | None = None
    master: str = "local[*]"
    out: Path | None = None
    full: bool = False  # evaluate every topic x every topic key (slower; same result)
    progress: Progress = NO_PROGRESS  # a line per phase on stderr (the CLI's), nothing for embedders
    # with git_base and no inventory: where the live state is read from, given the clusters to assess (the
    # base's manifests root and the clusters with the base's connection settings: gitops.trusted.trusted_reads,
    # given by the command line, which may import gitops). Never the pull request's own settings.
    trusted_reads: TrustedReads | None = None


def select_states(opts: ImpactOptions, changed_files: Sequence[str] = ()) -> dict[str, DesiredState]:
    """Validated desired states of the clusters to assess (all, those named, or those changed since REV;
    `changed_files`: the files under clusters/ changed since REV, `gitbase.assess`)."""
    from reconciler.impact.gitbase import changed_clusters, policies_changed
    from reconciler.workflow import load_desired

    states, _ = load_desired(opts.repo, opts.clusters)
    if opts.git_base is not None:
        changed = changed_clusters(opts.repo, opts.git_base, states)
        if policies_changed(changed_files):  # a policy edit concerns every cluster it may select
            changed = set(states)
        log.info("clusters changed since %s: %s", opts.git_base, ", ".join(sorted(changed)) or "none")
        states = {name: state for name, state in states.items() if name in changed}
    return states


def _inventory_note(directory: Path) -> str:
    try:
        meta = json.loads((directory / "inventory.json").read_text(encoding="utf-8"))
        return f"the inventory {directory.name}/ ({meta.get('source', 'snapshot')} of {meta.get('created', '?')})"
    except (OSError, ValueError):
        return f"the inventory {directory.name}/"


def run_impact(opts: ImpactOptions) -> dict[str, Any]:
    """The summary (SPEC §8 JSON); with `out`, also the report files and the Parquet detail tables."""
    from reconciler.impact.access import assess_access
    from reconciler.impact.afterstate import after_rows
    from reconciler.impact.aggregate import summary as summarize
    from reconciler.impact.connect import shown_master
    from reconciler.impact.gitbase import assess
    from reconciler.impact.inventory import read_inventory
    from reconciler.impact.job import compute_changes, release_cached
    from reconciler.impact.moves import assess_moves
    from reconciler.impact.outputs import write_outputs
    from reconciler.impact.policy_counts import fleet_policy_counts
    from reconciler.impact.session import EarlyStart, spark_session
    from reconciler.impact.sparkprogress import spark_progress

    started = time.monotonic()
    progress = opts.progress
    # absolute: a Spark Connect server reads and writes the Parquet tables, and its working directory is not ours
    opts = dataclasses.replace(opts, inventory=opts.inventory and opts.inventory.absolute(),
                               out=opts.out and opts.out.absolute())
    with ExitStack() as stack:  # Spark and the temporary inventory live until the reports are written
        early = EarlyStart(opts.master)  # the JVM starts while the manifests are read and validated
        stack.callback(early.close)  # stops it if the manifests are refused (a no-op once the session is taken)
        with progress.phase("impact: clusters to assess") as phase:
            change, changed_files = assess(opts.repo, opts.git_base)
            states = select_states(opts, changed_files)
            after = after_rows(states)
            phase.done(f"{len(states)} cluster(s)" + (f" changed since {opts.git_base}" if opts.git_base else ""))
        with progress.phase(f"impact: start Spark ({shown_master(opts.master)})") as phase:
            spark = stack.enter_context(spark_session(opts.master, early))
            stack.callback(release_cached)  # a shared server keeps no rows of ours after the run
            phase.done(f"Spark {spark.version}")
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="impact-live-")))
        with progress.phase("impact: before (inventory or live state)") as phase:
            inventory_dir, before = _before(spark, opts, states, tmp)
            inv = read_inventory(spark, inventory_dir)
            phase.done(before)
        with progress.phase("impact: effective configs before and after, and the summary") as phase, \
                spark_progress(spark, phase, opts.master):
            changes = compute_changes(spark, inv, after, full=opts.full)
            summary = summarize(spark, changes)
            base = _base_policies(opts, tmp)
            if (policy := fleet_policy_counts(spark, inv, after, states, opts.repo, base)) is not None:
                summary["policy"] = policy  # kind Policy over every topic after the change (policy_counts)
            if (access := assess_access(spark, inventory_dir, states)) is not None:
                summary["access"] = access  # ACL entries and principals losing access (impact/access.py)
            summary.update(kafka4_summary(inv, states))  # group configs, subscriptions, feature levels
            if (moves := assess_moves(spark, inv, states)) is not None:
                summary["moves"] = moves  # what replica moves copy (impact/moves.py)
            at_risk = _consumers(summary, changes, inv, inventory_dir, states, opts, base)
            summary["source"] = {"before": before, "after": "manifests", "gitBase": opts.git_base,
                                 "change": change}
            phase.done(f"{summary['topicsAffected']:,} topic(s), {summary['brokersAffected']:,} broker(s) affected")
        if opts.out is not None:
            with progress.phase(f"impact: write reports to {opts.out}") as phase:
                write_outputs(opts.out, summary, changes, at_risk)
                phase.done("report.md, report.json, report.html, Parquet details")
    log.info("impact of %d cluster(s) computed in %.1fs", len(states), time.monotonic() - started)
    return summary


def _consumers(summary: dict[str, Any], changes: Any, inv: Any, inventory_dir: Path,
               states: dict[str, DesiredState], opts: ImpactOptions, base: Path | None) -> Any:
    """The summary's `consumers` (groups losing unread records, impact/consumers.py), the reason they add to the
    topic changes, and how many topics lower a retention that deletes; returns their rows (or None)."""
    from reconciler.impact.consumers import judge_of, section, with_consumer_reasons
    from reconciler.impact.inventory import read_meta

    summary["consumers"], rows = section(changes, inv, read_meta(inventory_dir),
                                         judge_of(states, _judging_policies(opts, base)))
    with_consumer_reasons(summary)  # a change with groups at risk says so, destructive
    summary["consumers"]["topicsLowered"] = sum(
        r["topics"] for r in summary["byRule"] if r["rule"] in ("retention-lowered", "retention-bytes-lowered"))
    return rows


def _judging_policies(opts: ImpactOptions, base: Path | None) -> Any:
    """The policies that judge the consumers at risk (`maxUnreadLoss`): with --git-base, the base revision's (a
    pull request cannot loosen the rule that judges it, docs/policies.md), else the work tree's; none when they do
    not load (`plan` and `validate` report why)."""
    from reconciler.manifests.policy import load_policies
    from reconciler.policy.model import PolicySet

    root = base if opts.git_base is not None else opts.repo
    if root is None:
        return PolicySet()
    policies, problems = load_policies(root)
    return PolicySet() if any(d.severity == "error" for d in problems) else policies


def _base_policies(opts: ImpactOptions, tmp: Path) -> Path | None:
    """With --git-base: a manifests root holding the base's policy files (what the branch's policy edits are
    compared with), else None."""
    from reconciler.impact.gitbase import write_base_policies

    if opts.git_base is None:
        return None
    root = tmp / "base-policies"
    root.mkdir()
    return root if write_base_policies(opts.repo, opts.git_base, root) else None


def _before(spark: Any, opts: ImpactOptions, states: dict[str, DesiredState], tmp: Path) -> tuple[Path, str]:
    """The inventory directory to read and how the report names it (a given inventory, or a live snapshot)."""
    if opts.inventory is not None:
        return opts.inventory, _inventory_note(opts.inventory)
    from reconciler.impact.snapshot import snapshot

    if states and opts.git_base is not None:  # a pull request: read with the base's settings only (finding 7)
        if opts.trusted_reads is None:
            raise ReconcilerError("impact --git-base without --inventory reads live state: it needs the base's "
                                  "connection settings (the command line gives them)")
        with opts.trusted_reads(states) as (root, trusted):
            if trusted:
                snapshot(spark, trusted, root, tmp)
            else:
                _empty_inventory(spark, tmp)
        return tmp, "live state read with the base revision's connection settings"
    if states:
        snapshot(spark, states, opts.repo, tmp, progress=opts.progress)
    else:
        _empty_inventory(spark, tmp)
    return tmp, "live state read from the clusters"


def _empty_inventory(spark: Any, directory: Path) -> None:
    from reconciler.impact.inventory import write_tables

    write_tables(spark, {"brokers": [], "topics": [], "partitions": [], "configs": []}, directory)


def check_inventory(path: Path) -> None:
    if not path.is_dir():
        raise ReconcilerError(f"inventory {path} is not a directory (make one with `reconciler snapshot`)")
