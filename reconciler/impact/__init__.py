"""Fleet impact (SPEC §8): inventory snapshots as Parquet and the Spark job that computes the blast radius.

Only `inventory` (schema, pure row building) and `afterstate` import without pyspark; every module that needs
Spark imports it lazily or is itself imported lazily by the CLI, so `reconciler validate` never pays for it.
"""
