"""`reconciler seal`: a password from stdin, Kafka-encoded with the cluster's encoder, safe to commit."""

from __future__ import annotations

import json
import sys

import click

from reconciler.cli.context import Context
from reconciler.errors import ReconcilerError


@click.command()
@click.argument("cluster")
@click.option("--broker", type=int, help="Seal with this broker's own encoder parameters (its static properties).")
@click.pass_obj
def seal(obj: Context, cluster: str, broker: int | None) -> None:
    """Read a password on stdin; print it Kafka-encoded as {encoded: ...}, safe to commit."""
    from reconciler.model import DEFAULT_ENTITY, EntityRef, Secret
    from reconciler.secrets.compare import encoder_for_cluster
    from reconciler.secrets.encoder import encode
    from reconciler.workflow import load_desired

    states, _ = load_desired(obj.repo, [cluster])
    desired = states[cluster]
    if broker is not None and broker not in desired.cluster.brokers:
        raise ReconcilerError(f"broker {broker} is not one of cluster {cluster}'s brokers")
    ref = EntityRef("brokers", DEFAULT_ENTITY if broker is None else str(broker))
    params = encoder_for_cluster(desired, obj.repo)(ref)
    if params is None:
        raise ReconcilerError(f"cluster {cluster} has no passwordEncoder")
    if sys.stdin.isatty():
        text = click.prompt("password", hide_input=True, confirmation_prompt=True, err=True)
    else:
        text = sys.stdin.read()
        text = text[:-1] if text.endswith("\n") else text  # one trailing newline is the terminator
        text = text[:-1] if text.endswith("\r") else text
    encoded = encode(Secret(text), params)
    click.echo(json.dumps({"encoded": encoded}))
