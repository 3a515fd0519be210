"""What a reviewer must read before approving, gathered from every plan: the warnings and the unmanaged entities.

The PR comment shows them in one section near its top (`render.markdown`), as blocks ordered by severity: a
block carries its rank, so a more severe kind added later (topics to delete) goes above the others by its rank
alone. Warnings are merged: the same message found for several brokers, at several manifest lines or in several
clusters is one item naming them all (a listener's change on twelve brokers is one warning, not twelve).
Pure; the items hold plain text, escaped by the renderer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.errors import Diagnostic, clip
from reconciler.plan import Plan, TopicDelete
from reconciler.render.md_text import code, plain

# Ranks: lower is more severe, shown first. Room is left above warnings for kinds that lose data.
RANK_DELETIONS = 0
RANK_GRANTS = 5  # ACL changes that grant broad access (risk/acls.py)
RANK_ACCESS = 10  # ACL changes that take access away from principals
RANK_WARNINGS = 20
RANK_UNMANAGED = 40
ICON = {"deletions": "🛑", "grants": "🔓", "access": "🔒", "warnings": "⚠️", "unmanaged": "ℹ️"}
WARNINGS_SHOWN = 40  # merged warnings listed; the rest are counted
SOURCES_SHOWN = 5  # manifest lines named per warning
NAMES_SHOWN = 20  # unmanaged entities named per cluster
CLUSTERS_SHOWN = 30  # clusters listed with their unmanaged entities
MESSAGE_CHARS = 600  # of one warning in the comment (the plan file keeps it whole)

# "broker 7", "brokers 1, 2", "broker(s) 1, 2, 3": where a message names the brokers it concerns
_BROKERS = re.compile(r"\bbroker(?:\(s\)|s)? (\d+(?:, \d+)*)\b")
_SLOT = "\x00"


@dataclass(frozen=True, slots=True)
class MergedWarning:
    """One warning, merged: its text names every broker it was found for; where and in which clusters."""

    message: str
    key: str | None
    sources: tuple[str, ...]  # `file:line` of each manifest line it was found at, in order
    clusters: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unmanaged:
    cluster: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Block:
    rank: int
    kind: str  # "deletions", "warnings", "unmanaged"
    count: int
    warnings: tuple[MergedWarning, ...] = ()
    unmanaged: tuple[Unmanaged, ...] = ()
    deletions: tuple[tuple[str, TopicDelete], ...] = ()  # (cluster, topic to delete)
    access: tuple[tuple[str, str], ...] = ()  # (cluster, reason: a principal that loses access)


def _template(message: str) -> tuple[str, frozenset[int]]:
    """The message with its broker list taken out, and the brokers; unchanged (no brokers) when it names
    different broker lists in different places, which cannot be merged into one."""
    found: list[frozenset[int]] = []

    def take(m: re.Match[str]) -> str:
        found.append(frozenset(int(b) for b in m.group(1).split(", ")))
        return _SLOT

    template = _BROKERS.sub(take, message)
    if not found or len(set(found)) > 1:
        return message, frozenset()
    return template, found[0]


def _with_brokers(template: str, brokers: frozenset[int]) -> str:
    if not brokers:
        return template
    ids = sorted(brokers)
    named = f"broker {ids[0]}" if len(ids) == 1 else "brokers " + ", ".join(map(str, ids))
    return template.replace(_SLOT, named)


def _where(d: Diagnostic) -> str | None:
    return None if d.source is None else f"{d.source.file}:{d.source.line}"


def merged_warnings(plans: Sequence[Plan]) -> list[MergedWarning]:
    """Every plan's warnings (`Plan.warnings` and `Plan.diagnostics`), identical ones merged, in the order
    first found (a plan's diagnostics in source order, then its other warnings)."""
    groups: dict[tuple[str, str | None], tuple[set[int], list[str], list[str]]] = {}
    for plan in plans:
        found = [*plan.diagnostics, *(Diagnostic("warning", w) for w in plan.warnings)]
        for d in found:
            template, brokers = _template(d.message)
            ids, sources, clusters = groups.setdefault((template, d.key), (set(), [], []))
            ids.update(brokers)
            where = _where(d)
            if where is not None and where not in sources:
                sources.append(where)
            if plan.cluster not in clusters:
                clusters.append(plan.cluster)
    return [MergedWarning(_with_brokers(template, frozenset(ids)), key, tuple(sources), tuple(clusters))
            for (template, key), (ids, sources, clusters) in groups.items()]


def attention(plans: Sequence[Plan]) -> list[Block]:
    """The blocks of the section, most severe first; empty when there is nothing to say."""
    blocks: list[Block] = []
    deletions = tuple((p.cluster, t) for p in plans for t in p.topics_to_delete)
    if deletions:
        blocks.append(Block(RANK_DELETIONS, "deletions", len(deletions), deletions=deletions))
    grants = tuple((p.cluster, f"{a.grant_risk}: {reason}") for p in plans for a in p.acls
                   for reason in a.grant_reasons)
    if grants:
        blocks.append(Block(RANK_GRANTS, "grants", len(grants), access=grants))
    access = tuple((p.cluster, reason) for p in plans for a in p.acls for reason in a.losing_reasons)
    if access:
        blocks.append(Block(RANK_ACCESS, "access", len(access), access=access))
    warnings = merged_warnings(plans)
    if warnings:
        blocks.append(Block(RANK_WARNINGS, "warnings", len(warnings), warnings=tuple(warnings)))
    unmanaged = tuple(Unmanaged(p.cluster, (*p.unmanaged, *(f"acl {a}" for a in p.unmanaged_acls)))
                      for p in plans if p.unmanaged or p.unmanaged_acls)
    if unmanaged:
        count = sum(len(u.names) for u in unmanaged)
        blocks.append(Block(RANK_UNMANAGED, "unmanaged", count, unmanaged=unmanaged))
    return sorted(blocks, key=lambda b: b.rank)


def _warning_line(w: MergedWarning, several: bool) -> str:
    where = [code(s) for s in w.sources[:SOURCES_SHOWN]]
    where += [f"… and {len(w.sources) - SOURCES_SHOWN} more lines"] if len(w.sources) > SOURCES_SHOWN else []
    head = f"{', '.join(code(c) for c in w.clusters)}: " if several else ""
    tail = [code(w.key)] if w.key else []
    tail += [", ".join(where)] if where else []
    return f"- {head}{plain(clip(w.message, MESSAGE_CHARS))}" + (f" · {' · '.join(tail)}" if tail else "")


def _block_lines(block: Block, several: bool) -> list[str]:
    if block.kind == "deletions":
        lines = [f"**{ICON['deletions']} Topics to DELETE ({block.count}): every record they hold is lost**"]
        for cluster, t in block.deletions:
            lines.append(f"- {code(cluster)} {code(t.name)}: {t.partitions} partitions × {t.replication_factor} "
                         f"replicas, named by policy.deleteTopics {code(t.matched)}")
        return [*lines, ""]
    if block.kind in ("access", "grants"):
        lines = [f"**{ICON['access']} Access removed ({block.count}): these principals lose access when this "
                 "is applied**"] if block.kind == "access" else [
            f"**{ICON['grants']} Broad access granted ({block.count}): who may do what on many resources at once**"]
        lines += [f"- {code(cluster)}: {plain(clip(reason, MESSAGE_CHARS))}"
                  for cluster, reason in block.access[:WARNINGS_SHOWN]]
        if block.count > WARNINGS_SHOWN:
            lines.append(f"- … and {block.count - WARNINGS_SHOWN} more (see the plan artifact)")
        return [*lines, ""]
    if block.kind == "warnings":
        lines = [f"**{ICON['warnings']} Warnings ({block.count})**"]
        lines += [_warning_line(w, several) for w in block.warnings[:WARNINGS_SHOWN]]
        if block.count > WARNINGS_SHOWN:
            lines.append(f"- … and {block.count - WARNINGS_SHOWN} more (see the plan artifact)")
        return [*lines, ""]
    lines = [f"**{ICON['unmanaged']} Unmanaged ({block.count}): live entities no manifest declares, left as "
             "they are** (removing a topic from the manifests does not delete it)"]
    for u in block.unmanaged[:CLUSTERS_SHOWN]:
        names = ", ".join(code(n) for n in u.names[:NAMES_SHOWN])
        more = f" … and {len(u.names) - NAMES_SHOWN} more" if len(u.names) > NAMES_SHOWN else ""
        lines.append(f"- {code(u.cluster)} ({len(u.names)}): {names}{more}")
    if len(block.unmanaged) > CLUSTERS_SHOWN:
        lines.append(f"- … and {len(block.unmanaged) - CLUSTERS_SHOWN} more clusters (see the plan artifact)")
    return [*lines, ""]


def attention_markdown(plans: Sequence[Plan]) -> list[str]:
    """The section as Markdown lines (manifest- and broker-derived text escaped); empty when nothing to say."""
    blocks = attention(plans)
    if not blocks:
        return []
    lines = [f"### {ICON[blocks[0].kind]} Before you approve", ""]
    for block in blocks:
        lines += _block_lines(block, len(plans) > 1)
    return lines
