#!/usr/bin/env bash
# The main job on the local embedded default: set-up, a local ZooKeeper, and the example fleet taken through
# validate -> plan -> apply -> plan again (no changes) -> fleet impact of a change (Spark local[*]).
# Everything goes to a local ZooKeeper started by scripts/local-zookeeper.sh; nothing else is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
PORT=${DEMO_ZK_PORT:-2181}
ZK_DIR=.local/demo-zookeeper
bash scripts/local-zookeeper.sh start --port "$PORT" --dir "$ZK_DIR"

# The examples point at 127.0.0.1:2181; with another port, run on a copy whose connect strings say so.
FLEET=examples/fleet
if [ "$PORT" != 2181 ]; then
  FLEET=.local/demo-fleet
  rm -rf "$FLEET" && mkdir -p .local && cp -r examples/fleet "$FLEET"
  find "$FLEET" -name cluster.yaml -exec sed -i "s/127.0.0.1:2181/127.0.0.1:$PORT/" {} +
fi

# Demo-only secrets (never use these anywhere real): the examples reference them by name.
export PROD_EU_1_ENCODER_SECRET=demo-encoder-secret
export PROD_EU_1_EXTERNAL_JAAS='org.apache.kafka.common.security.scram.ScramLoginModule required;'
export PROD_EU_1_EXTERNAL_KEYSTORE_PASSWORD=demo-keystore-password
export RECONCILER_AUDIT_LOG="$PWD/.local/demo-audit.jsonl"

# Step headings in bold only where the reconciler would colour too (a terminal, NO_COLOR unset or empty),
# through the terminal's own capabilities (tput) rather than hard-coded escape codes.
BOLD="" PLAIN=""
if [ -t 2 ] && [ -z "${NO_COLOR:-}" ] && [ "${TERM:-dumb}" != dumb ]; then
  BOLD=$(tput bold 2>/dev/null || true) PLAIN=$(tput sgr0 2>/dev/null || true)
fi
step() { printf '\n%s== %s%s\n' "$BOLD" "$*" "$PLAIN" >&2; }

step "1. validate the example fleet ($FLEET)"
reconciler --repo "$FLEET" validate

step "2. SIMULATION: register fake brokers for the example clusters (no Kafka runs here)"
python scripts/simulate_brokers.py --repo "$FLEET"

step "3. plan (reads live state; writes nothing)"
set +e
reconciler --repo "$FLEET" plan --out .local/demo-plan.json --detailed-exitcode
code=$?
set -e
[ "$code" -eq 0 ] || [ "$code" -eq 2 ] || exit "$code"

step "4. apply exactly that plan (reconciler show .local/demo-plan.json renders it again)"
reconciler --repo "$FLEET" apply .local/demo-plan.json --auto-approve --allow-destructive

step "5. plan again: the live state now matches the manifests"
reconciler --repo "$FLEET" plan --detailed-exitcode

step "6. where an effective value comes from (live, and as the manifests make it)"
reconciler --repo "$FLEET" describe prod-eu-1 topics/orders retention.ms

if [ -f scripts/demo_impact.sh ]; then
  step "7. fleet impact of a change, computed with Spark local[*]"
  bash scripts/demo_impact.sh "$FLEET"
fi
step "done. Stop the local ZooKeeper with: bash scripts/local-zookeeper.sh stop --dir $ZK_DIR"
