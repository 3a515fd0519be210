"""kafka-reconciler: declarative GitOps reconciler for Kafka dynamic configuration in ZooKeeper mode."""

__version__ = "0.1.0"
