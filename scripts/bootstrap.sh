#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: Debian's zookeeper (for the local server and the tests),
# a virtualenv in .venv with the project installed (editable) and its dev tools.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'bootstrap: %s\n' "$*" >&2; }

if ! [ -x /usr/share/zookeeper/bin/zkServer.sh ] && ! [ -d /usr/share/zookeeper/lib ] && ! ls /usr/share/java/zookeeper*.jar >/dev/null 2>&1; then
  log "installing Debian's zookeeper package"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq zookeeper >&2
fi
command -v java >/dev/null || { log "java is required (Debian: default-jre-headless)"; exit 1; }

PY=${PYTHON:-python3}
if ! [ -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)
if ! [ -f "$stamp" ]; then
  log "installing the project and its dev tools into .venv (log: .venv/install.log)"
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[dev]'; } \
      >.venv/install.log 2>&1; then
    cat .venv/install.log >&2
    exit 1
  fi
  rm -f .venv/.installed-*
  touch "$stamp"
fi
log "ready: $(.venv/bin/python --version)"
