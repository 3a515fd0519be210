"""Feature level changes (kind Features, `features/cluster`), rated: every change of a finalized level is
disruptive (kafka-features.sh upgrade / downgrade: every broker and controller switches what it writes and
speaks; a metadata.version upgrade cannot be undone once new metadata was written, Kafka refusing the unsafe
downgrade), and a downgrade says that `apply` needs --allow-downgrade (apply.guard refuses it otherwise)."""

from __future__ import annotations

from reconciler.catalog import Catalog
from reconciler.model import Risk


def feature_risk(catalog: Catalog, version: str | None, key: str, before: str | None,
                 after: str | None) -> tuple[Risk, tuple[str, ...]]:
    feature = catalog.line(version).features.get(key)

    def shown(level: str | None) -> str:
        number = int(level or 0)
        return feature.display(number) if feature is not None else str(number)

    old, new = int(before or 0), int(after or 0)
    if new < old:
        return "disruptive", (f"{key} downgraded from {shown(before)} to {shown(after)}: apply needs "
                              "--allow-downgrade (a SAFE_DOWNGRADE; the controllers refuse one that would lose "
                              "metadata)",)
    what = ("every broker and controller moves to the new metadata version; it cannot be undone once new metadata "
            "is written" if key == "metadata.version" else "every broker and controller switches to the new level")
    return "disruptive", (f"{key} upgraded from {shown(before)} to {shown(after)}: {what}",)


def is_downgrade(before: str | None, after: str | None) -> bool:
    return after is not None and before is not None and int(after) < int(before)
