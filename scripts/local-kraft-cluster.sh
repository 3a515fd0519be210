#!/usr/bin/env bash
# A real multi-node KRaft Kafka (every node combined: process.roles=broker,controller, all of them voters) on
# 127.0.0.1, from Apache Kafka's own jars (scripts/kafka-jars.sh: 4.x from kafka/pom-4.xml, 3.9 from kafka/pom.xml),
# with broker.rack per node: replica placement and reassignments need several brokers (scripts/local-kraft.sh
# starts one node). Without systemd; everything lives in D (node i in D/node-i).
#   scripts/local-kraft-cluster.sh start  --dir D [--version 4.x|3.9] [--nodes N] [--racks R1,R2,…]
#   scripts/local-kraft-cluster.sh stop   --dir D
#   scripts/local-kraft-cluster.sh status --dir D
# start: formats each node's storage (kafka.tools.StorageTool, one cluster id, the fixed voter set
# controller.quorum.voters 1..N), starts kafka.Kafka for each and waits until each says "Kafka Server started" and
# its listener accepts connections. Node i has node.id=i, a PLAINTEXT listener and a CONTROLLER listener on free
# ports and broker.rack=R_i when --racks is given (default 3 nodes); Kafka's KRaft authorizer (StandardAuthorizer;
# the PLAINTEXT listener's ANONYMOUS principal is the super user), as scripts/local-kraft.sh. Connection facts go to
# D/cluster.env (BOOTSTRAP, BROKERS, KAFKA_VERSION). stop: SIGTERM, then SIGKILL after 20 s, by the recorded pids.
# Messages go to stderr; `status` prints on stdout. Exit codes: 0 ok (status: all running), 1 error, 3 status: not
# all running.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'local-kraft-cluster: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { log "usage: $0 start|stop|status --dir D [--version 4.x|3.9] [--nodes N] [--racks R1,R2,…]"; exit 1; }

CMD=${1:-}; [ $# -gt 0 ] && shift
DIR=""; VERSION=4.x; NODES=3; RACKS=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --dir) DIR=$2 ;; --version) VERSION=$2 ;; --nodes) NODES=$2 ;; --racks) RACKS=$2 ;;
    *) usage ;;
  esac
  shift 2
done
case "$CMD" in start|stop|status) ;; *) usage ;; esac
case "$VERSION" in 4.x|4|3.9) ;; *) die "invalid --version $VERSION (4.x or 3.9)" ;; esac
[[ "$NODES" =~ ^[1-9]$ ]] || die "invalid --nodes: $NODES"
[ -n "$DIR" ] || usage
[ "$CMD" != start ] || mkdir -p "$DIR"
[ ! -d "$DIR" ] || DIR=$(cd "$DIR" && pwd)
ENV_FILE="$DIR/cluster.env"

port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }
# shellcheck source=lib/process.sh
source "$REPO/scripts/lib/process.sh"  # alive PID
node_pid() {  # the pid of node $1 if alive and it is that node (its cmdline names its server.properties)
  local pidfile="$DIR/node-$1/kafka.pid" pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$DIR/node-$1/server.properties" || return 1
  echo "$pid"
}
free_port() {  # as scripts/local-kraft.sh: below the ephemeral range; the caller may still lose a race
  local p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 200); do
    p=$((10000 + RANDOM % (low - 10000)))
    port_open "$p" || { echo "$p"; return; }
  done
  die "no free port found"
}

JVM=(java -Xmx256m -Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -Djava.awt.headless=true)

write_config() {  # NODE PORT VOTERS RACK
  local n=$1 port=$2 voters=$3 rack=$4 cport=$5 d="$DIR/node-$1"
  mkdir -p "$d/data"
  {
    echo "# written by scripts/local-kraft-cluster.sh (KRaft combined mode, loopback only)"
    echo "process.roles=broker,controller"
    echo "node.id=$n"
    echo "controller.quorum.voters=$voters"
    echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
    echo "controller.listener.names=CONTROLLER"
    echo "inter.broker.listener.name=PLAINTEXT"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    [ -z "$rack" ] || echo "broker.rack=$rack"
    echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    echo "super.users=User:ANONYMOUS"
    echo "allow.everyone.if.no.acl.found=false"
    echo "log.dirs=$d/data"
    echo "num.partitions=1"
    echo "auto.create.topics.enable=false"
    echo "offsets.topic.replication.factor=1"
    echo "offsets.topic.num.partitions=1"
    echo "transaction.state.log.replication.factor=1"
    echo "transaction.state.log.min.isr=1"
    echo "share.coordinator.state.topic.replication.factor=1"
    echo "share.coordinator.state.topic.min.isr=1"
    echo "group.initial.rebalance.delay.ms=0"
    echo "log.segment.bytes=16777216"
    echo "metadata.log.segment.ms=600000"
  } >"$d/server.properties"
  chmod 600 "$d/server.properties"
  cat >"$d/log4j2.properties" <<L4J2
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=FILE
appender.file.type=File
appender.file.name=FILE
appender.file.fileName=$d/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.request.name=kafka.request.logger
logger.request.level=WARN
logger.state.name=state.change.logger
logger.state.level=WARN
L4J2
  cat >"$d/log4j.properties" <<L4J
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$d/server.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
L4J
}

logopts() { echo "-Dlog4j.configuration=file:$DIR/node-$1/log4j.properties -Dlog4j2.configurationFile=$DIR/node-$1/log4j2.properties"; }

cmd_start() {
  local libs cluster_id i ports=() cports=() racks=() voters="" bootstrap="" ids=()
  if [ "$VERSION" = 3.9 ]; then libs=$(bash "$REPO/scripts/kafka-jars.sh"); else libs=$(bash "$REPO/scripts/kafka-jars.sh" --pom kafka/pom-4.xml); fi
  for i in $(seq 1 "$NODES"); do
    if node_pid "$i" >/dev/null; then die "node $i of $DIR is already running; stop it first"; fi
  done
  if [ -n "$RACKS" ]; then IFS=',' read -r -a racks <<<"$RACKS"; fi
  [ ${#racks[@]} -eq 0 ] || [ ${#racks[@]} -eq "$NODES" ] || die "--racks needs $NODES racks"
  for i in $(seq 1 "$NODES"); do
    ports+=("$(free_port)"); cports+=("$(free_port)")
    voters="$voters,$i@127.0.0.1:${cports[$((i-1))]}"
    bootstrap="$bootstrap,127.0.0.1:${ports[$((i-1))]}"
    ids+=("$i")
  done
  cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
  for i in "${ids[@]}"; do
    rm -rf "$DIR/node-$i/data"
    write_config "$i" "${ports[$((i-1))]}" "${voters#,}" "${racks[$((i-1))]:-}" "${cports[$((i-1))]}"
    # shellcheck disable=SC2046
    if ! "${JVM[@]}" $(logopts "$i") -cp "$libs/*" kafka.tools.StorageTool format \
          --config "$DIR/node-$i/server.properties" --cluster-id "$cluster_id" --ignore-formatted \
          >"$DIR/node-$i/format.log" 2>&1; then
      tail -n 20 "$DIR/node-$i/format.log" >&2
      die "kafka.tools.StorageTool format failed for node $i"
    fi
  done
  {
    echo "BOOTSTRAP=${bootstrap#,}"
    echo "BROKERS=$(IFS=,; echo "${ids[*]}")"
    echo "KAFKA_VERSION=$VERSION"
    echo "CLUSTER_ID=$cluster_id"
  } >"$ENV_FILE"
  for i in "${ids[@]}"; do
    : >>"$DIR/node-$i/server.log"
    # shellcheck disable=SC2046
    setsid "${JVM[@]}" $(logopts "$i") -Dkafka.logs.dir="$DIR/node-$i" \
      -cp "$libs/*" kafka.Kafka "$DIR/node-$i/server.properties" </dev/null >>"$DIR/node-$i/stdout.log" 2>&1 &
    echo $! >"$DIR/node-$i/kafka.pid"
  done
  for i in "${ids[@]}"; do
    local pid started=""
    pid=$(cat "$DIR/node-$i/kafka.pid")
    for _ in $(seq 1 1200); do   # up to 120 s on a loaded 2-core machine
      if ! alive "$pid"; then
        log "node $i exited during start-up; last lines of its log:"
        tail -n 30 "$DIR/node-$i/server.log" "$DIR/node-$i/stdout.log" >&2 2>/dev/null || true
        break
      fi
      if grep -q "Kafka Server started" "$DIR/node-$i/server.log" 2>/dev/null && port_open "${ports[$((i-1))]}"; then
        started=1; break
      fi
      sleep 0.1
    done
    if [ -z "$started" ]; then
      cmd_stop
      die "node $i did not start"
    fi
  done
  log "started $NODES KRaft $VERSION nodes (bootstrap ${bootstrap#,}, dir $DIR)"
}

cmd_stop() {
  local i pid
  for d in "$DIR"/node-*; do
    [ -d "$d" ] || continue
    i=${d##*/node-}
    pid=$(node_pid "$i") || { rm -f "$d/kafka.pid"; continue; }
    kill -TERM "$pid" 2>/dev/null || true
  done
  for d in "$DIR"/node-*; do
    [ -d "$d" ] || continue
    i=${d##*/node-}
    pid=$(node_pid "$i") || continue
    for _ in $(seq 1 200); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      log "node $i (pid $pid) did not stop after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    fi
    alive "$pid" && die "node $i (pid $pid) is still alive"
    rm -f "$d/kafka.pid"
    log "stopped node $i (pid $pid)"
  done
}

cmd_status() {
  local i pid all=0
  [ -f "$ENV_FILE" ] || { echo "stopped (dir $DIR)"; exit 3; }
  for i in $(. "$ENV_FILE"; echo "$BROKERS" | tr ',' ' '); do
    if pid=$(node_pid "$i"); then echo "node $i: running (pid $pid)"; else echo "node $i: stopped"; all=3; fi
  done
  exit $all
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
esac
