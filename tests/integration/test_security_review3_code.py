"""Issue 38 (third security review), findings 3 and 4: no code of the pull request's tree runs in the PR job.

A PR author controls every file of the checkout the job runs in, not only `clusters/`. A Python started with
`-m` from that directory puts it first on its module path, so a committed `reconciler/`, `pyspark/` or `pip/`
package would run in place of ours, with the job's secrets and token. Each test commits such a package that
leaves a marker file when imported, runs the job's step as the job does (from the checkout), and finds no marker.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from reconciler.childenv import safe_child_environment
from tests.integration.test_gitops import commit, invoke, make_repo

REPO = Path(__file__).resolve().parents[2]


def trap(marker: Path) -> str:
    """A module body that records that it ran (and where), then carries on like nothing happened."""
    return f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"


def test_the_impact_child_of_a_pr_check_never_imports_the_pr_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 3: `plan --git-base --inventory` starts `impact` in a child Python. The PR commits
    `reconciler/__init__.py` and `pyspark/__init__.py`; the job runs from the checkout."""
    marker = tmp_path / "ran"
    root = tmp_path / "checkout"
    repo = make_repo(root)
    commit(repo, "base", {"clusters/a/cluster.yaml": textwrap.dedent("""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {name: a}
        spec: {kafkaVersion: "3.6", zookeeper: {connect: "127.0.0.1:1/a"}, brokers: [1]}
        """)})
    repo.git.checkout("-b", "feature")
    commit(repo, "a new cluster, and a little extra", {
        "clusters/b/cluster.yaml": textwrap.dedent("""\
            apiVersion: reconciler/v1
            kind: Cluster
            meta: {name: b}
            spec: {kafkaVersion: "3.6", zookeeper: {connect: "127.0.0.1:1/b"}, brokers: [1]}
            """),
        "reconciler/__init__.py": trap(marker),
        "reconciler/__main__.py": trap(marker),
        "pyspark/__init__.py": trap(marker),
    })
    monkeypatch.chdir(root)  # as a CI job runs: from the checkout
    inventory = tmp_path / "no-inventory-here"
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown",
                             "--inventory", str(inventory))
    assert code == 0, err
    assert "fleet impact exited" in err  # the child ran (and stopped at the missing inventory) ...
    assert not marker.exists(), marker.read_text()  # ... with only the installed modules


def test_no_child_python_puts_the_current_directory_on_its_path(tmp_path: Path) -> None:
    """What Spark's JVM does for its Python workers (`python -m pyspark.daemon`), with the environment the
    tool gives every child: a module of the current directory named like the one started is not imported."""
    marker = tmp_path / "ran"
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "__init__.py").write_text(trap(marker))
    (tmp_path / "json" / "tool.py").write_text(trap(marker))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    argv = [sys.executable, "-m", "json.tool"]
    subprocess.run(argv, input="{}", text=True, cwd=tmp_path, env=env, capture_output=True, check=False)
    assert marker.exists()  # how an unprotected child behaves (the test can fail)
    marker.unlink()
    done = subprocess.run(argv, input="{}", text=True, cwd=tmp_path, env=safe_child_environment(env),
                          capture_output=True, check=False)
    assert done.returncode == 0 and not marker.exists()


def _install_step() -> str:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("name") == "Install kafka-reconciler")
    script: str = step["run"]
    return script


def test_the_actions_install_step_never_runs_a_pip_package_of_the_workspace(tmp_path: Path) -> None:
    """Finding 4: the composite action's install step, run as GitHub runs it (bash, from the workspace), with a
    committed `pip/` package in the workspace. PACKAGE names what is already installed, so pip needs no
    network; the step must use the installed pip, not the workspace's."""
    marker = tmp_path / "ran"
    workspace = tmp_path / "workspace"
    (workspace / "pip").mkdir(parents=True)
    for name in ("__init__.py", "__main__.py"):
        (workspace / "pip" / name).write_text(trap(marker) + "raise SystemExit(0)\n")
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PACKAGE": "kafka-reconciler", "ACTION_PATH": str(REPO), "COMMAND": "validate",
           "RUNNER_TEMP": str(runner_temp)}
    env.pop("PYTHONSAFEPATH", None)
    script = _install_step()
    done = subprocess.run(["bash", "-e", "-c", script], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), marker.read_text()
    # the same step as it was (`python -m pip` from the workspace) runs the committed package: the test can fail
    unsafe = re.sub(r"python -I -m pip", "python -m pip", script).replace('cd "$RUNNER_TEMP"', "")
    subprocess.run(["bash", "-e", "-c", unsafe], cwd=workspace, env=env, capture_output=True, text=True,
                   timeout=300, check=False)
    assert marker.exists()


def test_every_python_the_action_starts_is_isolated() -> None:
    """No step of the action starts `python` without `-I`, and the run step's children get PYTHONSAFEPATH."""
    text = (REPO / "action.yml").read_text()
    starts = re.findall(r"^\s*(python3? [^\n]*)", text, flags=re.M)
    assert starts and all(re.match(r"python3? -I ", s) for s in starts), starts
    action = yaml.safe_load(text)
    run = next(s for s in action["runs"]["steps"] if s.get("id") == "run")
    assert run["env"]["PYTHONSAFEPATH"] == "1"
