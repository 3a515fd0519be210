#!/usr/bin/env bash
# The whole test suite: set-up, lint, types, layering contract, tests (real ZooKeeper and Spark inside).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff" >&2;         ruff check reconciler tests bench tools
echo "== mypy --strict" >&2; mypy
echo "== import-linter" >&2; lint-imports
echo "== pytest" >&2;       pytest -q -p no:cacheprovider "$@"
