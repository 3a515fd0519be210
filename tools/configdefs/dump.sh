#!/usr/bin/env bash
# Dump each pinned Kafka release's own ConfigDefs into kafka/configdefs/<version>.json (ConfigDefsDump.java run on
# that release's jars), then regenerate the catalog from them: `bash tools/configdefs/dump.sh`.
# The releases are the poms' pins: kafka/pom.xml (3.9.x), kafka/pom-4.0.xml (4.0.x), kafka/pom-4.xml (4.1.x);
# scripts/kafka-jars.sh resolves their jars (Maven Central, checksums checked; offline once resolved).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
for pom in kafka/pom.xml kafka/pom-4.0.xml kafka/pom-4.xml; do
  libs=$(bash scripts/kafka-jars.sh --pom "$pom")
  version=$(basename "$(dirname "$libs")")
  out="kafka/configdefs/$version.json"
  # single-file source launch (JDK 11+): compiled in memory, nothing written beside the source
  java -cp "$libs/*" tools/configdefs/ConfigDefsDump.java >"$out.tmp" 2>"$out.log" || {
    cat "$out.log" >&2; rm -f "$out.tmp"; exit 1; }
  mv "$out.tmp" "$out"; rm -f "$out.log"
  echo "dump.sh: wrote $out" >&2
done
PYTHON=python3; [ -x .venv/bin/python ] && PYTHON=.venv/bin/python
"$PYTHON" tools/gen_catalog.py
