"""A command imports what it uses (issue 18): start-up time is part of every plan, and a PR check should not
pay for Spark, git, rich or the password cipher when it needs none of them."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pyspark", "git", "rich", "cryptography", "jinja2", "jsonschema", "importlib.metadata")


# ZooKeeper writing: the apply lock, its holder record, multi-op transactions, the writer itself
WRITER = ("reconciler.zk.lock", "reconciler.holder", "reconciler.zk.txn", "reconciler.zk.write")


def _imported_after(code: str, watched: tuple[str, ...] = HEAVY) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_plan_path_imports_none_of_the_heavy_libraries() -> None:
    # what `reconciler plan` loads before it talks to ZooKeeper (a cluster without passwords)
    assert _imported_after("import reconciler.cli.main, reconciler.cli.plan, reconciler.workflow") == set()


def test_the_plan_path_imports_none_of_the_zookeeper_writer() -> None:
    plan_path = "import reconciler.cli.main, reconciler.cli.plan, reconciler.workflow, reconciler.render.text"
    assert _imported_after(plan_path, WRITER) == set()
    assert _imported_after("import reconciler.zk.write", WRITER) == set(WRITER)  # the probe sees them when loaded


def test_the_apply_path_imports_none_of_the_heavy_libraries() -> None:
    # `reconciler apply PLAN` of a plan without passwords: the cipher is imported only to encode one
    assert _imported_after("import reconciler.cli.main, reconciler.cli.plan, reconciler.apply") == set()


# what `apply PLAN` of topic configs needs none of: planning (workflow, the policies), replica moves and their
# Admin API, feature-level rules
PLANNING = ("reconciler.workflow", "reconciler.manifests.policy", "reconciler.reassigning",
            "reconciler.brokers.reassign", "reconciler.brokers.admin", "reconciler.risk", "reconciler.zk.read")


def test_the_apply_path_imports_neither_planning_nor_replica_moves() -> None:
    apply_path = ("import reconciler.cli.main, reconciler.cli.plan, reconciler.apply, reconciler.render.text, "
                  "reconciler.secrets.check, reconciler.manifests.planfile, reconciler.zk.write")
    assert _imported_after(apply_path, PLANNING) == set()
    # apply's options: without --max-moving-* or --reassign-wait nothing of the replica moves is loaded either
    options = f"{apply_path}\nfrom reconciler.cli.plan import move_options\n"
    assert _imported_after(options + "assert move_options(None, None, None) is None", PLANNING) == set()
    assert "reconciler.reassigning" in _imported_after(options + "move_options(None, None, '0')", PLANNING)
    probe = "import reconciler.workflow, reconciler.reassigning, reconciler.zk.read"
    assert _imported_after(probe, PLANNING) == set(PLANNING)


def test_the_cipher_is_imported_when_a_password_is_encoded() -> None:
    code = ("from reconciler.model import Secret\nfrom reconciler.secrets.encoder import EncoderParams, encode\n"
            "encode(Secret('p'), EncoderParams(Secret('s'), iterations=1024))")
    assert "cryptography" in _imported_after(code)
