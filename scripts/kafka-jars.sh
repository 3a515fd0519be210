#!/usr/bin/env bash
# Apache Kafka's jars, as pinned in a pom of kafka/ (pom.xml: 3.9.x, ZooKeeper mode; pom-4.xml: the 4.x line, KRaft
# only), resolved by Maven (checksums checked) into a cache in the repository, then copied into one directory per
# version. Idempotent: offline after the first success.
#   scripts/kafka-jars.sh [--pom kafka/pom-4.xml]            # prints the libs directory (progress on stderr)
#   scripts/kafka-jars.sh [--pom kafka/pom-4.xml] --check    # exit 0 when the jars are there, 3 otherwise
# Needs java and mvn; installs Debian's maven when mvn is missing. Exit 1 names the artefact Maven refused.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'kafka-jars: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

POM="$REPO/kafka/pom.xml"
if [ "${1:-}" = --pom ]; then
  [ -n "${2:-}" ] || die "--pom needs a file"
  POM="$REPO/$2"; shift 2
fi
[ -f "$POM" ] || die "no pom $POM"
VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM" | head -n1)
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "no kafka.version in $POM"
CACHE="$REPO/.local/m2"
LIBS="$REPO/.local/kafka/$VERSION/libs"
# The stamp names the pom's hash: a changed pin (or dependency) resolves again.
STAMP="$LIBS/.resolved-$(sha256sum "$POM" | cut -c1-16)"

if [ -f "$STAMP" ]; then
  [ "${1:-}" = --check ] && exit 0
  echo "$LIBS"
  exit 0
fi
[ "${1:-}" = --check ] && exit 3

command -v java >/dev/null || die "java is required (Debian: default-jre-headless)"
if ! command -v mvn >/dev/null; then
  log "installing Debian's maven"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
  $SUDO apt-get "${apt_opts[@]}" update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends maven >&2
  command -v mvn >/dev/null || die "mvn is still missing after apt-get install maven"
fi

log "resolving Apache Kafka $VERSION's jars with Maven into $CACHE (checksums checked; first run only)"
tmp="$LIBS.tmp"
rm -rf "$tmp"; mkdir -p "$tmp" "$CACHE"
mvn_log="$REPO/.local/kafka/$VERSION/maven.log"
# --strict-checksums: a jar whose checksum does not match is an error, not a warning.
if ! mvn -B -q --strict-checksums -f "$POM" -Dmaven.repo.local="$CACHE" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$mvn_log" 2>&1; then
  grep -E 'ERROR|Could not|Failed' "$mvn_log" | head -n 5 >&2 || true
  die "Maven could not resolve ${POM#"$REPO"/} (Apache Kafka $VERSION); full log: $mvn_log"
fi
ls "$tmp"/kafka_2.13-"$VERSION".jar >/dev/null 2>&1 || die "kafka_2.13-$VERSION.jar missing after resolution"
rm -rf "$LIBS"; mv "$tmp" "$LIBS"
touch "$STAMP"
log "ready: $(find "$LIBS" -name '*.jar' | wc -l) jars in $LIBS"
echo "$LIBS"
