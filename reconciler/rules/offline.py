"""Every offline rule on one cluster's desired state: `validate` runs them all (validate, plan, the PR check).

Kept out of the package's `__init__`: a command that needs one rule module (apply reads the cluster's settings,
`rules.cluster`) does not load all of them (~25 ms of its start-up)."""

from __future__ import annotations

from reconciler.catalog import Catalog, load_catalog
from reconciler.errors import Diagnostic
from reconciler.model import DesiredState
from reconciler.rules.acls import check_acl_names
from reconciler.rules.broker_context import check_broker_context
from reconciler.rules.broker_values import check_broker_values
from reconciler.rules.client_metrics import check_client_metrics
from reconciler.rules.cluster import check_cluster
from reconciler.rules.configs import check_configs
from reconciler.rules.elr import check_elr
from reconciler.rules.features import check_features
from reconciler.rules.groups import check_groups
from reconciler.rules.limits import Limits
from reconciler.rules.listeners import check_listeners
from reconciler.rules.placement import check_placement
from reconciler.rules.quota_values import check_quota_values
from reconciler.rules.quotas import check_quotas
from reconciler.rules.secrets import check_secrets
from reconciler.rules.topic_values import check_topic_values
from reconciler.rules.topics import PartitionCount, check_broker_ids, check_partitions, check_topics


def validate(state: DesiredState, catalog: Catalog | None = None, limits: Limits | None = None) -> list[Diagnostic]:
    """Every offline problem of one cluster, all at once (the caller sorts and reports them)."""
    return validate_counted(state, catalog, limits)[0]


def validate_counted(
    state: DesiredState, catalog: Catalog | None = None, limits: Limits | None = None
) -> tuple[list[Diagnostic], PartitionCount]:
    """`validate`, and what the cluster's topics ask for (for the bound over every cluster loaded)."""
    catalog = catalog or load_catalog()
    bounded, count = check_partitions(state, catalog, limits or Limits())
    return [
        *check_cluster(state),
        *check_configs(state, catalog),
        *check_broker_values(state, catalog),
        *check_topic_values(state, catalog),
        *check_secrets(state, catalog),
        *check_listeners(state),
        *check_quotas(state, catalog),
        *check_acl_names(state),
        *check_topics(state),
        *check_broker_ids(state),
        *check_placement(state),
        *check_features(state, catalog),
        *check_elr(state),
        *check_broker_context(state, catalog),
        *check_quota_values(state, catalog),
        *check_groups(state, catalog),
        *check_client_metrics(state, catalog),
        *bounded,
    ], count
