"""Finalized feature levels of a KRaft cluster through its Admin API, as kafka-features.sh (`FeatureCommand`) reads
and writes them: DescribeFeatures (the brokers' ApiVersions answer: each supported feature and, when finalized, its
level) and UpdateFeatures (sent to the active controller; `validateOnly` first).

Live, the features are one config entity `features/cluster` whose keys are every feature the cluster supports and
whose values are the finalized levels ("0": supported, not finalized), so diff, plan, render and drift treat them
like any config. A plan's change of a level is an UpdateFeatures: an upgrade (UpgradeType UPGRADE), or, when the
level goes down, a SAFE_DOWNGRADE, which `apply` sends only with --allow-downgrade (apply.guard) and the controller
refuses when metadata would be lost (an UNSAFE_DOWNGRADE is never sent)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.kraft.admin import KraftAdmin, Refusal
from reconciler.model import FEATURES_ENTITY, EntityRef, LiveEntity, frozen_map
from reconciler.plan import Plan

UPGRADE, SAFE_DOWNGRADE = 1, 2  # UpdateFeaturesRequest.FeatureUpdateKey.UpgradeType
REF = EntityRef("features", FEATURES_ENTITY)


@dataclass(frozen=True, slots=True)
class LevelUpdate:
    feature: str
    level: int
    downgrade: bool


def finalized_levels(admin: KraftAdmin) -> dict[str, int]:
    """Every supported feature with its finalized maximum level (0 when it is not finalized)."""
    described = admin._admin.describe_features()
    return {str(name): int(info["finalized"][1]) if "finalized" in info else 0
            for name, info in described.items() if "supported" in info or "finalized" in info}


def live_entity(levels: dict[str, int]) -> LiveEntity:
    return LiveEntity(REF, frozen_map({name: str(level) for name, level in levels.items()}), 0)


def updates(plan: Plan) -> list[LevelUpdate]:
    out = []
    for entity in plan.entities:
        if entity.ref.entity_type != "features":
            continue
        for change in entity.changes:
            if change.op == "-" or change.after is None:
                continue  # diff never removes a level (undeclared levels are left as they are)
            before = int(change.before) if change.before is not None else 0
            out.append(LevelUpdate(change.key, int(change.after), int(change.after) < before))
    return out


def update_features(admin: KraftAdmin, wanted: Sequence[LevelUpdate], validate_only: bool) -> list[Refusal]:
    """One UpdateFeatures with every level (the controller applies them together or refuses them all)."""
    if not wanted:
        return []
    request = {u.feature: (SAFE_DOWNGRADE if u.downgrade else UPGRADE, u.level) for u in wanted}
    try:
        answer = admin._admin.update_features(request, validate_only=validate_only)
    except Exception as exc:  # kafka-python raises the controller's top-level error: every level is refused
        message = _controller_message(getattr(exc, "message", None) or str(exc))
        return [Refusal(name, type(exc).__name__, message) for name in sorted(request)]
    return [Refusal(name, "refused", str(result)) for name, result in sorted(answer.items()) if result != "OK"]


def _controller_message(text: str) -> str:
    """The controller's own error_message out of kafka-python's exception text (which repeats the request)."""
    marker = "error_message='"
    if marker in text:
        return text.split(marker, 1)[1].split("')", 1)[0]
    return text
