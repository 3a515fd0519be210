"""Load + schema-validate a 10,000-topic Topics manifest; prints the median of 5 runs of each step.

Run: .venv/bin/python bench/load_topics.py [--topics N] [--runs R]
Target (brief): load well under a second (aim <= 0.3 s, marks included) and schema validation < 0.3 s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from reconciler.errors import has_errors
from reconciler.manifests.load import load_file
from reconciler.manifests.schema import validate_document


def manifest(topics: int) -> str:
    lines = [
        "apiVersion: reconciler/v1",
        "kind: Topics",
        "meta: {}",
        "spec:",
        "  defaults: {replicationFactor: 3, config: {min.insync.replicas: 2}}",
        "  topics:",
    ]
    for i in range(topics):
        lines.append(f"    team-{i % 50}.orders-{i}:")
        lines.append(f"      partitions: {12 + i % 7}")
        lines.append(f"      config: {{retention.ms: {86_400_000 + i}, cleanup.policy: delete}}")
    return "\n".join(lines) + "\n"


def median_seconds(runs: int, step: object) -> float:
    assert callable(step)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "topics.yaml"
        path.write_text(manifest(args.topics), encoding="utf-8")
        docs, diags = load_file(path)
        assert not diags and len(docs) == 1, diags
        assert not has_errors(validate_document(docs[0]))
        lines = path.read_text(encoding="utf-8").count("\n")
        size = path.stat().st_size
        print(f"{args.topics} topics, {lines} lines, {size} bytes, libyaml: {yaml.__with_libyaml__}")

        load = median_seconds(args.runs, lambda: load_file(path))
        schema = median_seconds(args.runs, lambda: validate_document(docs[0]))
        both = median_seconds(args.runs, lambda: [validate_document(d) for d in load_file(path)[0]])
        baseline = median_seconds(args.runs, lambda: yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader))
        print(f"load (data + marks)     median {load * 1000:7.1f} ms")
        print(f"schema validation       median {schema * 1000:7.1f} ms")
        print(f"load + schema           median {both * 1000:7.1f} ms")
        print(f"baseline yaml.load (C)  median {baseline * 1000:7.1f} ms  (no marks, no checks, YAML 1.1)")


if __name__ == "__main__":
    main()
