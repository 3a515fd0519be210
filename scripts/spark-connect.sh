#!/usr/bin/env bash
# A Spark Connect server from the installed pyspark (its bundled Spark and spark-connect jar), for
# `reconciler impact --remote` / SPARK_REMOTE: a warm engine a PR check connects to instead of starting a JVM.
#   scripts/spark-connect.sh start|stop|status --dir D [--port P] [--ui-port U] [--master M] [--memory 2g]
#                                              [--host 127.0.0.1]
# start launches SparkConnectServer through pyspark's spark-submit (as sbin/start-connect-server.sh does, but
# with its PID, log and settings in D, nothing written into the Python environment), on a free port unless
# --port says which (the UI likewise, --ui-port), waits until the server accepts connections, writes
# D/connect.env (SPARK_REMOTE and RECONCILER_SPARK_UI_URL, for `set -a; . D/connect.env`) and prints the
# SPARK_REMOTE URL on stdout. Starting a running server prints the same URL again.
# --master spark://HOST:PORT puts the server in front of a standalone cluster (scripts/spark-standalone.sh);
# default local[*]. --memory is the server's (driver's) heap. --host is the address it binds and is named by
# (default loopback only; a shared server binds a reachable address, see docs/impact.md: who may reach it
# may run any query as this user). SPARK_CONNECT_AUTHENTICATE_TOKEN in start's environment makes the server
# require that bearer token (clients: the same variable, or ;token=...; gRPC then uses TLS unless the host is
# `localhost`).
# Server-side settings live here (a client cannot change them): the parallel GC, a heap that starts at its
# maximum, the JIT for huge methods (reconciler.impact.session), shuffle partitions sized to the master.
# stop ends exactly the process recorded in D (its command line carries D). Messages go to stderr.
# pyspark is found with $PYTHON (default .venv/bin/python). Exit codes: 0 ok (status: running), 1 error,
# 3 status: stopped.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'spark-connect: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() {
  log "usage: $0 start|stop|status --dir D [--port P] [--ui-port U] [--master M] [--memory M] [--host H]"; exit 1
}

CMD=${1:-}; [ $# -gt 0 ] && shift
DIR=""; PORT=""; UI_PORT=""; MASTER="local[*]"; MEMORY="2g"; HOST="127.0.0.1"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir|--port|--ui-port|--master|--memory|--host) [ $# -ge 2 ] || usage ;;&
    --dir) DIR=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --ui-port) UI_PORT=$2; shift 2 ;;
    --master) MASTER=$2; shift 2 ;;
    --memory) MEMORY=$2; shift 2 ;;
    --host) HOST=$2; shift 2 ;;
    *) usage ;;
  esac
done
case "$CMD" in start|stop|status) ;; *) usage ;; esac
[ -n "$DIR" ] || usage
for p in "$PORT" "$UI_PORT"; do
  [ -z "$p" ] || { [[ "$p" =~ ^[1-9][0-9]{0,4}$ ]] && [ "$p" -le 65535 ]; } || die "invalid port: $p"
done
[[ "$MEMORY" =~ ^[1-9][0-9]*[mMgG]$ ]] || die "invalid --memory: $MEMORY (e.g. 512m, 2g)"
[[ "$MASTER" =~ ^(local(\[([1-9][0-9]*|\*)\])?|spark://[A-Za-z0-9.-]+:[0-9]+)$ ]] \
  || die "invalid --master: $MASTER (local[*], local[N] or spark://host:port)"
[[ "$HOST" =~ ^[A-Za-z0-9.-]+$ ]] || die "invalid --host: $HOST"

[ "$CMD" != start ] || mkdir -p "$DIR"
[ ! -d "$DIR" ] || DIR=$(cd "$DIR" && pwd)   # absolute: the PID check matches it in the JVM's command line
PID_FILE="$DIR/connect.pid"
ENV_FILE="$DIR/connect.env"
MARK="-Dreconciler.spark.connect=$DIR"

# The PID in the PID file if that process is alive and is our server (PID reuse cannot fool us).
our_pid() {
  local pid
  [ -f "$PID_FILE" ] || return 1
  pid=$(cat "$PID_FILE" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$MARK" || return 1
  echo "$pid"
}
# shellcheck source=lib/process.sh
source "$REPO/scripts/lib/process.sh"  # alive PID
setting() { [ ! -f "$ENV_FILE" ] || sed -n "s/^$1=//p" "$ENV_FILE" | head -n1; }
answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

pyspark_dir() {
  local py=${PYTHON:-$REPO/.venv/bin/python}
  [ -x "$py" ] || py=$(command -v python3) || die "no Python found (run scripts/bootstrap.sh)"
  "$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null \
    || die "pyspark is not installed for $py (run scripts/bootstrap.sh, or set PYTHON)"
}

# A port nobody listens on now (the kernel's choice); the server is told to fail rather than take another.
free_port() {
  local py=${PYTHON:-$REPO/.venv/bin/python}
  [ -x "$py" ] || py=python3
  "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cmd_status() {
  local pid
  if pid=$(our_pid); then
    echo "running ($(setting SPARK_REMOTE), UI $(setting RECONCILER_SPARK_UI_URL), master $(setting MASTER), pid $pid, dir $DIR)"
    exit 0
  fi
  echo "stopped (dir $DIR)"
  exit 3
}

cmd_stop() {
  local pid i
  if pid=$(our_pid); then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 150); do alive "$pid" || break; sleep 0.1; done   # up to 15 s, then SIGKILL
    if alive "$pid"; then
      log "server (pid $pid) did not stop after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for i in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    fi
    alive "$pid" && die "server (pid $pid) is still alive"
    log "stopped the Spark Connect server (pid $pid)"
  else
    log "not running (dir $DIR)"
  fi
  rm -f "$PID_FILE" "$ENV_FILE"
}

cmd_start() {
  local pid home partitions cores i
  if pid=$(our_pid); then
    log "already running (pid $pid)"
    setting SPARK_REMOTE
    return 0
  fi
  rm -f "$PID_FILE" "$ENV_FILE"
  command -v java >/dev/null || die "java is required (Debian: default-jre-headless)"
  home=$(pyspark_dir)
  ls "$home"/jars/spark-connect_*.jar >/dev/null 2>&1 || die "$home/jars has no spark-connect jar"
  PORT=${PORT:-$(free_port)}
  UI_PORT=${UI_PORT:-$(free_port)}
  answers "$HOST" "$PORT" && die "port $PORT is taken on $HOST"
  # shuffle partitions as reconciler.impact.session sizes them for its own in-process Spark
  cores=$(nproc 2>/dev/null || echo 2)
  case "$MASTER" in
    local\[\*\]|local) partitions=$(( 2 * cores > 4 ? 2 * cores : 4 )) ;;
    local\[*\]) i=${MASTER#local[}; i=${i%]}; partitions=$(( 2 * i > 4 ? 2 * i : 4 )) ;;
    *) partitions=16 ;;
  esac
  mkdir -p "$DIR/local"
  cat >"$DIR/log4j2.properties" <<'EOF'
# Spark Connect server (scripts/spark-connect.sh): warnings and errors, and the server's start and stop lines
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = info
EOF
  : >"$DIR/connect.log"
  local heap=${MEMORY%[mMgG]} unit=${MEMORY: -1}
  SPARK_HOME="$home" SPARK_LOCAL_IP="$HOST" SPARK_LOCAL_DIRS="$DIR/local" SPARK_CONF_DIR="$DIR/conf-none" \
    setsid "$home/bin/spark-submit" \
      --master "$MASTER" --name kafka-reconciler-connect --driver-memory "$MEMORY" \
      --driver-java-options "-XX:+UseParallelGC -Xms${heap}${unit} -XX:-DontCompileHugeMethods $MARK -Dlog4j2.configurationFile=file:$DIR/log4j2.properties" \
      --conf spark.connect.grpc.binding.address="$HOST" --conf spark.connect.grpc.binding.port="$PORT" \
      --conf spark.connect.grpc.port.maxRetries=0 \
      --conf spark.ui.enabled=true --conf spark.ui.port="$UI_PORT" --conf spark.port.maxRetries=0 \
      --conf spark.ui.showConsoleProgress=false \
      --conf spark.driver.host="$HOST" --conf spark.driver.bindAddress="$HOST" \
      --conf spark.executor.memory="${RECONCILER_SPARK_EXECUTOR_MEMORY:-1g}" \
      --conf spark.executor.extraJavaOptions=-XX:-DontCompileHugeMethods \
      --conf spark.sql.shuffle.partitions="$partitions" --conf spark.default.parallelism="$partitions" \
      --conf spark.sql.adaptive.enabled=true --conf spark.sql.session.timeZone=UTC \
      --class org.apache.spark.sql.connect.service.SparkConnectServer spark-internal \
      </dev/null >>"$DIR/connect.log" 2>&1 &
  pid=$!
  echo "$pid" >"$PID_FILE"
  for i in $(seq 1 600); do   # up to ~120 s on a loaded machine
    if ! alive "$pid"; then
      log "the server exited during start-up; last lines of $DIR/connect.log:"; tail -n 20 "$DIR/connect.log" >&2
      rm -f "$PID_FILE"; exit 1
    fi
    answers "$HOST" "$PORT" && break
    sleep 0.2
  done
  if ! answers "$HOST" "$PORT"; then
    log "no answer on $HOST:$PORT within 120 s; last lines of $DIR/connect.log:"; tail -n 20 "$DIR/connect.log" >&2
    cmd_stop; exit 1
  fi
  printf 'SPARK_REMOTE=sc://%s:%s\nRECONCILER_SPARK_UI_URL=http://%s:%s\nMASTER=%s\n' \
    "$HOST" "$PORT" "$HOST" "$UI_PORT" "$MASTER" >"$ENV_FILE"
  log "ready: sc://$HOST:$PORT (UI http://$HOST:$UI_PORT, master $MASTER, pid $pid, dir $DIR)"
  echo "sc://$HOST:$PORT"
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
esac
