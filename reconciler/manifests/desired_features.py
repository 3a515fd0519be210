"""Features documents -> the finalized feature levels a KRaft cluster should have (`DesiredState.features`).

A level is written as kafka-features.sh takes it: an integer, or for metadata.version a version name ("4.1-IV1")
or a release ("4.1", its latest metadata version: `MetadataVersion.fromVersionString`, `--release-version`). It is
resolved with the cluster's own Kafka line (`Catalog.features`); what the line does not know is left unresolved
for the rules to explain (rules/features.py). A feature declared by two documents is an error at both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.manifests.desired_parts import Declared
from reconciler.manifests.load import Document
from reconciler.model import FEATURES_ENTITY, DesiredFeature, DesiredValue, EntityRef, frozen_map


def build_features(documents: Sequence[Document], catalog: Catalog, version: str, declared: Declared,
                   diags: list[Diagnostic]) -> Mapping[str, DesiredFeature]:
    """The declared levels (`DesiredState.features`, for the rules), and the config entity `features/cluster`
    whose keys are the features with a resolved level (what diff, plan, apply and verify handle)."""
    known = catalog.features(version)
    found: dict[str, DesiredFeature] = {}
    for doc in documents:
        if doc.data.get("kind") != "Features":
            continue
        for name, raw in ((doc.data.get("spec") or {}).get("features") or {}).items():
            name = str(name)
            source = doc.mark(("spec", "features", name))
            if name in found:
                diags.append(Diagnostic("error", f"feature {name} is declared twice (first at {found[name].source}); "
                                        "keep one declaration", source, name))
                continue
            text = str(raw)
            feature = known.get(name)
            found[name] = DesiredFeature(name, text, feature.level(text) if feature else None, source)
    levels = {f.name: DesiredValue(str(f.level), f.source) for f in found.values() if f.level is not None}
    if levels:
        first = min((f.source for f in found.values() if f.source is not None), default=None)
        declared.add_entity(EntityRef("features", FEATURES_ENTITY), levels, first, diags)
    return frozen_map(found)
