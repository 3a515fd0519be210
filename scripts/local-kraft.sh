#!/usr/bin/env bash
# A real single-node KRaft Kafka (combined mode: process.roles=broker,controller) on 127.0.0.1, from Apache
# Kafka's own jars (scripts/kafka-jars.sh: 4.x from kafka/pom-4.xml, 3.9 from kafka/pom.xml), for the tests
# and the demo. Without systemd; everything lives in D.
#   scripts/local-kraft.sh start  --dir D [--version 4.x|3.9] [--port P] [--controller-port C] [--properties F]
#   scripts/local-kraft.sh stop   --dir D
#   scripts/local-kraft.sh status --dir D
# start: formats D/data (kafka.tools.StorageTool format with a fixed voter set, controller.quorum.voters:
# node 1 is the only voter, so no --standalone is needed on either line), starts kafka.Kafka and waits until
# it says "Kafka Server started" and its listener accepts connections. The node has node.id=1, a PLAINTEXT
# listener on P and a CONTROLLER listener on C (free ports when absent), Kafka's KRaft authorizer
# (StandardAuthorizer; the PLAINTEXT listener's ANONYMOUS principal is the super user). Connection facts go to
# D/cluster.env (BOOTSTRAP, BROKERS, KAFKA_VERSION). --properties appends a file to server.properties.
# Environment (for large benches, bench/kraft.py): LOCAL_KRAFT_HEAP sets -Xmx (default 256m; 10,000 topics need
# ~1g); LOCAL_KRAFT_QUIET=1 logs the controller's per-record replay and the per-partition log lines at WARN only.
# stop: SIGTERM, then SIGKILL after 20 s, by the recorded pid. Messages go to stderr; `status` prints on
# stdout. Exit codes: 0 ok (status: running), 1 error, 3 status: stopped.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'local-kraft: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { log "usage: $0 start|stop|status --dir D [--version 4.x|3.9] [--port P] [--controller-port C] [--properties F]"; exit 1; }

CMD=${1:-}; [ $# -gt 0 ] && shift
DIR=""; VERSION=4.x; PORT=""; CPORT=""; PROPS=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --dir) DIR=$2 ;; --version) VERSION=$2 ;; --port) PORT=$2 ;; --controller-port) CPORT=$2 ;;
    --properties) PROPS=$2 ;;
    *) usage ;;
  esac
  shift 2
done
case "$CMD" in start|stop|status) ;; *) usage ;; esac
case "$VERSION" in 4.x|4|3.9) ;; *) die "invalid --version $VERSION (4.x or 3.9)" ;; esac
[ -n "$DIR" ] || usage
[ "$CMD" != start ] || mkdir -p "$DIR"
[ ! -d "$DIR" ] || DIR=$(cd "$DIR" && pwd)
ENV_FILE="$DIR/cluster.env"
PIDFILE="$DIR/kafka.pid"

port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }
# shellcheck source=lib/process.sh
source "$REPO/scripts/lib/process.sh"  # alive PID
node_pid() {  # the pid if alive and it is this node (its cmdline names D/server.properties)
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$DIR/server.properties" || return 1
  echo "$pid"
}
free_port() {  # as scripts/local-kafka.sh: below the ephemeral range; the caller may still lose a race
  local p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 200); do
    p=$((10000 + RANDOM % (low - 10000)))
    port_open "$p" || { echo "$p"; return; }
  done
  die "no free port found"
}

JVM=(java "-Xmx${LOCAL_KRAFT_HEAP:-256m}" -Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -Djava.awt.headless=true)

quiet_loggers() {  # LOCAL_KRAFT_QUIET=1: a line per record or partition is too many for 10,000 topics
  [ "${LOCAL_KRAFT_QUIET:-0}" = 1 ] || return 0
  local name i=0
  for name in org.apache.kafka.controller kafka.cluster.Partition kafka.log.LogManager \
              org.apache.kafka.storage.internals.log kafka.server.metadata.DynamicConfigPublisher; do
    i=$((i + 1))
    if [ "$1" = log4j2 ]; then printf 'logger.quiet%d.name=%s\nlogger.quiet%d.level=WARN\n' "$i" "$name" "$i"
    else printf 'log4j.logger.%s=WARN\n' "$name"; fi
  done
}

write_config() {
  mkdir -p "$DIR/data"
  {
    echo "# written by scripts/local-kraft.sh (KRaft combined mode, loopback only)"
    echo "process.roles=broker,controller"
    echo "node.id=1"
    echo "controller.quorum.voters=1@127.0.0.1:$CPORT"
    echo "listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$PORT"
    echo "controller.listener.names=CONTROLLER"
    echo "inter.broker.listener.name=PLAINTEXT"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    echo "super.users=User:ANONYMOUS"
    echo "allow.everyone.if.no.acl.found=false"
    echo "log.dirs=$DIR/data"
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
    # retention checked every 2 s (Kafka: 5 min): a lowered retention deletes within seconds, as tests measure
    echo "log.retention.check.interval.ms=2000"
    [ -z "$PROPS" ] || cat "$PROPS"
  } >"$DIR/server.properties"
  chmod 600 "$DIR/server.properties"
  # 4.x logs through log4j 2, 3.9 through log4j 1 (reload4j): both files, each line picks its own.
  cat >"$DIR/log4j2.properties" <<L4J2
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=FILE
appender.file.type=File
appender.file.name=FILE
appender.file.fileName=$DIR/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.request.name=kafka.request.logger
logger.request.level=WARN
logger.state.name=state.change.logger
logger.state.level=WARN
$(quiet_loggers log4j2)
L4J2
  cat >"$DIR/log4j.properties" <<L4J
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$DIR/server.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
$(quiet_loggers log4j)
L4J
}

cmd_start() {
  local libs pid cluster_id
  if [ "$VERSION" = 3.9 ]; then libs=$(bash "$REPO/scripts/kafka-jars.sh"); else libs=$(bash "$REPO/scripts/kafka-jars.sh" --pom kafka/pom-4.xml); fi
  if node_pid >/dev/null; then die "the node of $DIR is already running; stop it first"; fi
  [ -n "$PORT" ] || PORT=$(free_port)
  [ -n "$CPORT" ] || { CPORT=$(free_port); [ "$CPORT" != "$PORT" ] || CPORT=$(free_port); }
  port_open "$PORT" && die "port $PORT on 127.0.0.1 is already in use"
  port_open "$CPORT" && die "port $CPORT on 127.0.0.1 is already in use"
  rm -rf "$DIR/data"
  write_config
  # A cluster id is a base64url UUID of 16 random bytes (Kafka's Uuid.randomUuid().toString()).
  cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
  local logopts=(-Dlog4j.configuration="file:$DIR/log4j.properties" -Dlog4j2.configurationFile="$DIR/log4j2.properties")
  if ! "${JVM[@]}" "${logopts[@]}" -cp "$libs/*" kafka.tools.StorageTool format --config "$DIR/server.properties" \
        --cluster-id "$cluster_id" --ignore-formatted >"$DIR/format.log" 2>&1; then
    tail -n 20 "$DIR/format.log" >&2
    die "kafka.tools.StorageTool format failed (log: $DIR/format.log)"
  fi
  : >>"$DIR/server.log"
  setsid "${JVM[@]}" "${logopts[@]}" -Dkafka.logs.dir="$DIR" \
    -cp "$libs/*" kafka.Kafka "$DIR/server.properties" </dev/null >>"$DIR/stdout.log" 2>&1 &
  pid=$!
  echo "$pid" >"$PIDFILE"
  {
    echo "BOOTSTRAP=127.0.0.1:$PORT"
    echo "CONTROLLER=127.0.0.1:$CPORT"
    echo "BROKERS=1"
    echo "KAFKA_VERSION=$VERSION"
    echo "CLUSTER_ID=$cluster_id"
  } >"$ENV_FILE"
  for _ in $(seq 1 900); do   # up to 90 s on a loaded 2-core machine
    if ! alive "$pid"; then
      log "the node exited during start-up; last lines of $DIR/server.log:"
      tail -n 30 "$DIR/server.log" "$DIR/stdout.log" >&2 2>/dev/null || true
      rm -f "$PIDFILE"
      die "the KRaft node did not start"
    fi
    if grep -q "Kafka Server started" "$DIR/server.log" 2>/dev/null && port_open "$PORT"; then
      log "started KRaft $VERSION node (pid $pid, bootstrap 127.0.0.1:$PORT, controller 127.0.0.1:$CPORT, dir $DIR)"
      return 0
    fi
    sleep 0.1
  done
  log "the node did not start within 90 s; last lines of $DIR/server.log:"
  tail -n 30 "$DIR/server.log" >&2 2>/dev/null || true
  cmd_stop
  die "the KRaft node did not start"
}

cmd_stop() {
  local pid
  pid=$(node_pid) || { rm -f "$PIDFILE"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then
    log "the node (pid $pid) did not stop after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  fi
  alive "$pid" && die "the node (pid $pid) is still alive"
  rm -f "$PIDFILE"
  log "stopped the KRaft node (pid $pid)"
}

cmd_status() {
  local pid
  if pid=$(node_pid); then echo "KRaft node: running (pid $pid)"; exit 0; fi
  echo "KRaft node: stopped (dir $DIR)"; exit 3
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
esac
