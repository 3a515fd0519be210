#!/usr/bin/env bash
# Real ZooKeeper-mode Kafka brokers (Apache Kafka's own jars, kafka/pom.xml) on 127.0.0.1, for the demo and
# the tests. Without systemd; everything lives in D.
#   scripts/local-kafka.sh start  --dir D [--brokers N] [--zookeeper HOST:PORT/CHROOT] [--ports P1,P2,…]
#                                 [--secret-file F] [--old-secret-file F] [--properties F] [--only ID]
#                                 [--sasl-ports Q1,Q2,…] [--racks R1,R2,…]
#   scripts/local-kafka.sh stop   --dir D [--only ID]
#   scripts/local-kafka.sh status --dir D
# start: without --zookeeper, a ZooKeeper of its own (scripts/local-zookeeper.sh, in D/zookeeper) with the
# chroot /kafka. Broker i has broker.id=i (1..N) and a PLAINTEXT listener on 127.0.0.1:P_i (free ports when
# --ports is absent). password.encoder.secret comes from F (default: a random one in D/encoder-secret);
# --properties appends a file to every broker's server.properties. --sasl-ports adds a SASL_PLAINTEXT listener
# per broker (SCRAM-SHA-256 and -512 from ZooKeeper's credentials) and Kafka's ZooKeeper authorizer
# (AclAuthorizer; the PLAINTEXT listener's ANONYMOUS principal is the super user, everyone else needs ACLs).
# --racks gives broker i broker.rack=R_i (rack-aware placement). The brokers' connection facts are
# written to D/cluster.env (ZK_CONNECT, BOOTSTRAP, BROKERS, ENCODER_SECRET_FILE); start waits until every
# broker has registered and serves. --only ID starts or stops one broker of an existing D (a restart
# keeps its data and config). stop: SIGTERM, then SIGKILL after 20 s, by the recorded pids.
# Messages go to stderr; `status` prints on stdout. Exit codes: 0 ok (status: all running), 1 error,
# 3 status: not all running.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'local-kafka: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { log "usage: $0 start|stop|status --dir D [--brokers N] [--zookeeper CONNECT] [--ports P,…] [--secret-file F] [--old-secret-file F] [--properties F] [--only ID]"; exit 1; }

CMD=${1:-}; [ $# -gt 0 ] && shift
DIR=""; BROKERS=3; ZK=""; PORTS=""; SECRET_FILE=""; OLD_SECRET_FILE=""; PROPS=""; ONLY=""; SASL_PORTS=""; RACKS=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --dir) DIR=$2 ;; --brokers) BROKERS=$2 ;; --zookeeper) ZK=$2 ;; --ports) PORTS=$2 ;;
    --secret-file) SECRET_FILE=$2 ;; --old-secret-file) OLD_SECRET_FILE=$2 ;; --properties) PROPS=$2 ;;
    --only) ONLY=$2 ;; --sasl-ports) SASL_PORTS=$2 ;; --racks) RACKS=$2 ;;
    *) usage ;;
  esac
  shift 2
done
case "$CMD" in start|stop|status) ;; *) usage ;; esac
[ -n "$DIR" ] || usage
[[ "$BROKERS" =~ ^[1-9][0-9]?$ ]] || die "invalid --brokers: $BROKERS"
[ -z "$ONLY" ] || [[ "$ONLY" =~ ^[1-9][0-9]?$ ]] || die "invalid --only: $ONLY"
[ "$CMD" != start ] || mkdir -p "$DIR"
[ ! -d "$DIR" ] || DIR=$(cd "$DIR" && pwd)
ENV_FILE="$DIR/cluster.env"

port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }
# shellcheck source=lib/process.sh
source "$REPO/scripts/lib/process.sh"  # alive PID
# The pid of broker $1 if it is alive and is that broker (its cmdline names its server.properties).
broker_pid() {
  local pidfile="$DIR/broker-$1/kafka.pid" pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$DIR/broker-$1/server.properties" || return 1
  echo "$pid"
}
broker_ids() {  # the brokers of D (from cluster.env), or just --only
  if [ -n "$ONLY" ]; then echo "$ONLY"; return; fi
  if [ -f "$ENV_FILE" ]; then (. "$ENV_FILE"; echo "$BROKERS" | tr ',' ' '); else seq 1 "$BROKERS"; fi
}
free_port() {  # a loopback port nothing listens on now, below the ephemeral range (a restarted broker must not
  # find its port taken as some client connection's source port); the caller may still lose a race
  local p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 200); do
    p=$((10000 + RANDOM % (low - 10000)))
    port_open "$p" || { echo "$p"; return; }
  done
  die "no free port found"
}

stop_broker() {
  local id=$1 pid
  pid=$(broker_pid "$id") || { rm -f "$DIR/broker-$id/kafka.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then
    log "broker $id (pid $pid) did not stop after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  fi
  alive "$pid" && die "broker $id (pid $pid) is still alive"
  rm -f "$DIR/broker-$id/kafka.pid"
  log "stopped broker $id (pid $pid)"
}

write_broker_config() {  # ID PORT [SASL_PORT [RACK]]
  local id=$1 port=$2 sasl=${3:-} rack=${4:-} b="$DIR/broker-$1" listeners
  mkdir -p "$b/data"
  listeners="PLAINTEXT://127.0.0.1:$port${sasl:+,SASL_PLAINTEXT://127.0.0.1:$sasl}"
  {
    echo "# written by scripts/local-kafka.sh (ZooKeeper mode, loopback only)"
    echo "broker.id=$id"
    [ -z "$rack" ] || echo "broker.rack=$rack"
    echo "listeners=$listeners"
    echo "advertised.listeners=$listeners"
    if [ -n "$sasl" ]; then
      echo "inter.broker.listener.name=PLAINTEXT"
      echo "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"
      echo "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
      echo "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
      echo "authorizer.class.name=kafka.security.authorizer.AclAuthorizer"
      echo "super.users=User:ANONYMOUS"
      echo "allow.everyone.if.no.acl.found=false"
    fi
    echo "zookeeper.connect=$ZK_CONNECT"
    echo "zookeeper.session.timeout.ms=18000"
    echo "log.dirs=$b/data"
    echo "num.partitions=1"
    echo "auto.create.topics.enable=false"
    echo "offsets.topic.replication.factor=1"
    echo "offsets.topic.num.partitions=4"
    echo "transaction.state.log.replication.factor=1"
    echo "transaction.state.log.min.isr=1"
    echo "group.initial.rebalance.delay.ms=0"
    echo "log.segment.bytes=16777216"
    echo "controlled.shutdown.enable=true"
    # retention checked every 2 s (Kafka: 5 min): a lowered retention deletes within seconds, as tests measure
    echo "log.retention.check.interval.ms=2000"
    echo "password.encoder.secret=$(cat "$SECRET_FILE")"
    [ -z "$OLD_SECRET_FILE" ] || echo "password.encoder.old.secret=$(cat "$OLD_SECRET_FILE")"
    [ -z "$PROPS" ] || cat "$PROPS"
  } >"$b/server.properties"
  chmod 600 "$b/server.properties"
  cat >"$b/log4j.properties" <<L4J
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.RollingFileAppender
log4j.appender.FILE.File=$b/server.log
log4j.appender.FILE.MaxFileSize=20MB
log4j.appender.FILE.MaxBackupIndex=2
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
L4J
}

launch_broker() {  # ID
  local id=$1 b="$DIR/broker-$1"
  : >>"$b/server.log"
  # setsid: a broker must not die with the caller's terminal or process group.
  setsid java -Xmx512m -Xms192m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$b/log4j.properties" -Dkafka.logs.dir="$b" \
    -cp "$LIBS/*" kafka.Kafka "$b/server.properties" </dev/null >>"$b/stdout.log" 2>&1 &
  echo $! >"$b/kafka.pid"
}

wait_broker() {  # ID PORT: registered (its own log says started) and its listener accepts connections
  local id=$1 port=$2 b="$DIR/broker-$1" pid retried=0
  pid=$(cat "$b/kafka.pid")
  for _ in $(seq 1 900); do   # up to 90 s on a loaded 2-core machine
    if ! alive "$pid" && [ $retried -eq 0 ] && tail -n 60 "$b/server.log" 2>/dev/null \
        | grep -q "NodeExistsException" && tail -n 60 "$b/server.log" | grep -q "KafkaZkClient.registerBroker"; then
      # A run killed without a clean stop (the machine's processes ended): ZooKeeper restores the old broker's
      # session from its log and keeps its /brokers/ids/N until zookeeper.session.timeout.ms (18 s) has passed
      # since it started; Kafka's registerBroker refuses to start meanwhile (KafkaZkClient.checkedEphemeralCreate).
      retried=1
      log "broker $id: ZooKeeper still holds the registration of a broker $id that was not stopped cleanly;" \
        "starting it again once that session has expired (20 s)"
      # the brokers were launched together: once one has waited, the others' old sessions have expired too
      [ -n "${STALE_SESSIONS_WAITED:-}" ] || sleep 20
      STALE_SESSIONS_WAITED=1
      launch_broker "$id"
      pid=$(cat "$b/kafka.pid")
      continue
    fi
    if ! alive "$pid"; then
      log "broker $id exited during start-up; last lines of $b/server.log:"
      tail -n 30 "$b/server.log" "$b/stdout.log" >&2 2>/dev/null || true
      rm -f "$b/kafka.pid"
      return 1
    fi
    if grep -q "\[KafkaServer id=$id\] started" "$b/server.log" 2>/dev/null && port_open "$port"; then
      return 0
    fi
    sleep 0.1
  done
  log "broker $id did not start within 90 s; last lines of $b/server.log:"
  tail -n 30 "$b/server.log" >&2 2>/dev/null || true
  return 1
}

cmd_start() {
  local id port ids=() ports=() i
  LIBS=$(bash "$REPO/scripts/kafka-jars.sh")
  if [ -n "$ONLY" ]; then   # restart one broker of an existing cluster with its config as it was
    [ -f "$ENV_FILE" ] || die "no cluster in $DIR (start it first without --only)"
    if broker_pid "$ONLY" >/dev/null; then log "broker $ONLY already running"; return 0; fi
    port=$(sed -n 's/^listeners=PLAINTEXT:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$DIR/broker-$ONLY/server.properties")
    launch_broker "$ONLY"
    wait_broker "$ONLY" "$port" || die "broker $ONLY did not start"
    log "started broker $ONLY (pid $(cat "$DIR/broker-$ONLY/kafka.pid"), port $port)"
    return 0
  fi
  for i in $(seq 1 "$BROKERS"); do
    if broker_pid "$i" >/dev/null; then die "broker $i of $DIR is already running; stop it first"; fi
  done
  if [ -z "$ZK" ]; then
    local zkport
    zkport=$(free_port)
    bash "$REPO/scripts/local-zookeeper.sh" start --port "$zkport" --dir "$DIR/zookeeper"
    zkport=$(sed -n 's/^clientPort=\([0-9]*\)$/\1/p' "$DIR/zookeeper/conf/zoo.cfg")
    ZK="127.0.0.1:$zkport/kafka"
  fi
  ZK_CONNECT=$ZK
  if [ -z "$SECRET_FILE" ]; then
    SECRET_FILE="$DIR/encoder-secret"
    [ -s "$SECRET_FILE" ] || (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"$SECRET_FILE")
  fi
  [ -r "$SECRET_FILE" ] || die "cannot read --secret-file $SECRET_FILE"
  local sasl_ports=() racks=()
  if [ -n "$PORTS" ]; then IFS=',' read -r -a ports <<<"$PORTS"; fi
  if [ -n "$RACKS" ]; then IFS=',' read -r -a racks <<<"$RACKS"; fi
  [ ${#racks[@]} -eq 0 ] || [ ${#racks[@]} -eq "$BROKERS" ] || die "--racks needs $BROKERS racks"
  if [ -n "$SASL_PORTS" ]; then IFS=',' read -r -a sasl_ports <<<"$SASL_PORTS"; fi
  [ ${#sasl_ports[@]} -eq 0 ] || [ ${#sasl_ports[@]} -eq "$BROKERS" ] || die "--sasl-ports needs $BROKERS ports"
  [ ${#ports[@]} -eq 0 ] || [ ${#ports[@]} -eq "$BROKERS" ] || die "--ports needs $BROKERS ports"
  local bootstrap=""
  for i in $(seq 1 "$BROKERS"); do
    [ ${#ports[@]} -ge "$i" ] || ports+=("$(free_port)")
    port=${ports[$((i-1))]}
    port_open "$port" && die "port $port on 127.0.0.1 is already in use"
    write_broker_config "$i" "$port" "${sasl_ports[$((i-1))]:-}" "${racks[$((i-1))]:-}"
    ids+=("$i"); bootstrap="$bootstrap,127.0.0.1:$port"
  done
  {
    echo "ZK_CONNECT=$ZK_CONNECT"
    echo "BOOTSTRAP=${bootstrap#,}"
    echo "BROKERS=$(IFS=,; echo "${ids[*]}")"
    echo "ENCODER_SECRET_FILE=$SECRET_FILE"
    [ ${#sasl_ports[@]} -eq 0 ] || echo "SASL_BOOTSTRAP=$(printf '127.0.0.1:%s,' "${sasl_ports[@]}" | sed 's/,$//')"
  } >"$ENV_FILE"
  for i in "${ids[@]}"; do launch_broker "$i"; done
  for i in "${ids[@]}"; do
    if ! wait_broker "$i" "${ports[$((i-1))]}"; then
      for id in "${ids[@]}"; do stop_broker "$id"; done
      die "broker $i did not start"
    fi
  done
  log "started ${#ids[@]} brokers (bootstrap ${bootstrap#,}, zookeeper $ZK_CONNECT, dir $DIR)"
}

cmd_stop() {
  local id
  for id in $(broker_ids); do stop_broker "$id"; done
  if [ -z "$ONLY" ] && [ -d "$DIR/zookeeper" ]; then
    bash "$REPO/scripts/local-zookeeper.sh" stop --dir "$DIR/zookeeper"
  fi
}

cmd_status() {
  local id pid all=0
  [ -f "$ENV_FILE" ] || { echo "stopped (dir $DIR)"; exit 3; }
  for id in $(broker_ids); do
    if pid=$(broker_pid "$id"); then echo "broker $id: running (pid $pid)"; else echo "broker $id: stopped"; all=3; fi
  done
  exit $all
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
esac
