#!/usr/bin/env bash
# The main job on the local embedded default: set-up, a local ZooKeeper, and the example fleet
# validated (later stages: plan -> apply -> plan again -> impact). Everything goes to a local ZooKeeper
# started by scripts/local-zookeeper.sh; nothing outside this machine is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
PORT=${DEMO_ZK_PORT:-2181}
bash scripts/local-zookeeper.sh start --port "$PORT" --dir .local/demo-zookeeper

# Demo-only secrets (never use these anywhere real): the examples reference them by name.
export PROD_EU_1_ENCODER_SECRET=demo-encoder-secret
export PROD_EU_1_EXTERNAL_JAAS='org.apache.kafka.common.security.scram.ScramLoginModule required;'
export PROD_EU_1_EXTERNAL_KEYSTORE_PASSWORD=demo-keystore-password

step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
step "validate the example fleet (examples/fleet)"
reconciler --repo examples/fleet validate
