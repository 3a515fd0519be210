"""Secret-leak scan over the whole test run: every captured stdout/stderr/log section and failure report of
every test, plus the artefacts the tool wrote under pytest's temp directory (plans, audit logs, reports),
is searched for the secrets and plaintext passwords the tests use. Any hit fails the session.

Tests that use a secret take it from here (or register it with `plant`) so the scan knows what to look for.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from pathlib import Path

import pytest

ENCODER_SECRET = "lk-encoder-secret-Q7f3a9"
OLD_ENCODER_SECRET = "lk-old-encoder-secret-Z2k8"
KEYSTORE_PASSWORD = "lk-keystore-password-91c2x"
JAAS_CONFIG = 'org.apache.kafka.common.security.scram.ScramLoginModule required password="lk-jaas-pw-55d1";'
ZK_CREDENTIALS = "kafka:lk-zk-digest-pw-3e4r"
# security tests (issue 12): what an attacker's pull request tries to exfiltrate, and the new credentials
OUTSIDE_FILE_SECRET = "lk-outside-file-secret-2c9d"  # a file outside the repository (a symlink target)
ATTACKER_BAIT = "lk-env-bait-for-pr-7h2m"  # an environment variable a PR names as a credential
SASL_PASSWORD = "lk-zk-sasl-pw-8k1q"
SASL_CREDENTIALS = f"kafka:{SASL_PASSWORD}"
TLS_KEY_PASSWORD = "lk-tls-key-pw-4n6v"

_PLANTED: set[str] = {ENCODER_SECRET, OLD_ENCODER_SECRET, KEYSTORE_PASSWORD, "lk-jaas-pw-55d1",
                      "lk-zk-digest-pw-3e4r", "hunter2-lk", OUTSIDE_FILE_SECRET, ATTACKER_BAIT, SASL_PASSWORD,
                      TLS_KEY_PASSWORD}
_SEEN: list[tuple[str, str]] = []  # (where, text)
ARTEFACT_SUFFIXES = (".json", ".jsonl", ".md", ".html", ".txt", ".log")
MIN_LEN = 8  # shorter strings would match by accident


def plant(value: str) -> str:
    if len(value) >= MIN_LEN:
        _PLANTED.add(value)
    return value


def _plant_vectors() -> None:
    path = Path(__file__).parent / "data" / "password-vectors.json"
    data = json.loads(path.read_text(encoding="utf-8"))

    def walk(node: object) -> Iterable[tuple[str, str]]:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, str):
                    yield k, v
                else:
                    yield from walk(v)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    for key, value in walk(data):
        if key in ("secret", "plaintext") and value.strip():
            plant(value)


def find_leaks(texts: Iterable[tuple[str, str]], planted: Iterable[str]) -> list[str]:
    secrets = [s for s in planted if len(s) >= MIN_LEN]
    return sorted({f"{where}: contains a planted secret ({s[:3]}…)" for where, text in texts for s in secrets
                   if s in text})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, content in report.sections:
        _SEEN.append((f"{report.nodeid} [{name}]", content))
    if report.failed:
        _SEEN.append((f"{report.nodeid} [failure]", report.longreprtext))


def _artefacts(base: Path) -> Iterable[tuple[str, str]]:
    for path in base.rglob("*"):
        # inputs the tests wrote on purpose (secret files, in paths named so) are not outputs
        if path.is_file() and path.suffix in ARTEFACT_SUFFIXES and "secret" not in str(path.relative_to(base)).lower():
            try:
                yield str(path), path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue


_WORKER_LEAKS: list[str] = []  # pytest-xdist: what each worker's own scan found (pytest_testnodedown)
_WORKER_SCANS: list[tuple[int, int]] = []  # (outputs searched, secrets planted) per worker


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """pytest-xdist, in the controller: a worker is done; keep what its scan found. Each worker scans its own
    tests' outputs and temp files for the secrets its tests planted (the controller never imports the test
    modules, so it cannot know them)."""
    output = getattr(node, "workeroutput", None) or {}
    _WORKER_LEAKS.extend(output.get("leaks", ()))
    if "leak_scan" in output:
        _WORKER_SCANS.append(tuple(output["leak_scan"]))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _plant_vectors()
    texts = list(_SEEN)
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None:
        with contextlib.suppress(OSError, ValueError):
            texts.extend(_artefacts(factory.getbasetemp()))
    leaks = find_leaks(texts, _PLANTED)
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:  # an xdist worker: the controller reports for every worker
        worker_output["leaks"] = leaks
        worker_output["leak_scan"] = (len(texts), len(_PLANTED))
        return
    leaks = sorted(set(leaks) | set(_WORKER_LEAKS))
    searched = len(texts) + sum(n for n, _ in _WORKER_SCANS)
    planted = max([len(_PLANTED), *(p for _, p in _WORKER_SCANS)])
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if leaks:
        if reporter is not None:
            reporter.write_line("SECRET LEAK SCAN FAILED:", red=True, bold=True)
            for leak in leaks[:50]:
                reporter.write_line(f"  {leak}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif reporter is not None:
        workers = f" (in {len(_WORKER_SCANS)} workers)" if _WORKER_SCANS else ""
        reporter.write_line(f"secret leak scan: {searched} outputs searched for up to {planted} planted "
                            f"secrets{workers}, none found")
