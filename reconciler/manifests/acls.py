"""Kind `Acls` -> the desired ACLs of one cluster: resource pattern -> the complete set of its entries.

Three forms, all expanding to Kafka's entries (docs/acls.md) and merged per resource pattern (all documents):
* `resources`: a type, a name (pattern LITERAL by default, or PREFIXED) and entries of principal(s), host
  (default `*`), operation(s) and permission (default Allow).
* `consumers`: what `kafka-acls.sh --consumer` adds (AclCommand.getConsumerResourceFilterToAcls): Read and
  Describe on the topic, Read on the group.
* `producers`: what `kafka-acls.sh --producer` adds (AclCommand.getProducerResourceFilterToAcls): Write,
  Describe and Create on the topic; Write and Describe on the transactional id; with `idempotent: true`,
  IdempotentWrite on the Cluster.
`topicPrefix`/`groupPrefix`/`transactionalIdPrefix` are the PREFIXED patterns. Kafka's rules (operations per
type, principal, host, the Cluster's name, `*` only LITERAL) are checked at the manifest line, all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler.errors import Diagnostic
from reconciler.manifests.load import Document
from reconciler.model import AclEntry, AclResource, DesiredAcls, SourceRef, frozen_map
from reconciler.rules.acls import host_problem, operation_problem, principal_problem, resource_problem

Path = tuple[str | int, ...]
CONSUMER_TOPIC_OPS = ("Read", "Describe")
CONSUMER_GROUP_OPS = ("Read",)
PRODUCER_TOPIC_OPS = ("Write", "Describe", "Create")
PRODUCER_TXN_OPS = ("Write", "Describe")


class _Collector:
    def __init__(self, doc: Document, diags: list[Diagnostic]) -> None:
        self.doc, self.diags = doc, diags
        self.entries: dict[AclResource, set[AclEntry]] = {}
        self.sources: dict[AclResource, SourceRef] = {}

    def error(self, path: Path, message: str) -> None:
        key = path[-1] if path and isinstance(path[-1], str) else None
        self.diags.append(Diagnostic("error", message, self.doc.mark(path), key))

    def resource(self, rtype: str, pattern: str, name: str, path: Path) -> AclResource | None:
        problem = resource_problem(rtype, pattern, name)
        if problem is not None:
            self.error(path, problem)
            return None
        resource = AclResource(rtype, pattern, name)
        self.sources.setdefault(resource, self.doc.mark(path))
        self.entries.setdefault(resource, set())
        return resource

    def add(self, resource: AclResource | None, principals: Sequence[str], host: str, ops: Sequence[str],
            permission: str, path: Path) -> None:
        bad = False
        for i, principal in enumerate(principals):
            if (problem := principal_problem(principal)) is not None:
                self.error((*path, "principals", i) if len(principals) > 1 else (*path, "principal"), problem)
                bad = True
        if (problem := host_problem(host)) is not None:
            self.error((*path, "host"), problem)
            bad = True
        if resource is not None:
            for op in ops:
                if (problem := operation_problem(resource.resource_type, op)) is not None:
                    self.error((*path, "operations" if "operations" in self._at(path) else "operation"), problem)
                    bad = True
        if bad or resource is None:
            return
        self.entries[resource].update(AclEntry(p, host, op, permission) for p in principals for op in ops)

    def _at(self, path: Path) -> Mapping[str, Any]:
        node: Any = self.doc.data
        for part in path:
            node = node[part]
        return node if isinstance(node, Mapping) else {}


def _pattern(item: Mapping[str, Any], key: str) -> tuple[str, str, str] | None:
    """(pattern, name, the key written) of `key` or `keyPrefix`."""
    if key in item:
        return "LITERAL", str(item[key]), key
    if f"{key}Prefix" in item:
        return "PREFIXED", str(item[f"{key}Prefix"]), f"{key}Prefix"
    return None


def _resources(c: _Collector, spec: Mapping[str, Any]) -> None:
    for i, res in enumerate(spec.get("resources") or ()):
        path: Path = ("spec", "resources", i)
        resource = c.resource(str(res["type"]), str(res.get("pattern", "LITERAL")), str(res["name"]), (*path, "name"))
        for j, entry in enumerate(res["entries"]):
            epath = (*path, "entries", j)
            principals = [entry["principal"]] if "principal" in entry else list(entry.get("principals") or ())
            ops = [entry["operation"]] if "operation" in entry else list(entry.get("operations") or ())
            if not principals or not ops:
                c.error(epath, "an entry names a principal (or principals) and an operation (or operations)")
                continue
            c.add(resource, principals, str(entry.get("host", "*")), ops, str(entry.get("permission", "Allow")),
                  epath)


def _compact(c: _Collector, spec: Mapping[str, Any], section: str,
             parts: Sequence[tuple[str, Sequence[str], str]]) -> None:
    """`consumers`/`producers`: for each (key, operations, resource type) whose key is given, its entries."""
    for i, item in enumerate(spec.get(section) or ()):
        path: Path = ("spec", section, i)
        principals = [str(p) for p in item["principals"]]
        host = str(item.get("host", "*"))
        if not any(_pattern(item, key) for key, _, _ in parts) and not item.get("idempotent"):
            c.error(path, f"a {section[:-1]} names a topic or topicPrefix")
            continue
        for key, ops, rtype in parts:
            found = _pattern(item, key)
            if found is not None:
                pattern, name, written = found
                resource = c.resource(rtype, pattern, name, (*path, written))
                c.add(resource, principals, host, ops, "Allow", path)
        if section == "producers" and item.get("idempotent"):
            cluster = c.resource("Cluster", "LITERAL", "kafka-cluster", (*path, "idempotent"))
            c.add(cluster, principals, host, ("IdempotentWrite",), "Allow", path)


def build_acls(documents: Sequence[Document], diags: list[Diagnostic]) -> Mapping[AclResource, DesiredAcls]:
    entries: dict[AclResource, set[AclEntry]] = {}
    sources: dict[AclResource, SourceRef] = {}
    for doc in documents:
        if doc.data.get("kind") != "Acls":
            continue
        c = _Collector(doc, diags)
        spec = doc.data.get("spec") or {}
        _resources(c, spec)
        _compact(c, spec, "consumers", [("topic", CONSUMER_TOPIC_OPS, "Topic"), ("group", CONSUMER_GROUP_OPS, "Group")])
        _compact(c, spec, "producers", [("topic", PRODUCER_TOPIC_OPS, "Topic"),
                                        ("transactionalId", PRODUCER_TXN_OPS, "TransactionalId")])
        for resource, found in c.entries.items():
            entries.setdefault(resource, set()).update(found)
            sources.setdefault(resource, c.sources[resource])
    out = {r: DesiredAcls(r, frozenset(e), sources.get(r)) for r, e in entries.items()}
    return frozen_map(out)


Marker = Callable[[Path], SourceRef]
__all__ = ["build_acls"]
