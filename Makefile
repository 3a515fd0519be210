# Shortcuts for the two README commands and a few more.
.PHONY: demo test lint zk-start zk-stop spark-start spark-stop bench-impact bench-cluster
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
spark-start:
	bash scripts/spark-standalone.sh start
spark-stop:
	bash scripts/spark-standalone.sh stop
bench-impact:
	.venv/bin/python bench/impact.py
bench-cluster:
	.venv/bin/python bench/impact_cluster.py
