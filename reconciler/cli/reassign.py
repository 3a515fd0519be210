"""`reconciler reassignments`: the partitions a cluster is reassigning, which of them the reconciler started and
where it throttles (as `kafka-reassign-partitions.sh --list`), and `--cancel` (KIP-455, as `--cancel`)."""

from __future__ import annotations

import json

import click

from reconciler.cli.context import Context
from reconciler.errors import ReconcilerError


def _partition(text: str) -> tuple[str, int]:
    topic, _, number = text.rpartition("-")
    if not topic or not number.isdigit():
        raise click.BadParameter(f"{text!r}: expected TOPIC-PARTITION, e.g. orders-0")
    return topic, int(number)


@click.command("reassignments")
@click.argument("cluster")
@click.option("--cancel", is_flag=True,
              help="Cancel the reassignments the reconciler started (AlterPartitionReassignments without a target, "
                   "KIP-455): each partition goes back to its original replicas; the throttles are removed once "
                   "none of its moves remains. The next apply starts them again unless the manifests change.")
@click.option("--partition", "partitions", multiple=True, metavar="TOPIC-PARTITION",
              help="With --cancel: only these partitions (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_obj
def reassignments(obj: Context, cluster: str, cancel: bool, partitions: tuple[str, ...], fmt: str) -> None:
    """List the partitions being reassigned (and whose), or --cancel the reconciler's."""
    from reconciler.apply import load_apply_settings
    from reconciler.backends import backend_for
    from reconciler.brokers.reassign import reassign_admin
    from reconciler.reassign.record import parse
    from reconciler.reassigning import cancel as cancel_moves

    if partitions and not cancel:
        raise ReconcilerError("--partition goes with --cancel")
    chosen = [_partition(p) for p in partitions] or None
    spec = load_apply_settings(obj.repo, [cluster])[cluster].cluster
    with backend_for(spec).connect(spec, obj.repo) as connection, reassign_admin(spec, obj.repo) as admin:
        if cancel:
            cancelled, problems = cancel_moves(admin, connection, cluster, chosen)
            for m in cancelled:
                click.echo(f"{cluster}: cancelled the reassignment of {m.topic}-{m.partition} (back to "
                           f"{list(m.origin)})", err=True)
            if not cancelled:
                click.echo(f"{cluster}: no reassignment of the reconciler to cancel", err=True)
            if problems:
                raise ReconcilerError(f"cluster {cluster}: --cancel did not finish:\n  " + "\n  ".join(problems))
        record = parse(connection.reassignment_record())
        moving = admin.reassignments()
    rows = [{"topic": m.topic, "partition": m.partition, "replicas": list(m.replicas), "adding": list(m.adding),
             "removing": list(m.removing),
             "startedBy": record.plan_id if record is not None and record.started(m.topic, m.partition, m.target)
             else None} for _, m in sorted(moving.items())]
    if fmt == "json":
        click.echo(json.dumps({"cluster": cluster, "reassignments": rows,
                               "throttled": list(record.entities) if record is not None else []}, indent=2))
        return
    if not rows:
        click.echo("No partition reassignments found.")
    for row in rows:
        whose = f"started by plan {row['startedBy']}" if row["startedBy"] else "not started by the reconciler"
        click.echo(f"{row['topic']}-{row['partition']}: replicas: {row['replicas']} adding: {row['adding']} "
                   f"removing: {row['removing']} ({whose})")
    if record is not None:
        click.echo(f"throttles set by plan {record.plan_id}: {', '.join(record.entities) or 'none'}")
