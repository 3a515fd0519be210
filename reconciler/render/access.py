"""`describe`'s access section: who may do what on a resource, live and once the plan is applied (access.py).

A row per (principal, host, operation) that an ACL entry decides on either side; `—` where none does there
(refused, unless the brokers set allow.everyone.if.no.acl.found and no ACL applies to the resource at all).
Super users (`super.users`) are never asked by the authorizer and do not appear.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.access import Access
from reconciler.render.styled import Block, Table, line

NONE = "—"


@dataclass(frozen=True, slots=True)
class AccessView:
    resource: str  # "Topic:orders"
    live: tuple[Access, ...]
    planned: tuple[Access, ...]

    def rows(self) -> list[tuple[tuple[str, str, str], Access | None, Access | None]]:
        live = {(a.principal, a.host, a.operation): a for a in self.live}
        planned = {(a.principal, a.host, a.operation): a for a in self.planned}
        return [(k, live.get(k), planned.get(k)) for k in sorted(live.keys() | planned.keys())]


def _cell(a: Access | None) -> str:
    return NONE if a is None else f"{a.verdict} ({', '.join(a.because)})"


def _differs(left: Access | None, right: Access | None) -> bool:
    return (left.verdict if left else None) != (right.verdict if right else None)


def access_blocks(view: AccessView) -> list[Block]:
    title = f"{view.resource}: access (Kafka's AclAuthorizer; a Deny wins; super.users are not listed)"
    rows = tuple(
        ((principal, None), (host, None), (operation, None), ("~" if _differs(lv, pl) else "", "differs"),
         (_cell(lv), "muted" if lv is None else None), (_cell(pl), "differs" if _differs(lv, pl) else None))
        for (principal, host, operation), lv, pl in view.rows())
    if not rows:
        return [line(title, "heading"),
                line("no ACL applies, live or in the manifests: refused to all but super.users, unless the "
                     "brokers set allow.everyone.if.no.acl.found")]
    return [Table(("PRINCIPAL", "HOST", "OPERATION", "", "LIVE", "MANIFESTS"), rows, title)]


def _access_json(a: Access | None) -> dict[str, Any] | None:
    return None if a is None else {"verdict": a.verdict, "because": list(a.because)}


def access_json(views: Sequence[AccessView]) -> list[dict[str, Any]]:
    return [{"resource": v.resource,
             "entries": [{"principal": p, "host": h, "operation": o, "live": _access_json(lv),
                          "manifests": _access_json(pl)} for (p, h, o), lv, pl in v.rows()]}
            for v in views]


__all__ = ["AccessView", "access_blocks", "access_json"]
