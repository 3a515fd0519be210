"""Render a 10,000-change plan with every renderer; print the median of 5 runs (target: well under 0.5 s).

    .venv/bin/python bench/render_10k.py [--changes N] [--runs R]

The plan mixes every change kind: 100 topics x ~95 key changes (set/change/remove, risky and safe, with
sources), sensitive broker changes, 200 topic creations and 100 partition increases, 1,000 unmanaged names.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

from reconciler.cli.console import ansi_text
from reconciler.model import EntityRef, SecretRef, SourceRef
from reconciler.plan import Change, EntityPlan, PartitionIncrease, Plan, TopicCreate
from reconciler.render.json import render_json
from reconciler.render.markdown import render_markdown
from reconciler.render.text import plan_lines, render_text


def build_plan(n: int) -> Plan:
    changes: list[Change] = []
    for i in range(n - 50):
        op = "+~-"[i % 3]
        src = SourceRef(f"clusters/big/topics-{i // 1000}.yaml", i % 1000 + 1)
        risky = i % 7 == 0
        changes.append(Change(
            key=f"retention.ms.{i:05d}" if risky else f"segment.bytes.{i:05d}",
            op=op,  # type: ignore[arg-type]
            before=None if op == "+" else "604800000",
            after=None if op == "-" else "86400000",
            risk="destructive" if risky else "safe",
            reasons=("retention lowered from 7d to 1d: data older than 1d is deleted",) if risky else (),
            source=src,
        ))
    entities = [
        EntityPlan(EntityRef("topics", f"topic-{j:03d}"), j, tuple(changes[j::100])) for j in range(100)
    ]
    secrets = tuple(
        Change(f"listener.name.l{i}.ssl.keystore.password", "~", sensitive=True, redacted="changed",
               secret=SecretRef(encoded="ENC"), risk="disruptive", reasons=("sensitive value rotates",))
        for i in range(50)
    )
    entities.append(EntityPlan(EntityRef("brokers", "1"), 3, secrets))
    return Plan(
        cluster="big",
        revision="0123abc",
        entities=tuple(entities),
        topics_to_create=tuple(
            TopicCreate(f"new-{i:03d}", 12, 3, {"retention.ms": "1"}, dict.fromkeys(range(12), (1, 2, 3)))
            for i in range(200)
        ),
        partition_increases=tuple(
            PartitionIncrease(f"grow-{i:03d}", 6, 12, 1, dict.fromkeys(range(6, 12), (1, 2, 3)))
            for i in range(100)
        ),
        unmanaged=tuple(f"topics/legacy-{i:04d}" for i in range(1000)),
        warnings=("broker 9 is not registered",),
    ).with_id()


def median_seconds(fn: Callable[[Sequence[Plan]], str], plans: Sequence[Plan], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(plans)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    plans = [build_plan(args.changes)]
    keys = sum(len(e.changes) for e in plans[0].entities)
    print(f"plan: {keys} key changes, {len(plans[0].topics_to_create)} topics to create, "
          f"{len(plans[0].partition_increases)} partition increases; median of {args.runs} runs")
    renderers: dict[str, Callable[[Sequence[Plan]], str]] = {
        "text": render_text,
        "text (colour)": lambda p: ansi_text(plan_lines(p)),
        "markdown": render_markdown,
        "json": render_json,
    }
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 2), show_edge=False)
    for header, justify in (("renderer", "left"), ("median ms", "right"), ("chars", "right")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for name, fn in renderers.items():
        size = len(fn(plans))
        table.add_row(name, f"{median_seconds(fn, plans, args.runs) * 1000:.1f}", f"{size:,}")
    Console(highlight=False, markup=False, emoji=False).print(table)


if __name__ == "__main__":
    main()
