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

# The first cluster on real brokers: clusters/local-dev, three Kafka 3.9 brokers (Apache Kafka's own jars, from
# Maven) under its chroot of the demo ZooKeeper. Without Java and Maven the demo says so and goes on simulated.
KAFKA_DIR=.local/demo-kafka
KAFKA_PORTS=${DEMO_KAFKA_PORTS:-19092,19093,19094}
REAL=.local/demo-repo
rm -rf "$REAL" && mkdir -p "$REAL/clusters" && cp -r clusters/local-dev "$REAL/clusters/"
sed -i "s/127.0.0.1:2181/127.0.0.1:$PORT/; s/127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094/$(echo "$KAFKA_PORTS" | sed 's/\([0-9]*\)/127.0.0.1:\1/g')/" \
  "$REAL/clusters/local-dev/cluster.yaml"
if command -v java >/dev/null && command -v mvn >/dev/null; then
  step "0. real brokers: three Kafka 3.9 brokers for clusters/local-dev (scripts/local-kafka.sh)"
  bash scripts/local-kafka.sh stop --dir "$KAFKA_DIR" 2>/dev/null || true
  bash scripts/local-kafka.sh start --dir "$KAFKA_DIR" --brokers 3 --ports "$KAFKA_PORTS" \
    --zookeeper "127.0.0.1:$PORT/kafka/local-dev"
  step "0a. validate, plan and apply --verify clusters/local-dev on them"
  reconciler --repo "$REAL" validate local-dev
  reconciler --repo "$REAL" plan local-dev --out .local/demo-local-dev-plan.json
  reconciler --repo "$REAL" apply .local/demo-local-dev-plan.json --auto-approve --verify
  step "0b. what the brokers themselves report (Kafka's own kafka-configs.sh, through their Admin API)"
  LIBS=$(bash scripts/kafka-jars.sh)
  BOOTSTRAP=$(echo "$KAFKA_PORTS" | sed 's/\([0-9]*\)/127.0.0.1:\1/g')
  # (the tool's own log4j warnings dropped: it has no log configuration of its own here)
  java -cp "$LIBS/*" kafka.admin.ConfigCommand --bootstrap-server "$BOOTSTRAP" --describe \
    --entity-type brokers --entity-default 2>/dev/null
  java -cp "$LIBS/*" kafka.admin.ConfigCommand --bootstrap-server "$BOOTSTRAP" --describe \
    --entity-type topics --entity-name events 2>/dev/null
else
  step "0. real brokers skipped: no Java and Maven here (the example fleet below runs on simulated brokers)"
fi

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
step "done. Stop the brokers and the local ZooKeeper with: bash scripts/local-kafka.sh stop --dir $KAFKA_DIR; bash scripts/local-zookeeper.sh stop --dir $ZK_DIR"
