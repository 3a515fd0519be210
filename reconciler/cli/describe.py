"""`reconciler describe`: where each effective config value comes from, live and as the manifests would make it.

Live: ZooKeeper's dynamic configs (read as `plan` reads them), the manifests' server.properties, Kafka's
defaults. Manifests: the same with the cluster's plan applied (`effective.PlannedLayers`), so ownership,
ignored keys and unmanaged entities are exactly what apply would do. Nothing is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.context import Context, emit_diagnostics
from reconciler.errors import ReconcilerError
from reconciler.model import DEFAULT_ENTITY, ENTITY_TYPES, KRAFT_ENTITY_TYPES, DesiredState, EntityRef, LiveState

if TYPE_CHECKING:  # the renderers are imported when describe runs: every command's start-up imports this module
    from reconciler.effective import Layers
    from reconciler.plan import Plan
    from reconciler.render.access import AccessView

_SINGULAR = {t[:-1]: t for t in ENTITY_TYPES}


def parse_entity(text: str) -> EntityRef:
    """`topics/orders`, `brokers/1`, `brokers/<default>` (or `brokers/default`), `users/alice`,
    `users/alice/clients/app-1`, `clients/<default>`, `ips/10.0.0.1`; singular type names work too."""
    kind, _, name = text.partition("/")
    kind = _SINGULAR.get(kind, kind)
    if kind not in ENTITY_TYPES or not name:
        raise ReconcilerError(f"entity {text!r}: expected TYPE/NAME with TYPE one of {', '.join(ENTITY_TYPES)} "
                              "(e.g. topics/orders, brokers/1, brokers/<default>, users/alice/clients/app-1)")
    if kind == "brokers" and name == "default":
        name = DEFAULT_ENTITY
    if kind == "brokers" and name != DEFAULT_ENTITY and not name.isdigit():
        raise ReconcilerError(f"entity {text!r}: a broker is a number or <default>")
    if kind == "users" and "/clients/" in name:
        user, _, client = name.rpartition("/clients/")
        return EntityRef("users", user, client)
    return EntityRef(kind, name)


@click.command()
@click.argument("cluster")
@click.argument("entity", required=False)
@click.argument("key", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--all", "show_all", is_flag=True, help="Also list keys at Kafka's default on both sides.")
@click.option("--synonyms", is_flag=True, help="Text: each key's synonyms list too (always with KEY, and in json).")
@click.option("--broker", type=int, help="Topics as this broker sees them (its per-broker overrides and "
              "server.properties); default: a broker without overrides of its own.")
@click.pass_obj
def describe(obj: Context, cluster: str, entity: str | None, key: str | None, fmt: str, show_all: bool,
             synonyms: bool, broker: int | None) -> None:
    """Show effective configs and where they come from, live and as the manifests would make them."""
    from reconciler.catalog import load_catalog
    from reconciler.cli.console import print_blocks
    from reconciler.effective import LiveLayers, PlannedLayers
    from reconciler.render.describe import describe_blocks, describe_json, entities_of, entity_view
    from reconciler.workflow import load_desired, plan_against, read_cluster

    ref = parse_entity(entity) if entity is not None else None
    states, warnings = load_desired(obj.repo, [cluster])
    desired = states[cluster]
    emit_diagnostics(warnings, "text")
    if ref is not None and ref.entity_type in KRAFT_ENTITY_TYPES and not desired.cluster.is_kraft:
        # ConfigResource.Type.GROUP/CLIENT_METRICS and features live in KRaft's metadata log, never in ZooKeeper
        raise ReconcilerError(f"entity {entity!r}: {ref.entity_type} exist only on KRaft clusters; "
                              f"{cluster} is a ZooKeeper-mode cluster")
    live = read_cluster(desired, obj.repo, obj.progress())
    planned = plan_against(desired, live, obj.repo, None)
    emit_diagnostics(planned.diagnostics, "text")  # informational here: nothing is applied
    catalog = load_catalog()
    version = desired.cluster.kafka_version
    live_layers = LiveLayers(live, catalog, desired)
    planned_layers = PlannedLayers(live, planned.plan, desired, catalog)
    if key is not None and ref is not None and ref.entity_type == "topics" and catalog.topic(key, version) is None \
            and key not in live_layers.dynamic(ref) and key not in planned_layers.dynamic(ref):
        suggestion = catalog.suggest(key, "topic", version)
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        raise ReconcilerError(f"{key!r} is not a topic config of Kafka {version}{hint}")
    if ref is not None and ref.entity_type == "topics" and ref.name not in live.topics \
            and ref.name not in desired.topics:
        raise ReconcilerError(f"topic {ref.name!r} is neither in ZooKeeper nor in the manifests of {cluster}")
    views = []
    for r in [ref] if ref is not None else entities_of(desired, live):
        exists = r.name in live.topics if r.entity_type == "topics" else (
            r in live.entities or (r.entity_type == "brokers" and r.name.isdigit() and int(r.name) in live.brokers))
        views.append(entity_view(catalog, version, r, live_layers, planned_layers, exists=exists, key=key,
                                 show_all=show_all, broker=str(broker) if broker is not None else None))
    access = [topic_access(ref.name, live, planned.plan)] if ref is not None and ref.entity_type == "topics" else []
    consumers = topic_consumers(obj, desired, ref, live_layers, planned_layers, broker) \
        if ref is not None and ref.entity_type == "topics" and ref.name in live.topics else None
    if fmt == "json":
        click.echo(describe_json(cluster, version, views, access, consumers), nl=False)
        return
    from reconciler.render.access import access_blocks
    from reconciler.render.describe import consumer_blocks
    from reconciler.render.styled import line

    blocks = describe_blocks(views, synonyms=synonyms or key is not None)
    for view in access:
        blocks += [line(""), *access_blocks(view)]
    if consumers is not None:
        blocks += [line(""), *consumer_blocks(**consumers)]
    print_blocks(obj.out, blocks)


def topic_consumers(obj: Context, desired: DesiredState, ref: EntityRef, live: Layers, planned: Layers,
                    broker: int | None) -> dict[str, Any] | None:
    """Where the plan lowers the topic's effective retention (and its cleanup.policy deletes): its groups, read
    live, with the unread records the new retention makes eligible for deletion (`reconciler.unread`)."""
    from datetime import UTC, datetime

    from reconciler.catalog import load_catalog
    from reconciler.effective import EntityResolver
    from reconciler.impact.offsetread import topic_consumers as read
    from reconciler.render.consumers import risk_row
    from reconciler.units import parse_int

    catalog, version = load_catalog(), desired.cluster.kafka_version
    at = str(broker) if broker is not None else None
    now, later = (EntityResolver(layers, catalog, ref, version=version, broker=at) for layers in (live, planned))
    if "delete" not in (later("cleanup.policy").value or "delete").replace(" ", "").split(","):
        return None  # a compact-only topic deletes nothing by retention
    pairs = []
    for key in ("retention.ms", "retention.bytes"):
        b, a = parse_int(now(key).value), parse_int(later(key).value)
        unlimited = (b is None or b < 0, a is None or a < 0)
        lowered = not unlimited[1] and (unlimited[0] or (b is not None and a is not None and a < b))
        pairs.append((b, a) if lowered else (None, None))
    if pairs == [(None, None), (None, None)]:
        return None  # retention not lowered: nobody loses unread records
    before, after = (pairs[0][0], pairs[1][0]), (pairs[0][1], pairs[1][1])
    found = read(desired, ref.name, before, after, obj.repo, obj.progress())
    rows = [risk_row(g, pairs[0], pairs[1], found.read_at_ms) for g in found.risks]
    when = datetime.fromtimestamp(found.read_at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") \
        if found.read_at_ms else ""
    notes = "; ".join(found.notes)
    return {"rows": rows, "title": f"{ref.display}: consumer groups, against the retention the manifests lower",
            "read_at": f"offsets read {when}; counts per record (Kafka deletes whole segments)"
                       + (f"; {notes}" if notes else ""), "not_read": found.not_read}


def topic_access(topic: str, live: LiveState, plan: Plan) -> AccessView:
    """Who may do what on the topic by its ACLs, live and once the plan is applied (reconciler/access.py)."""
    from reconciler.access import access_of, planned_acls
    from reconciler.render.access import AccessView
    from reconciler.rules.acls import SUPPORTED_OPERATIONS

    now = {r: a.entries for r, a in (live.acls or {}).items()}
    after = planned_acls(now, {a.resource: a.after for a in plan.acls})
    operations = SUPPORTED_OPERATIONS["Topic"]
    return AccessView(f"Topic:{topic}", tuple(access_of(now, "Topic", topic, operations)),
                      tuple(access_of(after, "Topic", topic, operations)))
