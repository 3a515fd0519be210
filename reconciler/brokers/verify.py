"""`apply --verify`: after the writes, ask every broker until each written key is reported as expected, or a
deadline passes. Broker keys are asked of each broker (its own running configuration); topic configs,
layouts and quotas of any broker (in ZooKeeper mode a broker answers these from ZooKeeper, as it parses
them). A broker the manifests declare that is not registered, or that does not answer, is reported as
unanswered, never as taken."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reconciler.brokers.admin import AdminSecurity, BrokerAdmin, BrokerAdminError
from reconciler.model import AdminClientSpec, ClusterSpec, TlsSpec
from reconciler.plan import Plan
from reconciler.progress import NO_PROGRESS, Progress
from reconciler.secrets.compare import base_dir
from reconciler.secrets.files import checked_pem
from reconciler.secrets.refs import resolve_optional
from reconciler.verify.expect import RESOURCE_SOURCES, Expectation, expectations
from reconciler.verify.judge import (
    Outcome,
    judge_acl,
    judge_config,
    judge_feature,
    judge_layout,
    judge_quota,
    judge_scram,
)
from reconciler.verify.report import Result, VerifyReport

DEFAULT_TIMEOUT_S = 30.0


def admin_security(cluster: ClusterSpec, root: Path) -> AdminSecurity:
    """The admin client's PEM files (checked like every manifest-named file) and secrets, resolved."""
    spec = cluster.admin
    if spec is None:
        return AdminSecurity()
    where = base_dir(root, cluster.source)
    tls: TlsSpec | None = spec.tls
    section = f"cluster {cluster.name}: adminClient.tls"

    return AdminSecurity(
        ca=checked_pem(tls.ca_file if tls else None, where, root, what="CA file", section=section),
        certificate=checked_pem(tls.cert_file if tls else None, where, root, what="certificate file", section=section),
        key=checked_pem(tls.key_file.file if tls and tls.key_file else None, where, root, what="key file",
                        section=section),
        key_password=resolve_optional(tls.key_password if tls else None, where, root),
        sasl_password=resolve_optional(spec.sasl.password if spec.sasl else None, where, root),
    )


def _ask(admin: BrokerAdmin, pending: list[Expectation]) -> dict[Expectation, Outcome]:
    """One round: every pending expectation asked once (grouped per broker, per topic, once for quotas)."""
    out: dict[Expectation, Outcome] = {}
    try:
        live = admin.live_brokers()
    except Exception as exc:
        return {e: Outcome("unreachable", f"no answer from the cluster ({type(exc).__name__})") for e in pending}
    by_broker: dict[str, list[Expectation]] = defaultdict(list)
    by_topic: dict[str, list[Expectation]] = defaultdict(list)
    layouts: list[Expectation] = []
    quotas: list[Expectation] = []
    acls = [e for e in pending if e.kind == "acl"]
    scram = [e for e in pending if e.kind == "scram"]
    pending = _kafka4(admin, pending, out)  # group configs, client-metrics subscriptions, feature levels
    for e in pending:
        if e.kind == "broker":
            by_broker[e.target].append(e)
        elif e.kind == "topic":
            by_topic[e.target].append(e)
        else:
            (layouts if e.kind == "layout" else quotas).append(e)
    for broker, exps in by_broker.items():
        if int(broker) not in live:
            out.update((e, Outcome("unreachable", "the broker is not registered (down?)")) for e in exps)
            continue
        try:
            reported = admin.broker_configs(int(broker), {e.key for e in exps})
        except Exception as exc:
            out.update((e, Outcome("unreachable", f"the broker did not answer ({type(exc).__name__})"))
                       for e in exps)
            continue
        out.update((e, judge_config(e, reported.get(e.key))) for e in exps)
    for topic, exps in by_topic.items():
        try:
            configs = admin.topic_configs(topic, {e.key for e in exps})
        except Exception as exc:
            out.update((e, Outcome("unreachable", f"no answer ({type(exc).__name__})")) for e in exps)
            continue
        out.update((e, judge_config(e, None if configs is None else configs.get(e.key))) for e in exps)
    if layouts:
        try:
            reported_layouts = admin.topic_layouts(sorted({e.target for e in layouts}))
            out.update((e, judge_layout(e, reported_layouts.get(e.target))) for e in layouts)
        except Exception as exc:
            out.update((e, Outcome("unreachable", f"no answer ({type(exc).__name__})")) for e in layouts)
    _cluster_wide(out, quotas, admin.quotas, lambda e, reported: judge_quota(e, reported.get(e.target)))
    _cluster_wide(out, scram, admin.scram_credentials, judge_scram)
    _cluster_wide(out, acls, admin.acls, judge_acl)
    return out


def _kafka4(admin: BrokerAdmin, pending: list[Expectation], out: dict[Expectation, Outcome]) -> list[Expectation]:
    """Judge the Kafka 4.x expectations (a GROUP or CLIENT_METRICS resource's DescribeConfigs, DescribeFeatures'
    finalized levels) into `out`; the others are returned."""
    resources: dict[str, list[Expectation]] = defaultdict(list)  # groups/<g>, client-metrics/<s>
    for e in pending:
        if e.kind == "resource":
            resources[e.target].append(e)
    for target, exps in resources.items():
        entity_type, _, name = target.partition("/")
        try:
            configs = admin.resource_configs(RESOURCE_SOURCES[entity_type][0], name, {e.key for e in exps})
        except Exception as exc:
            out.update((e, Outcome("unreachable", f"no answer ({type(exc).__name__})")) for e in exps)
            continue
        out.update((e, judge_config(e, configs.get(e.key))) for e in exps)
    _cluster_wide(out, [e for e in pending if e.kind == "feature"], admin.feature_levels, judge_feature)
    return [e for e in pending if e.kind not in ("resource", "feature")]


def _cluster_wide(
    out: dict[Expectation, Outcome], exps: list[Expectation], ask: Callable[[], Any],
    judge: Callable[[Expectation, Any], Outcome],
) -> None:
    """Expectations one cluster-wide answer judges (DescribeClientQuotas, DescribeUserScramCredentials,
    DescribeAcls): asked once, only when some are pending."""
    if not exps:
        return
    try:
        reported = ask()
        out.update((e, judge(e, reported)) for e in exps)
    except Exception as exc:
        out.update((e, Outcome("unreachable", f"no answer ({type(exc).__name__})")) for e in exps)


def verify_plan(
    plan: Plan,
    cluster: ClusterSpec,
    root: Path,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.5,
    progress: Progress = NO_PROGRESS,
    clock: Callable[[], float] = time.monotonic,
) -> VerifyReport:
    """Ask the brokers until every change of `plan` is reported as expected or `timeout_s` passes (connecting
    included: the first broker must answer within it)."""
    spec = _admin_spec(cluster)
    start = clock()
    deadline = start + timeout_s
    with BrokerAdmin(spec, admin_security(cluster, root), connect_timeout_s=timeout_s) as admin:
        try:
            registered = set(admin.live_brokers())
        except Exception:
            registered = set()
        brokers = tuple(sorted(set(cluster.brokers) | registered))
        wanted = expectations(plan, brokers)
        outcomes: dict[Expectation, Outcome] = {}
        pending = list(wanted)
        with progress.phase(f"{cluster.name}: verify on {admin.where}", total=len(wanted)) as phase:
            while True:
                outcomes.update(_ask(admin, pending))
                pending = [e for e in wanted if outcomes[e].status != "taken"]
                phase.update(len(wanted) - len(pending))
                if not pending or clock() >= deadline:
                    break
                time.sleep(interval_s)
            report = VerifyReport(plan.cluster, tuple(Result(e, outcomes[e]) for e in wanted), brokers,
                                  clock() - start)
            # a count, not the summary: the command prints that once, after the phase (no nested repeat)
            phase.done(f"{report.count('taken')} of {len(report.results)} answers taken")
    return report


def _admin_spec(cluster: ClusterSpec) -> AdminClientSpec:
    if cluster.admin is None:
        raise BrokerAdminError(f"cluster {cluster.name}: --verify needs spec.adminClient.bootstrapServers "
                               "(how to reach the brokers' Admin API) in cluster.yaml")
    return cluster.admin


PRECONDITION_RETRY_S = 0.2


def verify_preconditions(cluster: ClusterSpec, root: Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """What `--verify` needs, checked before the first write (so an apply that could not be verified is not
    made): the cluster's Admin API settings, and a broker that answers within `timeout_s`. Raises
    BrokerAdminError saying which is missing; nothing has been written then."""
    spec = _admin_spec(cluster)
    deadline = time.monotonic() + timeout_s
    try:
        with BrokerAdmin(spec, admin_security(cluster, root), connect_timeout_s=timeout_s) as admin:
            while True:
                try:
                    admin.live_brokers()
                    return
                except Exception as exc:
                    # the client may have sent it to a broker that is down but still in the metadata (a
                    # stopped broker stays registered until its session expires); it tries another next time
                    if time.monotonic() >= deadline:
                        raise BrokerAdminError(
                            f"--verify cannot ask the {admin.where} ({type(exc).__name__})") from None
                    time.sleep(PRECONDITION_RETRY_S)
    except BrokerAdminError as exc:
        raise BrokerAdminError(f"cluster {cluster.name}: {exc.message}") from None


def record_verification(audit_log: Path, plan: Plan, report: VerifyReport) -> None:
    """The verification's outcome as a line of the JSON-lines audit log, after the apply's own entry."""
    entry = {"event": "verify", "planId": plan.plan_id, "revision": plan.revision, **report.to_json()}
    audit_log.parent.mkdir(parents=True, exist_ok=True)
    with audit_log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
