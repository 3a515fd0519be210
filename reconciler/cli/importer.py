"""`reconciler import`: manifests written from a live cluster, checked to plan with no changes."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reconciler.errors import ExitCode, ReconcilerError

if TYPE_CHECKING:
    from reconciler.cli.context import Context
    from reconciler.importer import Imported
    from reconciler.model import ClusterSpec

_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def default_kafka_version() -> str:
    from reconciler.catalog import load_catalog

    return ".".join(load_catalog().source_version.split(".")[:2])


def run_import(
    obj: Context, cluster: str, target: Target, out: Path, kafka_version: str | None, labels: Sequence[str],
    encoder_secret_env: str | None, include_internal_topics: bool, force: bool,
) -> None:
    from reconciler.importer import ImportSpec, discard, import_cluster, keep, labels_of, read_cluster, source_label
    from reconciler.model import Secret

    if not _NAME.fullmatch(cluster) or cluster in (".", ".."):
        raise ReconcilerError(f"cluster name {cluster!r}: use letters, digits, '.', '_' and '-'")
    if kafka_version is None:
        kafka_version = default_kafka_version()
        click.echo(f"note: --kafka-version not given: assuming {kafka_version}; set spec.kafkaVersion to the "
                   "brokers' version (it selects the config rules)", err=True)
    env = encoder_secret_env or re.sub(r"[^A-Z0-9]", "_", cluster.upper()) + "_ENCODER_SECRET"
    spec_cluster = target.cluster(cluster, kafka_version)
    spec = ImportSpec(cluster, target.block(), kafka_version, labels_of(labels), env, include_internal_topics)
    live = read_cluster(spec_cluster, out)
    source = source_label(spec_cluster)
    if not live.brokers and not live.topics and not live.entities:
        raise ReconcilerError(f"{source} holds no Kafka cluster (no brokers, topics or configs)"
                              + (": check the chroot" if target.connect else ""))
    secret = os.environ.get(env)
    imported = import_cluster(live, spec, out, encoder_secret=Secret(secret) if secret else None, force=force,
                              source=source)
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
    if target.connect and target.auth_env:
        click.echo(f"note: add `auth: {{scheme: digest, credentials: {{env: {target.auth_env}}}}}` under "
                   "spec.zookeeper in cluster.yaml for plan and apply", err=True)


@dataclass(frozen=True)
class Target:
    """Where to import from: a ZooKeeper connect string, or a KRaft cluster's bootstrap servers (its Admin API,
    with the client security cluster.yaml's `kraft:` block takes). `auth_env`: ZooKeeper digest `user:password`,
    or the SASL password."""

    connect: str | None = None
    bootstrap_servers: str | None = None
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    auth_env: str | None = None

    def cluster(self, name: str, kafka_version: str) -> ClusterSpec:
        from reconciler.model import (
            NO_ZOOKEEPER,
            AdminClientSpec,
            ClusterSpec,
            KraftSpec,
            SaslSpec,
            SecretRef,
            ZooKeeperSpec,
        )

        if self.connect is not None:
            return ClusterSpec(name, kafka_version, ZooKeeperSpec(
                self.connect, auth_scheme="digest" if self.auth_env else None,
                auth_credentials=SecretRef(env=self.auth_env) if self.auth_env else None), ())
        assert self.bootstrap_servers is not None
        sasl = (SaslSpec(self.sasl_mechanism, self.sasl_username or "", SecretRef(env=self.auth_env or ""))
                if self.sasl_mechanism else None)
        admin = AdminClientSpec(tuple(s.strip() for s in self.bootstrap_servers.split(",") if s.strip()),
                                self.security_protocol, sasl=sasl)
        return ClusterSpec(name, kafka_version, NO_ZOOKEEPER, (), kraft=KraftSpec(admin), admin=admin)

    def block(self) -> dict[str, Any]:
        """cluster.yaml's connection block for this target (a password only as a secret reference)."""
        if self.connect is not None:
            return {"zookeeper": {"connect": self.connect}}
        kraft: dict[str, Any] = {"bootstrapServers": self.bootstrap_servers}
        if self.security_protocol != "PLAINTEXT":
            kraft["securityProtocol"] = self.security_protocol
        if self.sasl_mechanism:
            kraft["sasl"] = {"mechanism": self.sasl_mechanism, "username": self.sasl_username,
                             "password": {"env": self.auth_env}}
        return {"kraft": kraft}


def target_of(connect: str | None, bootstrap_servers: str | None, security_protocol: str,
              sasl_mechanism: str | None, sasl_username: str | None, auth_env: str | None) -> Target:
    """The command line's target: exactly one of --zookeeper and --bootstrap-servers; SASL complete."""
    if (connect is None) == (bootstrap_servers is None):
        raise click.UsageError("give exactly one of --zookeeper (a ZooKeeper-mode cluster) and "
                               "--bootstrap-servers (a KRaft cluster)")
    if connect is not None and (sasl_mechanism or sasl_username or security_protocol != "PLAINTEXT"):
        raise click.UsageError("--security-protocol and --sasl-* are for --bootstrap-servers (a KRaft cluster)")
    if sasl_mechanism and not (sasl_username and auth_env):
        raise click.UsageError("--sasl-mechanism needs --sasl-username and --auth-env (the variable holding the "
                               "password)")
    if sasl_mechanism and not security_protocol.startswith("SASL_"):
        raise click.UsageError("--sasl-mechanism needs --security-protocol SASL_PLAINTEXT or SASL_SSL")
    return Target(connect, bootstrap_servers, security_protocol, sasl_mechanism, sasl_username, auth_env)


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
@click.option("--zookeeper", "connect", help="host:port[,host:port…][/chroot] of a ZooKeeper-mode cluster.")
@click.option("--bootstrap-servers", help="host:port[,host:port…] of a KRaft cluster's brokers (its Admin API).")
@click.option("--security-protocol", type=click.Choice(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]),
              default="PLAINTEXT", show_default=True, help="With --bootstrap-servers (TLS trusts the system's CAs).")
@click.option("--sasl-mechanism", type=click.Choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
              help="With --bootstrap-servers: SASL login (--sasl-username, password in --auth-env).")
@click.option("--sasl-username", help="With --sasl-mechanism.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Manifests root to write DIR/clusters/CLUSTER/ into (default: --repo).")
@click.option("--kafka-version", help="The brokers' version, e.g. 3.6 (default: the newest the catalog knows).")
@click.option("--label", "labels", multiple=True, help="KEY=VALUE label of the Cluster (repeatable).")
@click.option("--auth-env", help="Environment variable holding user:password for ZooKeeper digest auth, or the "
              "SASL password with --sasl-mechanism.")
@click.option("--encoder-secret-env", help="Environment variable holding the brokers' password.encoder.secret "
              "(default: <CLUSTER>_ENCODER_SECRET); when set, equal passwords are recognised across brokers.")
@click.option("--include-internal-topics", is_flag=True, help="Also declare __consumer_offsets and co.")
@click.option("--force", is_flag=True, help="Replace an existing clusters/CLUSTER/ directory.")
@click.pass_obj
def import_command(obj: Context, cluster: str, connect: str | None, bootstrap_servers: str | None,
                   security_protocol: str, sasl_mechanism: str | None, sasl_username: str | None, out: Path | None,
                   kafka_version: str | None, labels: tuple[str, ...], auth_env: str | None,
                   encoder_secret_env: str | None, include_internal_topics: bool, force: bool) -> None:
    """Write manifests from a live cluster such that `plan` on them shows no changes (adoption)."""
    target = target_of(connect, bootstrap_servers, security_protocol, sasl_mechanism, sasl_username, auth_env)
    run_import(obj, cluster, target, out or obj.repo, kafka_version, labels, encoder_secret_env,
               include_internal_topics, force)
