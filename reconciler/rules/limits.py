"""How much a set of manifests may ask for: the operator's bounds on partitions and on the manifests themselves.

Kafka sets no limit on a topic's partitions or a cluster's total (a CreateTopics request carries an int32), but
what a plan computes grows with them: a replica assignment per partition created, a diff per partition
added. A manifest saying `partitions: 2147483647` made a pull-request check allocate until a MemoryError. So
validation refuses counts beyond these bounds, at the manifest line, before anything is allocated per
partition; and loading refuses manifests beyond the aggregate bounds (bytes, documents, entities) before it
parses past them. Every bound is an operator setting (the environment, never a manifest), with defaults a real
cluster stays well under: the guidance for ZooKeeper-mode clusters is up to about 4,000 partitions per broker and
200,000 per cluster (Jun Rao, "Apache Kafka Supports 200K Partitions Per Cluster", Confluent blog, 2018).

Two tiers of aggregate bounds: every load of the manifests (`RECONCILER_MAX_*`), and the pull-request check
(`plan --git-base`, `RECONCILER_PR_MAX_*`), which reads what any author with push access wrote and so gets
lower defaults. Aggregates count what one process loads for one command (the clusters it selects;
`validate` with worker processes: each share of clusters).

Pure: the environment is passed in as a mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from reconciler.errors import ReconcilerError
from reconciler.units import parse_int

PREFIX, PR_PREFIX = "RECONCILER_MAX_", "RECONCILER_PR_MAX_"


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds, by the suffix of their setting (`RECONCILER_MAX_<NAME>`)."""

    topic_partitions: int = 10_000  # one topic: well above any sound topic (Kafka's largest are a few thousand)
    cluster_partitions: int = 200_000  # one cluster's declared topics: Kafka's ZooKeeper-mode guidance
    cluster_replicas: int = 1_000_000  # partitions x replication factor in one cluster (RF 5 at the bound above)
    partitions: int = 10_000_000  # every cluster one command loads
    manifest_bytes: int = 256 * 1024 * 1024  # every manifest file one command loads
    documents: int = 100_000
    entities: int = 1_000_000  # topics, quota entities and other documents (a 1,000-cluster fleet: ~300,000)
    tier: str = PREFIX  # which settings these are: named in every message

    def setting(self, name: str) -> str:
        """The environment variable an operator raises: `RECONCILER_MAX_TOPIC_PARTITIONS`."""
        per_run = name in AGGREGATE
        return f"{self.tier if per_run else PREFIX}{name.upper()}"


# The bounds that have a pull-request tier (the others are properties of one topic or one cluster).
AGGREGATE = frozenset({"partitions", "manifest_bytes", "documents", "entities"})
PR_DEFAULTS = {"partitions": 2_000_000, "manifest_bytes": 64 * 1024 * 1024, "documents": 20_000,
               "entities": 200_000}


def limits_from(environ: Mapping[str, str], pull_request: bool = False) -> Limits:
    """The bounds the environment sets (defaults for the unset ones); `pull_request`: the PR check's tier for
    the aggregate ones. A setting that is not a positive integer is an error naming it."""
    values: dict[str, int] = {}
    for f in fields(Limits):
        if f.name == "tier":
            continue
        prefix = PR_PREFIX if pull_request and f.name in AGGREGATE else PREFIX
        name = f"{prefix}{f.name.upper()}"
        raw = environ.get(name, "").strip()
        if not raw:
            if pull_request and f.name in PR_DEFAULTS:
                values[f.name] = PR_DEFAULTS[f.name]
            continue
        number = parse_int(raw.replace("_", ""))
        if number is None or number < 1:
            default = PR_DEFAULTS[f.name] if pull_request and f.name in PR_DEFAULTS else getattr(Limits(), f.name)
            raise ReconcilerError(f"{name}={raw[:40]!r} is not a positive whole number; unset it for the "
                                  f"default ({default:,})")
        values[f.name] = number
    return replace(Limits(), tier=PR_PREFIX if pull_request else PREFIX, **values)
