"""`reconciler version` and `reconciler --version`: the tool's version and the Kafka versions it knows."""

from __future__ import annotations

from typing import Any

import click

DISTRIBUTION = "kafka-reconciler"


def known_releases() -> tuple[str, ...]:
    """The Kafka releases a cluster's `kafkaVersion` may name: every major.minor from the catalog's oldest
    release (2.0) to the release its ConfigDefs were read from (3.9, the last with ZooKeeper mode), as the
    catalog's MetadataVersion list has them, then the 4.x releases (KRaft only, the configs 4.0 removed known)."""
    from reconciler.catalog import BASE_RELEASE, load_catalog, version_tuple

    catalog = load_catalog()
    low, high = version_tuple(BASE_RELEASE)[:2], version_tuple(catalog.source_version)[:2]
    releases = {version_tuple(v.split("-", 1)[0])[:2] for v in catalog.metadata_versions}
    zookeeper_era = tuple(".".join(map(str, r)) for r in sorted(r for r in releases if low <= r <= high))
    return zookeeper_era + catalog.kraft_only_releases  # 4.x: KRaft clusters only (spec.kraft)


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError  # 10-15 ms to import: only for --version
    from importlib.metadata import version as package_version

    from reconciler.catalog import load_catalog

    try:
        tool = package_version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that was never installed
        tool = "unknown (not installed)"
    releases = known_releases()
    return (
        f"{DISTRIBUTION} {tool}\n"
        f"Kafka versions (spec.kafkaVersion): {', '.join(releases)}\n"
        f"config catalog: Kafka {load_catalog().source_version}'s ConfigDefs (keys newer than a cluster's "
        "kafkaVersion do not exist for it; 4.x: less the configs Kafka 4.0 removed, KRaft clusters only)\n"
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
