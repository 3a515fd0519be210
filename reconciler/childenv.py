"""The environment of every process the tool starts (the impact job's child, Spark's JVM and its Python workers).

In a pull-request job the current directory is the PR's checkout, and the author controls every file in it. A
Python started with `-m` (as Spark starts `python -m pyspark.daemon`) puts the current directory first on its
module path, so a committed `pyspark/` or `reconciler/` package would run in place of ours. `PYTHONSAFEPATH`
(Python 3.11+, the `-P` flag) stops that for every Python process below ours, whoever starts it. Standard
library only.
"""

from __future__ import annotations

import os


def safe_child_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of `base` (default: this process's environment) in which no child Python puts the current
    directory on its path."""
    env = dict(os.environ if base is None else base)
    env["PYTHONSAFEPATH"] = "1"
    return env


def protect_children() -> None:
    """The same for every child this process starts from now on (libraries that spawn with os.environ)."""
    os.environ["PYTHONSAFEPATH"] = "1"
