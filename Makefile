# Shortcuts for the two README commands and a few more.
.PHONY: demo test lint zk-start zk-stop
demo:
	bash scripts/demo.sh
test:
	bash scripts/test.sh
lint:
	.venv/bin/ruff check reconciler tests bench tools && .venv/bin/mypy && .venv/bin/lint-imports
zk-start:
	bash scripts/local-zookeeper.sh start
zk-stop:
	bash scripts/local-zookeeper.sh stop
