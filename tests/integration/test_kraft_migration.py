"""What a real ZooKeeper → KRaft migration (KIP-866) does with a password, against what `migrate-check` said
(issue 40 item 6). Kafka 3.9.1 throughout: one ZooKeeper-mode broker (scripts/local-kafka.sh) holding a listener
password our `apply` encoded with the brokers' `password.encoder.secret`, and one KRaft controller with
`zookeeper.metadata.migration.enable=true`, formatted with the ZooKeeper cluster's id; the broker is restarted
with the migration settings, as the migration guide says, and the controller migrates.

* the controller's secret decodes it: `migrate-check` finds nothing to abort, and the controller logs "Completed
  migration of metadata from ZooKeeper to KRaft" with the password's ConfigRecord in its metadata log (read
  with Kafka's own DumpLogSegments);
* it does not: `migrate-check` says the migration aborts, and it does: "Aborting the metadata migration from
  ZooKeeper to KRaft", ConfigException "Password could not be decoded", a fatal fault, the controller process
  ends, no ConfigRecord in its log."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.cli.main import run

REPO = Path(__file__).resolve().parents[2]
KEY = "listener.name.internal.ssl.key.password"
JVM = ["java", "-Xmx256m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def _libs() -> str:
    return subprocess.run(["bash", str(REPO / "scripts" / "kafka-jars.sh")], capture_output=True, text=True,
                          check=True, cwd=REPO).stdout.strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kafka(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO / "scripts" / "local-kafka.sh"), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@contextmanager
def zookeeper_broker(directory: Path, zk_connect: str, secret_file: Path) -> Iterator[Path]:
    started = _kafka("start", "--dir", str(directory), "--brokers", "1", "--zookeeper", zk_connect,
                     "--secret-file", str(secret_file))
    assert started.returncode == 0, started.stderr[-3000:]
    try:
        yield directory
    finally:
        _kafka("stop", "--dir", str(directory))


@contextmanager
def migrating_controller(directory: Path, zk_connect: str, cluster_id: str, secret: str,
                         port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A 3.9.1 KRaft controller in migration mode, formatted with the ZooKeeper cluster's id."""
    directory.mkdir(parents=True)
    props = directory / "controller.properties"
    props.write_text("\n".join([
        "process.roles=controller", "node.id=3000", f"controller.quorum.voters=3000@127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER", f"listeners=CONTROLLER://127.0.0.1:{port}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "zookeeper.metadata.migration.enable=true", f"zookeeper.connect={zk_connect}",
        f"log.dirs={directory / 'data'}", f"password.encoder.secret={secret}", ""]))
    log4j = directory / "log4j.properties"
    log4j.write_text(f"log4j.rootLogger=INFO, FILE\nlog4j.appender.FILE=org.apache.log4j.FileAppender\n"
                     f"log4j.appender.FILE.File={directory / 'server.log'}\n"
                     "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
                     "log4j.appender.FILE.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
    java = [*JVM, f"-Dlog4j.configuration=file:{log4j}", "-cp", f"{_libs()}/*"]
    formatted = subprocess.run([*java, "kafka.tools.StorageTool", "format", "--config", str(props), "--cluster-id",
                                cluster_id], capture_output=True, text=True, timeout=180, check=False)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    proc = subprocess.Popen([*java, "kafka.Kafka", str(props)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def _repo(root: Path, zk_connect: str, brokers_secret: str) -> Path:
    cluster = root / "clusters" / "m1"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: m1}\nspec:\n  kafkaVersion: \"3.9\"\n"
        f"  zookeeper: {{connect: \"{zk_connect}\"}}\n  brokers: [1]\n"
        "  passwordEncoder: {secret: {file: encoder-secret.txt}}\n")
    (cluster / "encoder-secret.txt").write_text(brokers_secret)
    (cluster / "key.txt").write_text("correct horse battery staple")
    (cluster / "brokers.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\nspec:\n  config:\n"
        f"    {KEY}: {{secret: {{file: key.txt}}}}\n")
    return root


def _metadata_records(directory: Path) -> str:
    segments = sorted((directory / "data" / "__cluster_metadata-0").glob("*.log"))
    done = subprocess.run([*JVM, "-cp", f"{_libs()}/*", "kafka.tools.DumpLogSegments", "--cluster-metadata-decoder",
                           "--files", ",".join(map(str, segments))], capture_output=True, text=True, timeout=180,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _wait_for(log: Path, proc: subprocess.Popen[bytes], *, done: str, aborted: str, timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if done in text or aborted in text:
            if aborted in text:
                proc.wait(60)  # the fatal fault handler ends the process
            return text
        time.sleep(1)
    raise AssertionError(f"the controller neither migrated nor aborted within {timeout:g} s")


@pytest.mark.parametrize("decodable", [True, False], ids=["controllers-decode-it", "controllers-cannot"])
def test_a_real_migration_does_what_migrate_check_says(decodable: bool, zk_connect: str, zk_client: KazooClient,
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    brokers_secret = "the brokers' secret"
    controllers_secret = brokers_secret if decodable else "another secret"
    secret_file = tmp_path / "brokers-secret"
    secret_file.write_text(brokers_secret)
    (tmp_path / "controllers-secret").write_text(controllers_secret)
    root = _repo(tmp_path / "repo", zk_connect, brokers_secret)
    with zookeeper_broker(tmp_path / "zk-mode", zk_connect, secret_file) as brokers:
        assert run(["--repo", str(root), "apply", "m1", "--auto-approve", "--allow-dirty"]) == 0
        capsys.readouterr()
        code = run(["--repo", str(root), "migrate-check", "m1", "--controller-secret-file",
                    str(tmp_path / "controllers-secret"), "--format", "json"])
        said = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["kind"] == "abort"]
        assert (code, [f["key"] for f in said]) == ((0, []) if decodable else (2, [KEY]))
        cluster_id = json.loads(zk_client.get("/cluster/id")[0])["id"]
        port = _free_port()
        with migrating_controller(tmp_path / "controller", zk_connect, cluster_id, controllers_secret,
                                  port) as controller:
            # the migration guide's step: the ZooKeeper broker restarts with the migration settings
            assert _kafka("stop", "--dir", str(brokers), "--only", "1").returncode == 0
            with (brokers / "broker-1" / "server.properties").open("a") as props:
                props.write(f"zookeeper.metadata.migration.enable=true\ncontroller.quorum.voters=3000@127.0.0.1:"
                            f"{port}\ncontroller.listener.names=CONTROLLER\n"
                            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n")
            restarted = _kafka("start", "--dir", str(brokers), "--only", "1")
            assert restarted.returncode == 0, restarted.stderr[-3000:]
            log = _wait_for(tmp_path / "controller" / "server.log", controller,
                            done="Completed migration of metadata from ZooKeeper to KRaft",
                            aborted="Aborting the metadata migration from ZooKeeper to KRaft")
            records = _metadata_records(tmp_path / "controller")
            migrated = f'"name":"{KEY}"' in records
            if decodable:
                assert controller.poll() is None and migrated
                assert "Aborting the metadata migration" not in log
            else:
                assert controller.poll() is not None, "the controller still runs after the abort"
                assert "Password could not be decoded" in log and "Encountered fatal fault" in log
                assert not migrated and '"type":"CONFIG_RECORD"' not in records  # nothing migrated
