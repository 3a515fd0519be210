"""DEMO ONLY — a SIMULATION of running brokers for the example clusters, so `plan`/`apply` have live
broker registrations to work with on a laptop with no Kafka.

It writes what ZooKeeper-mode brokers would register (`/brokers/ids/<id>` with their advertised endpoints
and racks, and `/controller`) as PERSISTENT nodes under each cluster's chroot (real brokers use ephemeral
ones). Never point it at a real cluster.

usage: python scripts/simulate_brokers.py --repo examples/fleet [CLUSTER ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from kazoo.exceptions import NodeExistsError

from reconciler.manifests.validate import load_and_validate
from reconciler.model import BrokerRegistration, frozen_map
from reconciler.zk.layout import encode_broker_registration, encode_controller
from reconciler.zk.session import connect


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path("."))
    parser.add_argument("clusters", nargs="*")
    args = parser.parse_args()
    _, states, _ = load_and_validate(args.repo, args.clusters)
    for name, state in sorted(states.items()):
        zk = state.cluster.zookeeper
        if zk.chroot:  # brokers create their chroot at first start; so does the simulation
            root = connect(replace(zk, connect=zk.hosts))
            try:
                root.ensure_path(zk.chroot)
            finally:
                root.stop()
                root.close()
        client = connect(zk)
        try:
            registered = []
            for broker in state.cluster.brokers:
                declared = state.listeners.brokers.get(broker) if state.listeners else None
                if declared is not None and state.listeners is not None:
                    endpoints = declared.advertised or declared.listeners
                    protocols = dict(state.listeners.security_protocol_map)
                else:
                    endpoints = (f"PLAINTEXT://b{broker}.{name}.demo:9092",)
                    protocols = {"PLAINTEXT": "PLAINTEXT"}
                reg = BrokerRegistration(broker, tuple(endpoints), frozen_map(protocols), f"rack-{broker % 3}")
                path = f"/brokers/ids/{broker}"
                data = encode_broker_registration(reg)
                try:
                    client.create(path, data, makepath=True)
                except NodeExistsError:
                    client.set(path, data)
                registered.append(broker)
            controller = encode_controller(state.cluster.brokers[0], timestamp_ms=int(time.time() * 1000))
            try:
                client.create("/controller", controller, makepath=True)
            except NodeExistsError:
                client.set("/controller", controller)
            print(f"SIMULATION: {name}: registered brokers {registered} at {state.cluster.zookeeper.connect}",
                  file=sys.stderr)
        finally:
            client.stop()
            client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
