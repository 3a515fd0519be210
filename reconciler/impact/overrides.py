"""The overrides of the topics the manifests declare, before and after, resolved on the driver.

Only a declared topic's overrides can change: apply makes its config exactly the declared one, except
`policy.ignoreKeys` and the replication throttles (kept unless declared), the plan's ownership rules
(`reconciler.diff`). Undeclared topics keep their live config. The live side comes from the first query
(`facts.declared_live`), the after side from the manifests; both are the size of the manifests, which the
driver holds anyway. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reconciler.impact import keys as K
from reconciler.impact.afterstate import AfterRows, after_apply
from reconciler.impact.brokerside import same


@dataclass
class DeclaredOverrides:
    topics: list[tuple[str, str]] = field(default_factory=list)  # declared (cluster, topic)
    after_values: list[tuple[str, str, str, str]] = field(default_factory=list)  # (cluster, topic, key, value)
    changed: list[tuple[str, str, str, str | None, str | None]] = field(default_factory=list)  # (.., ob, oa)


def declared_overrides(declared_live: Iterable[tuple[Any, ...]], after: AfterRows) -> DeclaredOverrides:
    declared_live = list(declared_live)
    live = {(c, t, k): v for c, t, k, v in declared_live}
    result = after_apply(declared_live, after, "topics", prunable=False)
    lists = set(K.list_keys())
    changed = [(c, t, k, live.get((c, t, k)), result.get((c, t, k)))
               for c, t, k in sorted(set(live) | set(result))
               if not same(live.get((c, t, k)), result.get((c, t, k)), k in lists)]
    return DeclaredOverrides(
        topics=sorted({(c, e) for c, typ, e in after.declared if typ == "topics"}),
        after_values=[(c, t, k, v) for (c, t, k), v in sorted(result.items())],
        changed=changed,
    )
