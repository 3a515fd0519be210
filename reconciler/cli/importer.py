"""`reconciler import`: manifests written from a live cluster, checked to plan with no changes."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.errors import ExitCode, ReconcilerError

if TYPE_CHECKING:
    from reconciler.cli.context import Context
    from reconciler.importer import Imported

_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def default_kafka_version() -> str:
    from reconciler.catalog import load_catalog

    return ".".join(load_catalog().source_version.split(".")[:2])


def run_import(
    obj: Context, cluster: str, connect: str, out: Path, kafka_version: str | None, labels: Sequence[str],
    auth_env: str | None, encoder_secret_env: str | None, include_internal_topics: bool, force: bool,
) -> None:
    from reconciler.importer import ImportSpec, discard, import_cluster, keep, labels_of, read_cluster
    from reconciler.model import Secret, SecretRef, ZooKeeperSpec
    from reconciler.secrets.refs import resolve_optional
    from reconciler.zk.session import session

    if not _NAME.fullmatch(cluster) or cluster in (".", ".."):
        raise ReconcilerError(f"cluster name {cluster!r}: use letters, digits, '.', '_' and '-'")
    if kafka_version is None:
        kafka_version = default_kafka_version()
        click.echo(f"note: --kafka-version not given: assuming {kafka_version}; set spec.kafkaVersion to the "
                   "brokers' version (it selects the config rules)", err=True)
    env = encoder_secret_env or re.sub(r"[^A-Z0-9]", "_", cluster.upper()) + "_ENCODER_SECRET"
    spec = ImportSpec(cluster, connect, kafka_version, labels_of(labels), env, include_internal_topics)
    zk = ZooKeeperSpec(connect, auth_scheme="digest" if auth_env else None,
                       auth_credentials=SecretRef(env=auth_env) if auth_env else None)
    credentials = resolve_optional(zk.auth_credentials, out)
    with session(zk, credentials) as client:
        live = read_cluster(client, cluster)
    if not live.brokers and not live.topics and not live.entities:
        raise ReconcilerError(f"ZooKeeper {connect} holds no Kafka cluster (no brokers, topics or configs): "
                              "check the chroot")
    secret = os.environ.get(env)
    imported = import_cluster(live, spec, out, encoder_secret=Secret(secret) if secret else None, force=force)
    try:
        _report(imported, env)
    except BaseException:  # the check failed: no files are left behind (a replaced directory comes back)
        discard(imported)
        click.echo(f"import of {cluster} removed: {imported.directory} is as it was before", err=True)
        raise
    keep(imported)
    for note in imported.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"imported {cluster} into {imported.directory}: {', '.join(imported.files)}", err=True)
    if auth_env:
        click.echo(f"note: add `auth: {{scheme: digest, credentials: {{env: {auth_env}}}}}` under "
                   "spec.zookeeper in cluster.yaml for plan and apply", err=True)


def _report(imported: Imported, env: str) -> None:
    """What the self-check found: nothing (exit 0), only passwords it could not compare (a warning), or
    residual changes (exit 1)."""
    from reconciler.importer import describe_residual, sensitive_unknown

    problems = [d for d in imported.diagnostics if d.severity == "error"]
    if imported.residual is None:
        for d in problems:
            click.echo(d.render(), err=True)
        raise ReconcilerError(f"the imported manifests do not validate ({len(problems)} error(s)); fix them "
                              "before planning (or report this: import should always validate)")
    residual = describe_residual(imported.residual)
    blind = sensitive_unknown(imported.residual)
    if blind and blind == len(residual):
        click.echo(f"warning: {blind} password(s) could not be compared: set {env} (the brokers' "
                   "password.encoder.secret) to check them; everything else matches", err=True)
        return
    if residual:
        click.echo("error: a plan on the imported manifests would still change:", err=True)
        for line in residual[:50]:
            click.echo(f"  {line}", err=True)
        raise SystemExit(ExitCode.ERROR)
    click.echo("checked: a plan on the imported manifests shows no changes", err=True)


@click.command("import")
@click.argument("cluster")
@click.option("--zookeeper", "connect", required=True, help="host:port[,host:port…][/chroot] of the cluster.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Manifests root to write DIR/clusters/CLUSTER/ into (default: --repo).")
@click.option("--kafka-version", help="The brokers' version, e.g. 3.6 (default: the newest the catalog knows).")
@click.option("--label", "labels", multiple=True, help="KEY=VALUE label of the Cluster (repeatable).")
@click.option("--auth-env", help="Environment variable holding user:password for ZooKeeper digest auth.")
@click.option("--encoder-secret-env", help="Environment variable holding the brokers' password.encoder.secret "
              "(default: <CLUSTER>_ENCODER_SECRET); when set, equal passwords are recognised across brokers.")
@click.option("--include-internal-topics", is_flag=True, help="Also declare __consumer_offsets and co.")
@click.option("--force", is_flag=True, help="Replace an existing clusters/CLUSTER/ directory.")
@click.pass_obj
def import_command(obj: Context, cluster: str, connect: str, out: Path | None, kafka_version: str | None,
                   labels: tuple[str, ...], auth_env: str | None, encoder_secret_env: str | None,
                   include_internal_topics: bool, force: bool) -> None:
    """Write manifests from a live cluster such that `plan` on them shows no changes (adoption)."""
    run_import(obj, cluster, connect, out or obj.repo, kafka_version, labels, auth_env, encoder_secret_env,
               include_internal_topics, force)
