"""Declared feature levels (kind Features) as a KRaft controller checks an UpdateFeatures request
(`FeatureControlManager.updateFeature`, `QuorumFeatures.reasonNotSupported`, `Feature.validateVersion`):

* the feature must exist in the cluster's Kafka line (`Feature.PRODUCTION_FEATURES`, `MetadataVersion`); one only a
  newer line has needs that release;
* the level must be one the controllers support: metadata.version from `MetadataVersion.MINIMUM_VERSION`, every
  other feature from 0 (disabled), up to the line's latest production level (higher levels need
  `unstable.feature.versions.enable`, for testing only: refused here);
* a level's dependencies (`FeatureVersion.dependencies`, e.g. eligible.leader.replicas.version 1 needs
  metadata.version 4.0-IV1) must hold among the declared levels (an undeclared one is checked against the
  live level at plan time);
* ZooKeeper-mode clusters finalize no metadata.version (their brokers' inter.broker.protocol.version plays that
  part): features are declared for KRaft clusters only.
"""

from __future__ import annotations

import difflib

from reconciler.catalog import METADATA_VERSION, Catalog, Feature
from reconciler.errors import Diagnostic
from reconciler.model import DesiredFeature, DesiredState


def check_features(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    if not state.features:
        return []
    cluster = state.cluster
    if not cluster.is_kraft:
        return [Diagnostic("error", f"feature {f.name}: feature levels are declared for KRaft clusters (spec.kraft) "
                           "only; a ZooKeeper-mode cluster finalizes no metadata.version (its brokers' "
                           "inter.broker.protocol.version plays that part)", f.source, f.name)
                for f in state.features.values()]
    version = cluster.kafka_version
    release = catalog.line(version).source_version
    known = catalog.features(version)
    diags: list[Diagnostic] = []
    for f in state.features.values():
        feature = known.get(f.name)
        if feature is None:
            diags.append(_unknown(catalog, f, version, known))
        elif f.level is None:
            diags.append(Diagnostic("error", f"{f.name} {f.text!r} is not a level of Kafka {release}: write "
                                    f"{_forms(feature)}", f.source, f.name))
        else:
            diags.extend(_range(feature, f, f.level, release))
    diags.extend(_dependencies(state, known))
    return diags


def _unknown(catalog: Catalog, f: DesiredFeature, version: str, known: dict[str, Feature]) -> Diagnostic:
    newer = catalog.feature_since(f.name, version)
    if newer is not None:
        return Diagnostic("error", f"feature {f.name} needs Kafka {newer} or later; this cluster runs {version}",
                          f.source, f.name)
    close = difflib.get_close_matches(f.name, sorted(known), n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]}?" if close else f" (Kafka {version} has: {', '.join(sorted(known))})"
    return Diagnostic("error", f"unknown feature {f.name}{hint}", f.source, f.name)


def _forms(feature: Feature) -> str:
    if feature.named:
        names = list(feature.named)
        release = feature.release_of(feature.latest_production)
        return f"a metadata version ({names[0]} … {names[-1]}), a release such as {release}, or its level number"
    return f"a level from {feature.minimum} to {feature.latest_production}"


def _range(feature: Feature, f: DesiredFeature, level: int, release: str) -> list[Diagnostic]:
    shown = feature.display(level)
    if level < feature.minimum:
        lowest = feature.display(feature.minimum)
        why = " (MetadataVersion.MINIMUM_VERSION)" if f.name == METADATA_VERSION else ""
        return [Diagnostic("error", f"{f.name} {shown} is below {lowest}, the lowest Kafka {release} supports{why}",
                           f.source, f.name)]
    if level > feature.latest_testing:
        return [Diagnostic("error", f"{f.name} {shown} is unknown to Kafka {release} (its highest level is "
                           f"{feature.display(feature.latest_testing)})", f.source, f.name)]
    if level > feature.latest_production:
        return [Diagnostic("error", f"{f.name} {shown} is not production-ready in Kafka {release}: its latest "
                           f"production level is {feature.display(feature.latest_production)} (controllers refuse "
                           "higher levels unless unstable.feature.versions.enable, which is for testing only)",
                           f.source, f.name)]
    return []


def _dependencies(state: DesiredState, known: dict[str, Feature]) -> list[Diagnostic]:
    diags = []
    for f in state.features.values():
        feature = known.get(f.name)
        if feature is None or f.level is None:
            continue
        for other, minimum in sorted(feature.requires.get(f.level, {}).items()):
            declared = state.features.get(other)
            if declared is None or declared.level is None or declared.level >= minimum:
                continue  # undeclared: checked against the live level at plan time
            need = known[other].display(minimum) if other in known else str(minimum)
            diags.append(Diagnostic("error", f"{f.name} {f.level} needs {other} {need} or higher "
                                    f"(FeatureVersion.dependencies; the controllers refuse it), but {other} is "
                                    f"declared {declared.text} at {declared.source}", f.source, f.name))
    return diags
