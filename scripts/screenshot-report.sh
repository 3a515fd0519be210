#!/usr/bin/env bash
# Renders an impact report (report.html from `reconciler impact --out DIR`) to a PNG with headless Chromium,
# to look at it as a reviewer would without a desktop browser.
#   bash scripts/screenshot-report.sh DIR/report.html OUT.png [WIDTH] [HEIGHT]
# Chromium comes from Debian's `chromium` package (scripts/bootstrap.sh installs it). The page has no
# scripts and no external resources, so the browser needs no network; a fresh profile is used and removed.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 REPORT.html OUT.png [WIDTH] [HEIGHT]" >&2; exit 2; }
report=$(realpath "$1"); out=$(realpath -m "$2"); width=${3:-1280}; height=${4:-2400}
[ -f "$report" ] || { echo "screenshot: no such report: $1" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "screenshot: chromium is not installed (run scripts/bootstrap.sh)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --user-data-dir="$profile" --window-size="$width,$height" --screenshot="$out" "file://$report" \
  >/dev/null 2>"$profile/chromium.log" || { tail -5 "$profile/chromium.log" >&2; exit 1; }
[ -s "$out" ] || { echo "screenshot: chromium wrote no image" >&2; exit 1; }
echo "screenshot: $out" >&2
