"""Risk of a plan's replica moves (reconciler/reassign/), decided by a table of rules (PURE).

A reassignment is disruptive at least: every new replica copies its partition from the leader, which competes with
producers and consumers for disk and network (the throttle bounds it, and the reason says how much and for how
long), and a partition whose preferred leader changes moves its leadership once the new preferred leader is elected.
It is destructive when a topic ends with fewer replicas than its `min.insync.replicas`: producers with acks=all then
fail with NotEnoughReplicas (the same judgement as risk's `above_rf` for a config change).

`REASSIGN_RULES` is data, as `risk.RISK_RULES`: one row per rule, read by `rate_reassignment`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from reconciler.model import RISK_ORDER, Risk
from reconciler.plan import Reassignment
from reconciler.reassign.traffic import bytes_text, duration_text, estimated_seconds, rate_text, traffic
from reconciler.units import counted, parse_int

MinIsr = Callable[[str], str | None]  # topic -> its effective min.insync.replicas once the plan is applied


@dataclass(frozen=True, slots=True)
class Moves:
    """What the rules read: the reassignment, and each topic's effective min.insync.replicas."""

    reassignment: Reassignment
    min_isr: MinIsr


@dataclass(frozen=True, slots=True)
class ReassignRule:
    id: str
    risk: Risk
    reasons: Callable[[Moves], list[str]]


def _copy(m: Moves) -> list[str]:
    r = m.reassignment
    moving = [mv for mv in r.moves if mv.adding]
    if not moving:
        return []
    t = traffic(moving)
    size = f"{bytes_text(t.total)} copied" if not t.unknown else (
        f"{bytes_text(t.total)} copied and {counted(t.unknown, 'partition', 'partitions')} of unknown "
        "size" if t.total else "sizes unknown")
    rate = rate_text(r.throttle)
    line = (f"replication traffic: {counted(len(moving), 'partition', 'partitions')} gain replicas, {size}, "
            f"throttled at {rate} on {counted(len(t.brokers), 'broker', 'brokers')}")
    if t.total:
        line += f" (at least {duration_text(estimated_seconds(t, r.throttle))} at that rate)"
    return [line]


def _leaders(m: Moves) -> list[str]:
    changed = [mv for mv in m.reassignment.moves if mv.current and mv.target and mv.current[0] != mv.target[0]]
    if not changed:
        return []
    return [f"preferred leader changes for {counted(len(changed), 'partition', 'partitions')}: leadership moves "
            "when the new preferred leader is elected (auto.leader.rebalance.enable, kafka-leader-election.sh)"]


def _below_min_isr(m: Moves) -> list[str]:
    out = []
    seen: set[str] = set()
    for mv in m.reassignment.moves:
        if mv.topic in seen or len(mv.target) >= len(mv.current):
            continue
        wanted = parse_int(m.min_isr(mv.topic) or "", 32)
        if wanted is not None and len(mv.target) < wanted:
            seen.add(mv.topic)
            out.append(f"topic {mv.topic}: replication factor lowered to {len(mv.target)}, below its "
                       f"min.insync.replicas={wanted}: producers with acks=all fail with NotEnoughReplicas")
    return out


def _lowered(m: Moves) -> list[str]:
    lowered = sorted({mv.topic for mv in m.reassignment.moves if len(mv.target) < len(mv.current)})
    return [f"replication factor lowered for {counted(len(lowered), 'topic', 'topics')} "
            f"({', '.join(lowered[:5])}{' …' if len(lowered) > 5 else ''}): fewer copies of every record"] \
        if lowered else []


REASSIGN_RULES: tuple[ReassignRule, ...] = (
    ReassignRule("reassign-below-min-isr", "destructive", _below_min_isr),
    ReassignRule("reassign-traffic", "disruptive", _copy),
    ReassignRule("reassign-leaders", "disruptive", _leaders),
    ReassignRule("reassign-rf-lowered", "disruptive", _lowered),
)


def rate_reassignment(r: Reassignment, min_isr: MinIsr) -> Reassignment:
    """`r` with its risk and reasons: the most severe rule that fires (disruptive at least: moves copy data and a
    leftover throttle still limits replication until it is removed)."""
    moves = Moves(r, min_isr)
    risk: Risk = "disruptive"
    reasons: list[str] = []
    for rule in REASSIGN_RULES:
        found = rule.reasons(moves)
        if found:
            risk = max(risk, rule.risk, key=RISK_ORDER.__getitem__)
            reasons.extend(found)
    if not r.moves and r.leftover:
        reasons.append(f"replication throttles left by plan {r.started_by} are removed from "
                       f"{', '.join(r.leftover[:5])}{' …' if len(r.leftover) > 5 else ''}")
    if (risk, tuple(reasons)) == (r.risk, r.reasons):
        return r
    return replace(r, risk=risk, reasons=tuple(reasons))
