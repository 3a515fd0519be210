"""`reconciler migrate-check CLUSTER`: before a ZooKeeper → KRaft migration (KIP-866), read the cluster's live
dynamic state as `plan` does and report what the migration will meet (`migrate.report`): passwords the
controllers' secret does not decode (they abort the migration), configs KRaft ignores, quotas it rejects, ACLs
and SCRAM credentials to prepare for, and the cluster.yaml change. Nothing is written. Exit codes as
`plan --detailed-exitcode`: 0 nothing found, 2 findings, 1 error."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.cli.context import Context
from reconciler.errors import ExitCode, ReconcilerError


@click.command("migrate-check")
@click.argument("cluster")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--controller-secret-file", type=click.Path(dir_okay=False, path_type=Path),
              help="A file holding the password.encoder.secret the KRaft controllers will be given "
              "(default: the cluster's passwordEncoder.secret).")
@click.option("--bootstrap-servers", help="The KRaft bootstrap servers, for the cluster.yaml change "
              "(default: spec.adminClient's).")
@click.pass_obj
def migrate_check(obj: Context, cluster: str, fmt: str, controller_secret_file: Path | None,
                  bootstrap_servers: str | None) -> None:
    """Check what a ZooKeeper → KRaft migration will meet in a cluster (passwords, configs, quotas, ACLs)."""
    from reconciler.backend import EVERY_TYPE
    from reconciler.backends import backend_for
    from reconciler.catalog import load_catalog
    from reconciler.migrate.report import migration_report, render_json, render_text
    from reconciler.model import Secret
    from reconciler.secrets.compare import cluster_encoders
    from reconciler.secrets.encoder import EncoderParams, EncodingBoundsError, try_decode
    from reconciler.workflow import load_desired, read_cluster

    states, _ = load_desired(obj.repo, [cluster])
    desired = states[cluster]
    refusal = backend_for(desired.cluster).migration_refusal(desired.cluster)
    if refusal is not None:
        raise ReconcilerError(refusal)
    encoder = desired.cluster.password_encoder
    params: EncoderParams | None
    if controller_secret_file is not None:
        try:
            secret = Secret(controller_secret_file.read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError) as exc:
            raise ReconcilerError(f"--controller-secret-file {controller_secret_file}: cannot read it "
                                  f"({type(exc).__name__})") from None
        params = EncoderParams.from_spec(encoder, secret) if encoder else EncoderParams(secret)
    else:
        encoders = cluster_encoders(desired.cluster, obj.repo)
        params = encoders.current
    catalog = load_catalog()
    live = read_cluster(desired, obj.repo, obj.progress(), entity_types=EVERY_TYPE)  # not only what is managed
    passwords = [(ref, key, value) for ref, entity in live.entities.items() if ref.entity_type == "brokers"
                 for key, value in entity.config.items()
                 if catalog.is_password(key) or catalog.resolve_broker(key, desired.cluster.kafka_version).password]
    if passwords and params is None:
        raise ReconcilerError(f"cluster {cluster}: {len(passwords)} encoded password(s) to check, but no secret: "
                              "give --controller-secret-file or spec.passwordEncoder.secret")
    undecodable = []
    for ref, key, value in passwords:
        assert params is not None
        try:
            decoded = try_decode(value, params)
        except EncodingBoundsError:
            decoded = None
        if decoded is None:
            undecodable.append((ref, key))
    servers = tuple(s.strip() for s in bootstrap_servers.split(",")) if bootstrap_servers else ()
    report = migration_report(desired.cluster, live, catalog, undecodable, len(passwords), servers)
    click.echo(render_json(report) if fmt == "json" else render_text(report), nl=False)
    if not report.clean:
        raise SystemExit(ExitCode.CHANGES)
