"""What a ZooKeeper → KRaft migration (KIP-866) will meet in a cluster (`report`, pure); `reconciler
migrate-check` (cli/migrate.py) reads the cluster and decodes its passwords."""
