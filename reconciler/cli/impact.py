"""Fleet impact commands: `snapshot` (live state -> Parquet inventory) and `impact` (blast radius report).

Spark and the impact modules are imported inside
the commands, so other commands never pay for them. stdout carries only the report; logs go to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from reconciler.cli.context import Context

MASTER_HELP = "Spark master of a Spark this process starts: local[*] (in-process, the default), spark://host:port."
REMOTE_HELP = ("A Spark Connect server, sc://host:port (default: $SPARK_REMOTE; checked against "
               "$RECONCILER_SPARK_ALLOWED_REMOTES). Exclusive with --master.")


@click.command()
@click.argument("clusters", nargs=-1)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Inventory directory (Parquet tables; replaced).")
@click.option("--sizes", "sizes_csv", type=click.Path(dir_okay=False, path_type=Path),
              help="Partition sizes CSV: cluster,topic,partition,size_bytes (with a header line).")
@click.option("--parallel", type=click.IntRange(1, 64), default=8, show_default=True,
              help="Clusters read at the same time (one ZooKeeper client each).")
@click.option("--offsets/--no-offsets", default=True, show_default=True,
              help="Also read log and consumer group offsets through the brokers' Admin API (spec.adminClient or "
                   "spec.kraft), for the consumers at risk of a lowered retention.")
@click.option("--master", help=MASTER_HELP)
@click.option("--remote", help=REMOTE_HELP)
@click.pass_obj
def snapshot(obj: Context, clusters: tuple[str, ...], out: Path, sizes_csv: Path | None, parallel: int,
             offsets: bool, master: str | None, remote: str | None) -> None:
    """Read the live state of CLUSTER… (default: every cluster of the manifests) into a Parquet inventory."""
    from reconciler.artefacts import checked_destination
    from reconciler.impact.connect import checked_remote, chosen_master, is_remote
    from reconciler.impact.session import spark_session
    from reconciler.impact.snapshot import snapshot as take
    from reconciler.workflow import load_desired

    out = checked_destination(out, roots=[obj.repo], directory=True)  # never through a symbolic link
    spark_at = chosen_master(master, remote)
    if is_remote(spark_at):
        checked_remote(spark_at)  # refused before ZooKeeper is read
    states, _ = load_desired(obj.repo, clusters)
    with spark_session(spark_at) as spark:  # a Connect server writes the tables: give it the absolute path
        rows = take(spark, states, obj.repo, out.absolute(), sizes_csv=sizes_csv and sizes_csv.absolute(),
                    parallel=parallel, offsets=offsets, progress=obj.progress())
    said = (f", {len(rows['group_offsets'])} committed group offsets of {len(rows['groups'])} groups"
            if "groups" in rows else "")
    click.echo(
        f"snapshot of {len(states)} cluster(s) written to {out}: {len(rows['brokers'])} brokers, "
        f"{len(rows['topics'])} topics, {len(rows['partitions'])} partitions, {len(rows['configs'])} config "
        f"values{said}", err=True,
    )


@click.command()
@click.argument("clusters", nargs=-1)
@click.option("--git-base", help="Only the clusters changed since this revision (e.g. origin/main).")
@click.option("--inventory", type=click.Path(file_okay=False, path_type=Path),
              help="Inventory from `reconciler snapshot` (default: read live from ZooKeeper).")
@click.option("--master", help=MASTER_HELP)
@click.option("--remote", help=REMOTE_HELP)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write report.md/json/html and the Parquet detail tables here.")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json", "html"]), default="markdown",
              show_default=True, help="What to print on stdout.")
@click.option("--full", is_flag=True, help="Evaluate every topic x every topic config (slower, same result).")
@click.pass_obj
def impact(obj: Context, clusters: tuple[str, ...], git_base: str | None, inventory: Path | None,
           master: str | None, remote: str | None, out: Path | None, fmt: str, full: bool) -> None:
    """The blast radius of the manifests: effective config changes per key, risk rule and cluster."""
    from reconciler.artefacts import checked_destination
    from reconciler.impact.connect import chosen_master
    from reconciler.impact.run import ImpactOptions, check_inventory, run_impact

    if out is not None:  # never through a symbolic link of the (pull request's) checkout
        out = checked_destination(out, roots=[obj.repo], directory=True)
    if inventory is not None:
        check_inventory(inventory)
    reads = None
    if git_base is not None and inventory is None:  # live state of a pull request: the base's settings only
        from functools import partial

        from reconciler.gitops.trusted import trusted_reads

        reads = partial(trusted_reads, obj.repo, git_base)
    opts = ImpactOptions(repo=obj.repo, clusters=clusters, git_base=git_base, inventory=inventory,
                         master=chosen_master(master, remote), out=out, full=full, progress=obj.progress(),
                         trusted_reads=reads)
    summary = run_impact(opts)
    if fmt == "json":
        from reconciler.impact.report import render_json

        click.echo(render_json(summary), nl=False)
    elif fmt == "html":
        from reconciler.impact.html import render_html

        click.echo(render_html(summary), nl=False)
    else:
        from reconciler.impact.report import render_markdown

        click.echo(render_markdown(summary), nl=False)
    if out is not None:
        click.echo(f"impact report written to {out}", err=True)
