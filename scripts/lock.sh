#!/usr/bin/env bash
# Regenerates the lock files in requirements/ from pyproject.toml (every package pinned, with hashes).
#   bash scripts/lock.sh              # keep current pins where still allowed, add what is new
#   bash scripts/lock.sh --upgrade    # move every package to its newest allowed release
# Then run `bash scripts/test.sh` and commit pyproject.toml and requirements/ together.
#   runtime.txt  validate/plan/apply/reconcile/import/seal   (the GitHub action's default install)
#   impact.txt   runtime + the `impact` extra (PySpark)       (the action's install for impact/snapshot)
#   connect.txt  impact + the `connect` extra (Spark Connect client: grpcio, pyarrow, pandas...)
#                                                             (impact/snapshot against a shared Connect server)
#   dev.txt      runtime + impact + connect + dev tools       (scripts/bootstrap.sh, CI)
# Each includes the build back-end (setuptools, wheel) so the project itself installs without
# fetching anything unpinned (pip install --no-build-isolation).
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.venv-lock
if ! [ -x "$tools/bin/pip-compile" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q 'pip-tools==7.6.2'
fi
compile() {  # OUT [pip-compile options...]
  local out=$1; shift
  echo "lock: requirements/$out" >&2
  "$tools/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --all-build-deps \
    --no-emit-index-url --no-emit-find-links --no-emit-trusted-host --resolver=backtracking \
    --output-file "requirements/$out" "$@" pyproject.toml
}
compile dev.txt --extra impact --extra connect --extra dev "$@"
# The smaller locks are constrained by the full one, so all four pin the same versions.
compile impact.txt --extra impact -c requirements/dev.txt
compile connect.txt --extra impact --extra connect -c requirements/dev.txt
compile runtime.txt -c requirements/dev.txt
