"""`reconciler import`: manifests from a live cluster, such that `plan` on them shows no changes.

This is how a team adopts the tool without downtime: import, review, commit, and from then on every change
goes through a pull request. A ZooKeeper-mode cluster is read from its znodes, a KRaft cluster through its
Admin API (the cluster's backend, `backends.backend_for`): the same documents either way, except that a KRaft
cluster's passwords cannot be read back (they are left to the live cluster through policy.ignoreKeys).
The import checks its own promise before it returns: the files written are loaded and validated like any
manifest and planned against the live state just read; what a plan would still change is reported
(`Imported.residual`).

    compose.py    live state -> documents (tidy values, sealed passwords, FleetDefaults neutralised)
    listeners.py  per-broker listener keys -> one Listeners document
"""

from __future__ import annotations

import hmac
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reconciler.backend import EVERY_TYPE
from reconciler.backends import backend_for
from reconciler.catalog import load_catalog
from reconciler.errors import Diagnostic, ReconcilerError, has_errors
from reconciler.importer.compose import Composed, ImportSpec, compose
from reconciler.kraft.passwords import PRESENT
from reconciler.manifests.fleet import FleetLayer, fleet_layer
from reconciler.manifests.load import Document, load_text
from reconciler.manifests.repo import FLEET_FILE
from reconciler.manifests.validate import load_and_validate
from reconciler.model import ClusterSpec, DesiredState, LiveState, Secret, frozen_map
from reconciler.plan import Plan
from reconciler.secrets.encoder import EncoderParams, try_decode
from reconciler.workflow import plan_against

__all__ = ["ImportSpec", "Imported", "fleet_documents", "import_cluster", "read_cluster", "render_files",
           "source_label"]

HEADER = (
    "# Imported from the live cluster by `reconciler import` ({source}).\n"
    "# Review it, commit it, and change the cluster through pull requests from now on.\n"
)


@dataclass(frozen=True, slots=True)
class Imported:
    directory: Path  # DIR/clusters/CLUSTER
    files: tuple[str, ...]
    notes: tuple[str, ...]
    residual: Plan | None  # what a plan would still change (None when the check could not run)
    diagnostics: tuple[Diagnostic, ...] = ()  # from validating the files written
    previous: Path | None = None  # the directory --force replaced, kept until `keep` or `discard`


def keep(imported: Imported) -> None:
    """The import is accepted: drop the directory it replaced."""
    if imported.previous is not None:
        shutil.rmtree(imported.previous, ignore_errors=True)


def discard(imported: Imported) -> None:
    """The import failed its check: remove what it wrote and put back what it replaced (no files left)."""
    _rollback(imported.directory, imported.previous)


def _rollback(target: Path, previous: Path | None) -> None:
    shutil.rmtree(target, ignore_errors=True)
    if previous is not None:
        previous.rename(target)


def read_cluster(cluster: ClusterSpec, root: Path) -> LiveState:
    """Everything the import may declare: every entity type, brokers, topics and ACLs, read by the cluster's
    backend (ZooKeeper's znodes, or a KRaft cluster's Admin API)."""
    with backend_for(cluster).connect(cluster, root) as connection:
        return connection.read(DesiredState(cluster, frozen_map(), frozen_map()), entity_types=EVERY_TYPE)


def source_label(cluster: ClusterSpec) -> str:
    """Where the import read the cluster, for the files' header (`ZooKeeper host:2181/kafka`)."""
    return backend_for(cluster).label(cluster)


def fleet_documents(out_root: Path) -> list[Document]:
    """FleetDefaults of the repository the cluster is imported into (it will inherit them)."""
    path = out_root / "clusters" / FLEET_FILE
    if not path.is_file():
        return []
    docs, diags = load_text(path.read_bytes(), f"clusters/{FLEET_FILE}")
    if has_errors(diags):
        raise ReconcilerError(f"cannot import into {out_root}: its clusters/{FLEET_FILE} has errors "
                              "(run `reconciler validate`)", diags)
    return docs


def _same_secret(encoder: EncoderParams | None) -> Any:
    def same(values: list[str]) -> bool:
        if len(set(values)) == 1:
            return True
        if encoder is None:
            return False
        plain = [try_decode(v, encoder) for v in values]
        if any(p is None for p in plain):
            return False
        texts = {p[0].reveal().encode("utf-8") for p in plain if p is not None}
        first = next(iter(texts))
        return all(hmac.compare_digest(first, t) for t in texts)

    return same


class _Dumper(yaml.SafeDumper):
    """Block style with lists of scalars inline (`listeners: [A://:1, B://:2]`), keys in the given order."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(not isinstance(x, dict | list) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


# Plain scalars the YAML 1.2 core schema (our loader) reads as something else than a string; PyYAML's YAML 1.1
# resolver leaves some of them unquoted (e.g. `5.24288E7`, `0o17`), so strings like these are quoted.
_NOT_A_STRING = re.compile(
    r"~|null|Null|NULL|true|True|TRUE|false|False|FALSE|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "'" if data == "" or _NOT_A_STRING.fullmatch(data) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(str, _represent_str)


def render_files(composed: Composed, source: str) -> dict[str, str]:
    """YAML text per file; each is read back strictly and must give the same data (no silent retyping)."""
    out: dict[str, str] = {}
    for name, docs in composed.files.items():
        body = yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110,
                             default_flow_style=False)
        text = HEADER.format(source=source) + body
        parsed, diags = load_text(text, name)
        where = _difference([d.data for d in parsed], docs, ())
        if has_errors(diags) or where is not None:
            raise ReconcilerError(f"internal error: {name} would not read back as written (at {where})", diags)
        out[name] = text
    return out


def _difference(a: Any, b: Any, path: tuple[Any, ...]) -> str | None:
    """Where two YAML data trees differ (types included: 1 and "1" differ), None when equal."""
    if type(a) is not type(b):
        return "/".join(map(str, path)) or "/"
    if isinstance(a, dict):
        for key in a.keys() | b.keys():
            if key not in a or key not in b:
                return "/".join(map(str, (*path, key)))
            found = _difference(a[key], b[key], (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "/".join(map(str, path)) or "/"
        return next((f for i, (x, y) in enumerate(zip(a, b, strict=True))
                     if (f := _difference(x, y, (*path, i))) is not None), None)
    return None if a == b else "/".join(map(str, path)) or "/"


def import_cluster(
    live: LiveState,
    spec: ImportSpec,
    out_root: Path,
    *,
    encoder_secret: Secret | None = None,
    force: bool = False,
    source: str = "the live cluster",
) -> Imported:
    """Write `out_root/clusters/<cluster>/` from `live` and check that a plan on it is empty. `source`: where
    it was read (the files' header says)."""
    target = out_root / "clusters" / spec.cluster
    if target.exists() and any(target.iterdir()) and not force:
        raise ReconcilerError(f"{target} already exists and is not empty; choose another --out or pass --force")
    fleet = fleet_documents(out_root)
    layer, problems = fleet_layer(fleet, spec.labels) if fleet else (FleetLayer(), [])
    if has_errors(problems):
        raise ReconcilerError("the FleetDefaults matching this cluster conflict", problems)
    encoder = EncoderParams(encoder_secret) if encoder_secret is not None else None
    composed = compose(live, spec, load_catalog(), layer, _same_secret(encoder), frozenset({PRESENT}))
    texts = render_files(composed, source)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.cluster}-", dir=_ensure(out_root / "clusters")))
    previous: Path | None = None
    try:
        for name, text in texts.items():
            (staging / name).write_text(text, encoding="utf-8")
        if target.exists():  # kept aside until the check passes (`keep`) or fails (`discard`)
            previous = Path(tempfile.mkdtemp(prefix=f".{spec.cluster}-previous-", dir=target.parent))
            previous.rmdir()
            target.rename(previous)
        staging.rename(target)  # all files appear at once: never half an import
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    try:
        residual, diags = verify(out_root, spec.cluster, live)
    except BaseException:
        _rollback(target, previous)
        raise
    return Imported(target, tuple(texts), tuple(composed.notes), residual, tuple(diags), previous)


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def verify(out_root: Path, cluster: str, live: LiveState) -> tuple[Plan | None, Sequence[Diagnostic]]:
    """The plan of the imported manifests against the live state they came from (None: invalid)."""
    _, states, diags = load_and_validate(out_root, [cluster])
    own = [d for d in diags if d.source is None or f"/{cluster}/" in f"/{d.source.file}"]
    state = states.get(cluster)
    if state is None or has_errors(own):
        return None, own
    result = plan_against(state, live, out_root, None)
    return result.plan, [*own, *result.diagnostics]


def sensitive_unknown(plan: Plan) -> int:
    """Password changes a plan can only call `unknown` (no encoder secret to compare them)."""
    return sum(c.sensitive and c.redacted == "unknown" for e in plan.entities for c in e.changes)


def describe_residual(plan: Plan) -> list[str]:
    lines: list[str] = []
    for e in plan.entities:
        lines += [f"{e.ref.display} {c.op} {c.key}" for c in e.changes]
    lines += [f"topics/{t.name}: would be created" for t in plan.topics_to_create]
    lines += [f"topics/{p.name}: partitions {p.current} -> {p.target}" for p in plan.partition_increases]
    return lines


def labels_of(pairs: Sequence[str]) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ReconcilerError(f"--label {pair!r}: expected KEY=VALUE")
        out[key] = value
    return out
