"""Client-quota values as the cluster's own Admin API path refuses them (found by the validation corpus,
docs/kafka-validation.md "Agreement with the brokers"):

* KRaft: every quota must be greater than 0 ("Quota producer_byte_rate must be greater than 0",
  `ClientQuotaControlManager.validateQuotaKeyValue`, Kafka 3.3-4.1);
* ZooKeeper mode: a whole-number quota (the LONG byte rates, the INT connection rate) is refused below 0
  (`ZkAdminManager.alterClientQuotas`, what kafka-configs.sh --bootstrap-server sends, answers "Configuration
  producer_byte_rate must be a LONG value"); the brokers would read a negative rate as a limit no client meets.
"""

from __future__ import annotations

from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.model import DesiredState, SecretRef
from reconciler.units import parse_number


def check_quota_values(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    kraft = state.cluster.is_kraft
    diags = []
    for ref, entity in state.entities.items():
        if ref.entity_type not in ("clients", "users", "ips"):
            continue
        for key, value in entity.config.items():
            base = catalog.quota(ref.quota_kind, key)
            if base is None or isinstance(value.value, SecretRef) or base.type not in ("LONG", "INT", "DOUBLE"):
                continue
            number = parse_number(value.value)
            if number is None:
                continue  # the type rule says it
            if kraft and number <= 0:
                diags.append(Diagnostic("error", f"quota {key} of {ref.display} is {value.value}: a KRaft cluster "
                                        f"refuses it (\"Quota {key} must be greater than 0\", "
                                        "ClientQuotaControlManager); remove the key for no limit", value.source, key))
            elif not kraft and number < 0 and base.type in ("LONG", "INT"):
                diags.append(Diagnostic("error", f"quota {key} of {ref.display} is {value.value}: Kafka refuses a "
                                        f"negative {base.type} quota (\"Configuration {key} must be a {base.type} "
                                        "value\", ZkAdminManager.alterClientQuotas); remove the key for no limit",
                                        value.source, key))
    return diags
