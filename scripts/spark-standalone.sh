#!/usr/bin/env bash
# A Spark standalone cluster on 127.0.0.1 (a master and N workers) from the installed pyspark's jars, for the
# scale-out test and benchmark of `reconciler impact --master spark://...`. No Spark download, no systemd.
#   scripts/spark-standalone.sh start|stop|status [--dir D] [--workers N] [--cores C] [--memory M]
# start prints the master's URL (spark://127.0.0.1:PORT) on stdout once all N workers are registered;
# starting a running cluster prints the same URL again. Ports are chosen by the JVMs themselves (port 0:
# no race for a "free" port). Logs, work directories, settings and PID files live in D (default
# .local/spark-standalone under the repo); stop ends exactly the processes recorded there (and any executor
# their workers left behind, found by D in its class path). Messages go to stderr.
# N workers x C cores x M memory (default 2 x 1 x 1g) is what applications may use: keep
# RECONCILER_SPARK_EXECUTOR_MEMORY <= M. pyspark is found with $PYTHON (default .venv/bin/python).
# Exit codes: 0 ok (status: running), 1 error, 3 status: stopped.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'spark-standalone: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { log "usage: $0 start|stop|status [--dir D] [--workers N] [--cores C] [--memory M]"; exit 1; }

CMD=${1:-}; [ $# -gt 0 ] && shift
DIR="$REPO/.local/spark-standalone"; WORKERS=""; CORES=""; MEMORY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) [ $# -ge 2 ] || usage; DIR=$2; shift 2 ;;
    --dir=*) DIR=${1#--dir=}; shift ;;
    --workers) [ $# -ge 2 ] || usage; WORKERS=$2; shift 2 ;;
    --workers=*) WORKERS=${1#--workers=}; shift ;;
    --cores) [ $# -ge 2 ] || usage; CORES=$2; shift 2 ;;
    --cores=*) CORES=${1#--cores=}; shift ;;
    --memory) [ $# -ge 2 ] || usage; MEMORY=$2; shift 2 ;;
    --memory=*) MEMORY=${1#--memory=}; shift ;;
    *) usage ;;
  esac
done
case "$CMD" in start|stop|status) ;; *) usage ;; esac
[ -z "$WORKERS" ] || [[ "$WORKERS" =~ ^[1-9][0-9]?$ ]] || die "invalid --workers: $WORKERS (1-99)"
[ -z "$CORES" ] || [[ "$CORES" =~ ^[1-9][0-9]*$ ]] || die "invalid --cores: $CORES"
[ -z "$MEMORY" ] || [[ "$MEMORY" =~ ^[1-9][0-9]*[mMgG]$ ]] || die "invalid --memory: $MEMORY (e.g. 512m, 2g)"

[ "$CMD" != start ] || mkdir -p "$DIR"   # status/stop of a directory never used: simply "stopped"
[ ! -d "$DIR" ] || DIR=$(cd "$DIR" && pwd)   # absolute: the PID check matches it in the JVMs' command lines
SETTINGS="$DIR/cluster.env"   # WORKERS, CORES, MEMORY and URL of the running cluster
HOME_DIR="$DIR/home"          # a SPARK_HOME over pyspark's jars (see make_home)
MARK="-Dreconciler.spark.standalone=$DIR"   # in every daemon's command line: PID reuse cannot fool us

setting() { [ ! -f "$SETTINGS" ] || sed -n "s/^$1=//p" "$SETTINGS" | head -n1; }

# The PID in a PID file if that process is alive and is our daemon.
our_pid() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qxF -- "$MARK" || return 1
  echo "$pid"
}
# shellcheck source=lib/process.sh
source "$REPO/scripts/lib/process.sh"  # alive PID
# Executors our workers launched: Spark's executor class with our home's jars on its class path (the
# worker builds it as $HOME_DIR/conf/:$HOME_DIR/jars/*).
executor_pids() {
  local p args
  for p in /proc/[0-9]*; do
    args=$(tr '\0' '\n' 2>/dev/null <"$p/cmdline") || continue
    grep -qxF org.apache.spark.executor.CoarseGrainedExecutorBackend <<<"$args" \
      && grep -qF -- "$HOME_DIR/jars/" <<<"$args" && echo "${p#/proc/}"
  done
  return 0
}

pyspark_dir() {
  local py=${PYTHON:-$REPO/.venv/bin/python}
  [ -x "$py" ] || py=$(command -v python3) || die "no Python found (run scripts/bootstrap.sh)"
  "$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null \
    || die "pyspark is not installed for $py (run scripts/bootstrap.sh, or set PYTHON)"
}

# Workers launch executors through Spark's launcher, which needs a SPARK_HOME with jars/ (and
# SPARK_SCALA_VERSION, set in daemon()). The cluster gets a home of its own instead of pyspark's directory:
# jars -> pyspark's jars, an empty conf/, and the RELEASE file of a binary distribution (the pip package has
# none; tools such as docker-image-tool.sh check it). Nothing is written into the Python environment, and
# executors carry $HOME_DIR in their class path, which is how stop finds any a dead worker left behind.
make_home() {
  local jars=$1/jars
  [ -d "$jars" ] || die "$jars is missing: not a full pyspark installation"
  mkdir -p "$HOME_DIR/conf"
  [ -f "$HOME_DIR/RELEASE" ] || printf 'pyspark %s (scripts/spark-standalone.sh)\n' "$(basename "$1")" >"$HOME_DIR/RELEASE"
  ln -sfn "$jars" "$HOME_DIR/jars"
}

# Start one daemon in its own session (it must not die with the caller's terminal); prints its PID.
daemon() {
  local name=$1; shift
  # env: the launcher's view of this "distribution" (for the executors); logs of Spark's default log4j2
  # profile (INFO, on stderr) go to $DIR/$name.log; shuffle and block files under $DIR/local.
  SPARK_HOME="$HOME_DIR" SPARK_SCALA_VERSION=2.13 SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$DIR/local" \
    SPARK_CONF_DIR="$HOME_DIR/conf" \
    setsid java -Xmx256m -Xms64m -XX:+UseSerialGC "$MARK" -cp "$HOME_DIR/jars/*" "$@" \
    </dev/null >>"$DIR/$name.log" 2>&1 &
  echo $!
}

# Wait (up to ~120 s: a loaded machine) for TEXT in LOG while PID lives; prints the first matching line.
wait_for() {
  local log_file=$1 text=$2 pid=$3 i line
  for i in $(seq 1 600); do
    line=$(grep -F -m1 -- "$text" "$log_file" 2>/dev/null || true)
    if [ -n "$line" ]; then echo "$line"; return 0; fi
    alive "$pid" || { log "$(basename "$log_file" .log) exited during start-up; last lines of $log_file:"
                      tail -n 20 "$log_file" >&2; return 1; }
    sleep 0.2
  done
  log "no '$text' in $log_file within 120 s; last lines:"; tail -n 20 "$log_file" >&2
  return 1
}

stop_pid() {
  local pid=$1 what=$2 i
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done   # up to 10 s, then SIGKILL
  if alive "$pid"; then
    log "$what (pid $pid) did not stop after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  fi
  alive "$pid" && die "$what (pid $pid) is still alive"
  log "stopped $what (pid $pid)"
}

running_workers() {
  local n=0 f
  for f in "$DIR"/worker-*.pid; do [ -e "$f" ] && our_pid "$f" >/dev/null && n=$((n + 1)); done
  echo "$n"
}

cmd_status() {
  local pid url
  url=$(setting URL)
  if pid=$(our_pid "$DIR/master.pid"); then
    echo "running ($url, master pid $pid, $(running_workers)/$(setting WORKERS) workers x $(setting CORES) cores x $(setting MEMORY), dir $DIR)"
    exit 0
  fi
  echo "stopped (dir $DIR)"
  exit 3
}

cmd_stop() {
  local f pid found=0
  [ -d "$DIR" ] || { log "not running (dir $DIR)"; return 0; }
  # workers first (each kills its executors on SIGTERM), then the master
  for f in "$DIR"/worker-*.pid "$DIR/master.pid"; do
    [ -e "$f" ] || continue
    if pid=$(our_pid "$f"); then stop_pid "$pid" "$(basename "$f" .pid)"; found=1; fi
    rm -f "$f"
  done
  for pid in $(executor_pids); do   # a worker killed with SIGKILL leaves its executors behind
    stop_pid "$pid" "left-over executor"; found=1
  done
  [ "$found" = 1 ] || log "not running (dir $DIR)"
  rm -f "$SETTINGS"
}

# Start worker I (its PID file and log are worker-I.*); returns once it is registered with the master.
start_worker() {
  local i=$1 url=$2 pid
  mkdir -p "$DIR/work-$i"
  pid=$(daemon "worker-$i" -Dspark.worker.cleanup.enabled=true org.apache.spark.deploy.worker.Worker "$url" \
    --host 127.0.0.1 --port 0 --webui-port 0 --cores "$CORES" --memory "$MEMORY" --work-dir "$DIR/work-$i")
  echo "$pid" >"$DIR/worker-$i.pid"
  wait_for "$DIR/worker-$i.log" "Successfully registered with master" "$pid" >/dev/null
}

check_same_shape() {
  local key value want
  for key in WORKERS CORES MEMORY; do
    value=$(setting "$key"); want=${!key}
    [ -z "$want" ] || [ "$want" = "$value" ] \
      || die "already running with $key=$value (dir $DIR); stop it first to use ${key,,} $want"
  done
}

cmd_start() {
  local pid url line i home
  if our_pid "$DIR/master.pid" >/dev/null; then
    check_same_shape
    WORKERS=$(setting WORKERS); CORES=$(setting CORES); MEMORY=$(setting MEMORY); url=$(setting URL)
  else
    cmd_stop 2>/dev/null   # workers of a dead master, stale PID files
    WORKERS=${WORKERS:-2}; CORES=${CORES:-1}; MEMORY=${MEMORY:-1g}
    command -v java >/dev/null || die "java is required (Debian: default-jre-headless)"
    home=$(pyspark_dir)
    make_home "$home"
    mkdir -p "$DIR/local"
    : >"$DIR/master.log"
    pid=$(daemon master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 0 --webui-port 0)
    echo "$pid" >"$DIR/master.pid"
    if ! line=$(wait_for "$DIR/master.log" "Starting Spark master at spark://" "$pid"); then
      cmd_stop; exit 1
    fi
    url=$(sed -n 's/.*Starting Spark master at \(spark:\/\/[^ ]*\).*/\1/p' <<<"$line")
    [ -n "$url" ] || { cmd_stop; die "cannot read the master's URL from: $line"; }
    printf 'WORKERS=%s\nCORES=%s\nMEMORY=%s\nURL=%s\n' "$WORKERS" "$CORES" "$MEMORY" "$url" >"$SETTINGS"
    log "master $url (pid $pid)"
  fi
  # the workers that are not running (all of them on a first start); one at a time keeps the logs readable
  for i in $(seq 1 "$WORKERS"); do
    our_pid "$DIR/worker-$i.pid" >/dev/null && continue
    : >"$DIR/worker-$i.log"
    if ! start_worker "$i" "$url"; then
      log "worker $i did not register; stopping the cluster"; cmd_stop; exit 1
    fi
    log "worker $i registered ($CORES core(s), $MEMORY)"
  done
  log "ready: $url, $WORKERS worker(s) x $CORES core(s) x $MEMORY (dir $DIR)"
  echo "$url"
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
esac
