"""The committed ConfigDef dumps (kafka/configdefs/) are what tools/configdefs/ConfigDefsDump.java reads from the
pinned releases' own jars: run on the jars again, it gives them byte for byte (issue 41). Real jars, a real JVM."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("pom", "release"), [("kafka/pom-4.xml", "4.1.1"), ("kafka/pom.xml", "3.9.1")])
def test_the_extractor_reproduces_the_committed_dump(pom: str, release: str) -> None:
    libs = subprocess.run(["bash", "scripts/kafka-jars.sh", "--pom", pom], cwd=REPO, capture_output=True,
                          text=True, timeout=900, check=True).stdout.strip()
    dumped = subprocess.run(["java", "-cp", f"{libs}/*", "tools/configdefs/ConfigDefsDump.java"], cwd=REPO,
                            capture_output=True, text=True, timeout=300, check=True).stdout
    committed = (REPO / "kafka" / "configdefs" / f"{release}.json").read_text(encoding="utf-8")
    assert dumped == committed, f"kafka/configdefs/{release}.json is stale: run bash tools/configdefs/dump.sh"
