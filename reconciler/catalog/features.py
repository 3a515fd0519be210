"""Finalized features of a KRaft cluster (KIP-584, KIP-778) as one Kafka line knows them: the levels a feature may
be finalized at, the named levels of `metadata.version`, and what each level requires of the others
(`FeatureVersion.dependencies`, e.g. eligible.leader.replicas.version=1 needs metadata.version >= 4.0-IV1).

Read from `org.apache.kafka.server.common.Feature` and `MetadataVersion` of the line's release (the catalog data's
"features" section, tools/gen_catalog.py). Standard library only."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

METADATA_VERSION = "metadata.version"
_IV = re.compile(r"(\d+\.\d+)-IV(\d+)")


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    minimum: int  # lowest level UpdateFeatures accepts (0 = disabled; metadata.version: MINIMUM_VERSION)
    latest_production: int  # the highest level a production cluster should use (FeatureCommand's default)
    latest_testing: int  # the highest level the release knows (needs unstable.feature.versions.enable beyond)
    requires: Mapping[int, Mapping[str, int]] = field(default_factory=dict)  # level -> {feature: minimum level}
    named: Mapping[str, int] = field(default_factory=dict)  # metadata.version: "4.1-IV1" -> 27

    def level(self, text: str) -> int | None:
        """A level as written in a manifest: a number, or for metadata.version a version name ("4.1-IV1") or a
        release ("4.1": its latest IV, as `MetadataVersion.fromVersionString` and `--release-version` read it)."""
        text = text.strip()
        if text.isdigit() and text.isascii():
            return int(text)
        if text in self.named:
            return self.named[text]
        release = [level for name, level in self.named.items() if name.split("-", 1)[0] == text]
        return max(release) if release else None

    def display(self, level: int) -> str:
        """`27` -> `4.1-IV1 (27)` for metadata.version; other features print the number."""
        for name, value in self.named.items():
            if value == level:
                return f"{name} ({level})"
        return str(level)

    def release_of(self, level: int) -> str | None:
        """metadata.version's release ("4.1") of a level; None for other features or unknown levels."""
        for name, value in self.named.items():
            if value == level and (m := _IV.fullmatch(name)):
                return m.group(1)
        return None


def features_from(data: Mapping[str, Any]) -> dict[str, Feature]:
    out = {}
    for name, e in data.items():
        requires = {int(level): dict(deps) for level, deps in e.get("requires", {}).items()}
        out[name] = Feature(name, e["minimum"], e["latest_production"], e["latest_testing"], requires,
                            dict(e.get("levels", {})))
    return out
