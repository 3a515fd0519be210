#!/usr/bin/env bash
# Demo step: the fleet-wide blast radius of a proposed change, before it is applied (Spark local[*]).
# usage: scripts/demo_impact.sh [FLEET_DIR]   (the demo's fleet, already applied to the local ZooKeeper)
# The change is made on a copy: production log.retention.ms 7d -> 3d (fleet.yaml) and a shorter segment.ms
# for prod-us-1's clickstream topic. prod-us-1 sets its own retention at <default>, so only prod-eu-1's
# brokers and its topics without a retention override are hit. The live state is read from ZooKeeper;
# nothing is written. Output: the PR-comment Markdown on stdout, report.html/json and Parquet in .local/.
set -euo pipefail
cd "$(dirname "$0")/.."
FLEET=${1:-examples/fleet}
OUT=.local/demo-impact
rm -rf "$OUT" && mkdir -p "$OUT"
cp -r "$FLEET" "$OUT/proposed"
sed -i 's/log.retention.ms: 604800000        # 7 days/log.retention.ms: 259200000        # 3 days (proposed)/' \
  "$OUT/proposed/clusters/fleet.yaml"
sed -i 's/segment.ms: 600000/segment.ms: 300000/' "$OUT/proposed/clusters/prod-us-1/topics.yaml"
grep -q "3 days (proposed)" "$OUT/proposed/clusters/fleet.yaml" || { echo "demo_impact: fleet.yaml changed?" >&2; exit 1; }
PATH="$PWD/.venv/bin:$PATH" reconciler --repo "$OUT/proposed" impact --out "$OUT/report" --format markdown
printf '\nHTML report: %s/report/report.html (Parquet details beside it)\n' "$OUT" >&2
