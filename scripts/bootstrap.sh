#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: Debian's zookeeper (for the local server and the tests) and
# chromium (the HTML report's screenshot test),
# a virtualenv in .venv with exactly the packages pinned in requirements/dev.txt (hashes checked)
# and the project installed editable on top of them. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'bootstrap: %s\n' "$*" >&2; }
LOCK=requirements/dev.txt

have_zookeeper() {
  [ -x /usr/share/zookeeper/bin/zkServer.sh ] || [ -d /usr/share/zookeeper/lib ] \
    || ls /usr/share/java/zookeeper*.jar >/dev/null 2>&1
}
have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }
have_java() { command -v java >/dev/null; }
have_maven() { command -v mvn >/dev/null; }
# zookeeper: the local server and the tests; chromium: the impact report's screenshot test
# (scripts/screenshot-report.sh).
missing=()
have_zookeeper || missing+=(zookeeper)
have_chromium || missing+=(chromium)
# java and maven: the real Kafka brokers of the tests and the demo (kafka/pom.xml, scripts/local-kafka.sh)
have_java || missing+=(default-jre-headless)
have_maven || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # Another package manager (unattended-upgrades, a parallel job) may hold dpkg's lock: wait for it
  # (up to 10 minutes) instead of failing.
  apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
  log "installing Debian packages: ${missing[*]} (1/2: apt-get update)"
  $SUDO apt-get "${apt_opts[@]}" update -qq >&2
  log "installing Debian packages: ${missing[*]} (2/2: apt-get install)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
  have_zookeeper || { log "zookeeper is still missing after apt-get install"; exit 1; }
  have_chromium || { log "chromium is still missing after apt-get install"; exit 1; }
  have_maven || { log "maven is still missing after apt-get install"; exit 1; }
fi
command -v java >/dev/null || { log "java is required (Debian: default-jre-headless)"; exit 1; }

PY=${PYTHON:-python3}
if ! [ -x .venv/bin/python ]; then
  log "creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat "$LOCK" pyproject.toml | sha256sum | cut -c1-16)
if ! [ -f "$stamp" ]; then
  total=$(grep -cE '^[A-Za-z0-9]' "$LOCK")
  log "installing $total pinned packages from $LOCK (hashes checked; full log: .venv/install.log)"
  : >.venv/install.log
  # One line per package as pip gets to it, so a slow download is visible.
  if ! .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off \
        --require-hashes --no-deps -r "$LOCK" 2>&1 | tee -a .venv/install.log \
        | awk -v total="$total" '/^(Collecting|Processing) /{n++; name=$2; sub(".*/", "", name); printf "bootstrap: [%d/%d] %s\n", n, total, name > "/dev/stderr"; fflush()}
      /^Installing collected/{printf "bootstrap: unpacking %d packages into .venv\n", n > "/dev/stderr"; fflush()}'; then
    cat .venv/install.log >&2
    exit 1
  fi
  log "installing the project itself (editable, no further downloads)"
  if ! .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e . \
      >>.venv/install.log 2>&1; then
    cat .venv/install.log >&2
    exit 1
  fi
  .venv/bin/python -m pip check >>.venv/install.log 2>&1 || { log "pip check failed:"; tail -5 .venv/install.log >&2; exit 1; }
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# Apache Kafka's jars for the real brokers, pinned in kafka/pom.xml (offline once resolved).
bash scripts/kafka-jars.sh >/dev/null
bash scripts/kafka-jars.sh --pom kafka/pom-4.xml >/dev/null  # Kafka 4.x (KRaft only)
log "ready: $(.venv/bin/python --version), $(.venv/bin/reconciler --version 2>/dev/null || echo kafka-reconciler)"
