"""`reconciler version` and `reconciler --version`: the tool's version and the Kafka versions it knows."""

from __future__ import annotations

from typing import Any

import click

DISTRIBUTION = "kafka-reconciler"


def known_releases() -> tuple[str, ...]:
    """The Kafka releases a cluster's `kafkaVersion` may name (`Catalog.supported_releases`): 2.0-3.9 judged by the
    3.9 line's ConfigDefs (keys newer than the cluster's release hidden), then each 4.x line (KRaft only)."""
    from reconciler.catalog import load_catalog

    return load_catalog().supported_releases()


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError  # 10-15 ms to import: only for --version
    from importlib.metadata import version as package_version

    from reconciler.catalog import load_catalog

    try:
        tool = package_version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that was never installed
        tool = "unknown (not installed)"
    catalog = load_catalog()
    lines = ", ".join(f"{line} (Kafka {catalog.releases[line]}'s ConfigDefs)" for line in catalog.lines)
    return (
        f"{DISTRIBUTION} {tool}\n"
        f"Kafka versions (spec.kafkaVersion): {', '.join(known_releases())}\n"
        f"config catalogs, one per Kafka line: {lines}; 2.x-3.8 are judged by the 3.9 line without the keys "
        "newer than their release; 4.x clusters are KRaft clusters (spec.kraft)\n"
    )


def print_version(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
    """The eager `--version` flag of the group."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(version_text(), nl=False)
    ctx.exit()


@click.command()
def version() -> None:
    """Print the tool's version and the Kafka versions it knows (same as --version)."""
    click.echo(version_text(), nl=False)
