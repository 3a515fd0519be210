"""Plans as stable JSON for tools: `{"formatVersion": 1, "plans": [...], "summary": {...}}`.

Each plan is `plan.plan_to_dict`, so `plan.plans_from_json` reads the document back. Two forms:
* `render_json` is the *view* (`--format json`, stdout, CI logs): sealed (Kafka-encoded) secret values are
  left out (`"secret": null`) and sensitive before/after are always null, like every other renderer. A plan
  that lost a sealed value keeps its original `planId`, which then no longer matches its content, so
  `plans_from_json` refuses to apply it instead of applying it without its secret.
* `render_plan_file` is the *artefact* `apply` executes (`--out`): the same document with the secret
  references apply must resolve (env/file names and sealed values, which are ciphertext and safe to commit,
  never plaintext).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from reconciler.plan import FORMAT_VERSION, Change, Plan, plan_to_dict
from reconciler.render.common import all_totals, plan_totals


def _safe(c: Change) -> Change:
    if not c.sensitive and c.secret is None:
        return c
    secret = c.secret if c.secret is not None and c.secret.encoded is None else None
    return replace(c, before=None, after=None, secret=secret)


def redacted(plan: Plan) -> Plan:
    """The plan as it may be shown: no sealed values, no sensitive values (plan id kept as it was)."""
    if not any(c.sensitive or c.secret is not None for e in plan.entities for c in e.changes):
        return plan
    entities = tuple(replace(e, changes=tuple(_safe(c) for c in e.changes)) for e in plan.entities)
    return replace(plan, entities=entities)


def summary_dict(plans: Sequence[Plan]) -> dict[str, Any]:
    t = all_totals(plans)
    return {
        "clusters": len(plans),
        "clustersWithChanges": sum(1 for p in plans if plan_totals(p).units),
        "add": t.add,
        "change": t.change,
        "remove": t.remove,
        "topicsToCreate": t.topics,
        "partitionsToAdd": t.partitions,
        "destructive": t.destructive,
        "disruptive": t.disruptive,
        "maxRisk": t.max_risk,
    }


def _document(plans: Sequence[Plan], view: bool) -> str:
    doc = {
        "formatVersion": FORMAT_VERSION,
        "plans": [plan_to_dict(redacted(p) if view else p) for p in plans],
        "summary": summary_dict(plans),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render_json(plans: Sequence[Plan]) -> str:
    """The JSON view: never contains a sealed value."""
    return _document(plans, view=True)


def render_plan_file(plans: Sequence[Plan]) -> str:
    """The plan file for `apply` (`--out`): the same shape, with the secret references apply resolves."""
    return _document(plans, view=False)
