#!/usr/bin/env bash
# The whole test suite: set-up, lint, types, layering contract, tests (real ZooKeeper and Spark inside).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff" >&2;         ruff check reconciler tests bench tools
echo "== mypy --strict" >&2; mypy
echo "== import-linter" >&2; lint-imports
# two workers (one per core); tests/conftest.py keeps the tests of each set of JVMs (ZooKeeper-mode brokers,
# KRaft nodes, the SparkSession) on one worker, so each starts once per run
echo "== pytest" >&2;       pytest -q -p no:cacheprovider -n "${RECONCILER_TEST_WORKERS:-2}" --dist loadgroup --durations=40 "$@"
