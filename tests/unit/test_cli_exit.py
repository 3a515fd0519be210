"""How the console script ends (`reconciler.cli.main.entry`): without tearing down its heap when nothing
else runs, yet with everything a normal exit does that anyone can see (exit code, flushed output, atexit
hooks), and a normal exit whenever a thread Python would wait for is still running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# A module-level object whose finaliser prints: Python's teardown calls it, os._exit does not.
PROGRAM = r"""
import atexit, sys, threading, time
from reconciler.cli import main


class Witness:
    def __del__(self):
        sys.stderr.write("torn down\n")


witness = Witness()
atexit.register(lambda: sys.stderr.write("atexit hook ran\n"))
sys.stdout.write("buffered artefact ")  # no newline, not flushed: the exit must flush it
if sys.argv[1] == "thread":
    def late():
        time.sleep(0.3)
        sys.stderr.write("thread finished\n")
    threading.Thread(target=late).start()
main.entry(sys.argv[2:])
"""


def run_entry(mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAM, mode, *args], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])


def test_entry_exits_without_teardown_but_flushes_output_and_runs_atexit_hooks() -> None:
    done = run_entry("plain", "--version")
    assert done.returncode == 0
    assert done.stdout.startswith("buffered artefact ") and "kafka-reconciler" in done.stdout
    assert "atexit hook ran" in done.stderr
    assert "torn down" not in done.stderr  # the heap was not freed object by object


def test_entry_keeps_the_exit_code_of_a_failed_command(tmp_path: Path) -> None:
    done = run_entry("plain", "--repo", str(tmp_path), "validate")  # no clusters/ directory
    assert done.returncode == 1
    assert "no clusters/ directory" in done.stderr
    assert "atexit hook ran" in done.stderr and "torn down" not in done.stderr


def test_entry_exits_normally_while_a_non_daemon_thread_runs() -> None:
    done = run_entry("thread", "--version")
    assert done.returncode == 0
    assert "thread finished" in done.stderr  # Python waited for it, as a normal exit does
    assert "torn down" in done.stderr and "atexit hook ran" in done.stderr
