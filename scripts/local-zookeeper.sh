#!/usr/bin/env bash
# A standalone ZooKeeper on 127.0.0.1 for demos and tests, without systemd.
#   scripts/local-zookeeper.sh start|stop|status [--port N] [--dir D]
# Config, data, logs and the PID file live in D (default .local/zookeeper under the repo). Installs Debian's
# zookeeper package when it is missing. Messages go to stderr; only `status` prints its answer on stdout.
# Exit codes: 0 ok (status: running), 1 error, 3 status: stopped.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'local-zookeeper: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() { log "usage: $0 start|stop|status [--port N] [--dir D]"; exit 1; }

CMD=${1:-}; [ $# -gt 0 ] && shift
PORT=""; DIR="$REPO/.local/zookeeper"
while [ $# -gt 0 ]; do
  case "$1" in
    --port) [ $# -ge 2 ] || usage; PORT=$2; shift 2 ;;
    --port=*) PORT=${1#--port=}; shift ;;
    --dir) [ $# -ge 2 ] || usage; DIR=$2; shift 2 ;;
    --dir=*) DIR=${1#--dir=}; shift ;;
    *) usage ;;
  esac
done
case "$CMD" in start|stop|status) ;; *) usage ;; esac
[ -z "$PORT" ] || [[ "$PORT" =~ ^[0-9]+$ && "$PORT" -ge 1 && "$PORT" -le 65535 ]] || die "invalid port: $PORT"

[ "$CMD" != start ] || mkdir -p "$DIR"   # status/stop of a directory never used: simply "stopped"
[ ! -d "$DIR" ] || DIR=$(cd "$DIR" && pwd)   # absolute: the PID check matches it in the server's command line
CFG="$DIR/conf/zoo.cfg"
PIDFILE="$DIR/zookeeper.pid"
OUT="$DIR/log/zookeeper.out"

# The port recorded in an existing config, so status/stop/start need no --port after the first start.
configured_port() { [ ! -f "$CFG" ] || sed -n 's/^clientPort=\([0-9]*\)$/\1/p' "$CFG" | head -n1; }

# The PID from the PID file if that process is alive and is our server (guards against PID reuse).
our_pid() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$CFG" || return 1
  echo "$pid"
}

# shellcheck source=lib/process.sh
source "$REPO/scripts/lib/process.sh"  # alive PID

# Send a four-letter word with bash's /dev/tcp (nc may be missing); prints the answer.
four_letter() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf %s "$2" >&3 && cat <&3' _ "$1" "$2" 2>/dev/null || true
}
port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }
# Serving = answers imok to ruok AND srvr reports a mode (ruok alone answers before the server is up).
serving() { [ "$(four_letter "$1" ruok)" = imok ] && four_letter "$1" srvr | grep -q '^Mode:'; }

classpath() {
  local cp="" j
  if compgen -G "/usr/share/zookeeper/lib/*.jar" >/dev/null; then   # upstream tarball layout
    for j in /usr/share/zookeeper/*.jar /usr/share/zookeeper/lib/*.jar; do [ -f "$j" ] && cp="$cp:$j"; done
  fi
  # Debian: zookeeper.jar's manifest Class-Path pulls in its dependencies; add a log4j binding for slf4j.
  for j in /usr/share/java/zookeeper.jar /usr/share/java/zookeeper-jute.jar \
           /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar; do
    [ -f "$j" ] && cp="$cp:$j"
  done
  echo "${cp#:}"
}

ensure_installed() {
  if [ -f /usr/share/java/zookeeper.jar ] || compgen -G "/usr/share/zookeeper/lib/zookeeper-*.jar" >/dev/null; then
    command -v java >/dev/null || die "java is missing (Debian: apt-get install -y default-jre-headless)"
    return 0
  fi
  log "installing Debian's zookeeper package"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq zookeeper >&2 || die "apt-get install zookeeper failed"
  [ -f /usr/share/java/zookeeper.jar ] || die "zookeeper package installed but /usr/share/java/zookeeper.jar is missing"
  command -v java >/dev/null || die "java is missing after installing zookeeper"
}

write_config() {
  mkdir -p "$DIR/conf" "$DIR/data" "$DIR/log"
  cat >"$CFG" <<EOF
# written by scripts/local-zookeeper.sh (standalone, loopback only)
tickTime=2000
dataDir=$DIR/data
clientPort=$PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr
# keep a test/demo dir small: 16 MB log preallocation, purge old snapshots hourly
preAllocSize=16384
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
EOF
  cat >"$DIR/conf/log4j.properties" <<EOF
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.RollingFileAppender
log4j.appender.FILE.File=$DIR/log/zookeeper.log
log4j.appender.FILE.MaxFileSize=10MB
log4j.appender.FILE.MaxBackupIndex=2
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
EOF
}

cmd_status() {
  local pid port
  port=${PORT:-$(configured_port)}
  if pid=$(our_pid); then
    echo "running (pid $pid, port ${port:-?}, dir $DIR)"
    exit 0
  fi
  echo "stopped (port ${port:-?}, dir $DIR)"
  exit 3
}

cmd_stop() {
  local pid i
  if ! pid=$(our_pid); then
    rm -f "$PIDFILE"
    log "not running (dir $DIR)"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do   # up to 10 s, then SIGKILL
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    log "pid $pid did not stop after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  fi
  alive "$pid" && die "pid $pid is still alive"
  rm -f "$PIDFILE"
  log "stopped (pid $pid)"
}

cmd_start() {
  local pid running_port java cp i
  running_port=$(configured_port || true)
  if pid=$(our_pid); then
    if [ -n "$PORT" ] && [ "$PORT" != "$running_port" ]; then
      die "already running on port $running_port (pid $pid, dir $DIR); stop it first to use port $PORT"
    fi
    log "already running (pid $pid, port $running_port, dir $DIR)"
    return 0
  fi
  rm -f "$PIDFILE"
  PORT=${PORT:-${running_port:-2181}}
  ensure_installed
  port_open "$PORT" && die "port $PORT on 127.0.0.1 is already in use by another process"
  write_config
  java=$(command -v java)
  cp=$(classpath)
  # setsid: the server must not die with the caller's terminal or process group. The heap is Kafka's own
  # bin/zookeeper-server-start.sh default (KAFKA_HEAP_OPTS="-Xmx512M -Xms512M"): 256 MB ran out (OOM, the
  # server gone) once a demo cluster had 10,000 topics and the change notifications of a few bulk applies.
  setsid "$java" -Xmx512m -Xms512m -XX:+UseSerialGC \
    -Dzookeeper.log.dir="$DIR/log" -Dlog4j.configuration="file:$DIR/conf/log4j.properties" \
    -Dzookeeper.admin.enableServer=false -Dzookeeper.jmx.log4j.disable=true \
    -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$CFG" \
    </dev/null >>"$OUT" 2>&1 &
  pid=$!
  echo "$pid" >"$PIDFILE"
  for i in $(seq 1 300); do   # up to ~30 s
    if ! alive "$pid"; then
      log "server exited during start-up; last lines of $OUT and $DIR/log/zookeeper.log:"
      tail -n 20 "$OUT" "$DIR/log/zookeeper.log" >&2 2>/dev/null || true
      rm -f "$PIDFILE"
      exit 1
    fi
    if serving "$PORT"; then
      log "started (pid $pid, port $PORT, dir $DIR)"
      return 0
    fi
    sleep 0.1
  done
  log "server did not answer imok within 30 s; stopping it. Last lines of its log:"
  tail -n 20 "$DIR/log/zookeeper.log" >&2 2>/dev/null || true
  cmd_stop
  exit 1
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
esac
