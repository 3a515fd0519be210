"""Manifests on disk -> validated desired states: load, schema, build, Kafka's rules; every problem at once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reconciler.catalog import load_catalog
from reconciler.errors import Diagnostic
from reconciler.manifests.desired import build_desired
from reconciler.manifests.repo import Repository, discover
from reconciler.model import DesiredState
from reconciler.rules import validate


def load_and_validate(
    root: Path, clusters: Sequence[str] = ()
) -> tuple[Repository, dict[str, DesiredState], list[Diagnostic]]:
    repo, diags = discover(root, clusters)
    catalog = load_catalog()
    states: dict[str, DesiredState] = {}
    for name, sources in repo.clusters.items():
        state, problems = build_desired(repo, sources, catalog)
        diags.extend(problems)
        if state is not None:
            diags.extend(validate(state, catalog))
            states[name] = state
    return repo, states, sorted(set(diags), key=Diagnostic.sort_key)
