"""Real Kafka brokers (Apache Kafka's jars from kafka/pom.xml, ZooKeeper mode) for integration tests, started
and stopped by scripts/local-kafka.sh. A cluster lives under its own chroot of the session's ZooKeeper."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "local-kafka.sh"

# What a broker logs when it drops or refuses a dynamic config (kafka.server.DynamicBrokerConfig, 3.9):
# an undecodable password, an update that fails validation or reconfiguration, a whole entity not applied.
DROPPED = re.compile(r"could not be decoded, ignoring|Failed to update broker configuration|"
                     r"configs could not be applied|configs of \d+ could not be applied|Invalid dynamic configuration")


def run_script(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


@dataclass
class KafkaCluster:
    dir: Path
    zk_connect: str  # host:port/chroot
    bootstrap: str  # host:port,…
    brokers: tuple[int, ...]
    secret_file: Path
    sasl_bootstrap: str | None = None  # SASL_PLAINTEXT listeners (SCRAM, AclAuthorizer) when started with them
    _log_marks: dict[int, int] = field(default_factory=dict)

    @property
    def secret(self) -> str:
        return self.secret_file.read_text().strip()

    def log_path(self, broker: int) -> Path:
        return self.dir / f"broker-{broker}" / "server.log"

    def stop_broker(self, broker: int) -> None:
        result = run_script("stop", "--dir", str(self.dir), "--only", str(broker))
        assert result.returncode == 0, result.stderr

    def start_broker(self, broker: int) -> None:
        result = run_script("start", "--dir", str(self.dir), "--only", str(broker))
        assert result.returncode == 0, result.stderr

    def set_encoder_secrets(self, secret: str, old_secret: str | None) -> None:
        """Rewrite every broker's password.encoder.(old.)secret in server.properties (takes effect at restart)."""
        for broker in self.brokers:
            path = self.dir / f"broker-{broker}" / "server.properties"
            lines = [line for line in path.read_text().splitlines()
                     if not line.startswith(("password.encoder.secret=", "password.encoder.old.secret="))]
            lines.append(f"password.encoder.secret={secret}")
            if old_secret is not None:
                lines.append(f"password.encoder.old.secret={old_secret}")
            path.write_text("\n".join(lines) + "\n")
        self.secret_file.write_text(secret)

    def restart_all(self) -> None:
        """A rolling restart: one broker at a time, each back before the next stops."""
        for broker in self.brokers:
            self.stop_broker(broker)
            self.start_broker(broker)

    def mark_logs(self) -> None:
        """Remember where each broker's log ends: `new_log_lines` reads from there."""
        self._log_marks = {b: self._size(b) for b in self.brokers}

    def _size(self, broker: int) -> int:
        try:
            return self.log_path(broker).stat().st_size
        except OSError:
            return 0

    def new_log_lines(self, broker: int) -> list[str]:
        with self.log_path(broker).open("rb") as handle:
            handle.seek(self._log_marks.get(broker, 0))
            return handle.read().decode("utf-8", "replace").splitlines()

    def dropped_configs(self) -> dict[int, list[str]]:
        """Per broker, the log lines since `mark_logs` that say a dynamic config was dropped or refused."""
        out = {b: [line for line in self.new_log_lines(b) if DROPPED.search(line)] for b in self.brokers}
        return {b: lines for b, lines in out.items() if lines}


def start_cluster(directory: Path, zk_connect: str, ports: list[int], secret: str,
                  old_secret: str | None = None, sasl_ports: list[int] | None = None,
                  racks: list[str] | None = None) -> KafkaCluster:
    directory.mkdir(parents=True, exist_ok=True)
    secret_file = directory / "encoder-secret"
    secret_file.write_text(secret)
    args = ["start", "--dir", str(directory), "--brokers", str(len(ports)), "--zookeeper", zk_connect,
            "--ports", ",".join(map(str, ports)), "--secret-file", str(secret_file)]
    if old_secret is not None:
        (directory / "old-secret").write_text(old_secret)
        args += ["--old-secret-file", str(directory / "old-secret")]
    if sasl_ports:
        args += ["--sasl-ports", ",".join(map(str, sasl_ports))]
    if racks:
        args += ["--racks", ",".join(racks)]
    result = run_script(*args)
    if result.returncode != 0:
        raise RuntimeError(f"Kafka brokers did not start:\n{result.stderr[-4000:]}")
    env = dict(line.split("=", 1) for line in (directory / "cluster.env").read_text().split())
    return KafkaCluster(directory, env["ZK_CONNECT"], env["BOOTSTRAP"],
                        tuple(int(b) for b in env["BROKERS"].split(",")), secret_file, env.get("SASL_BOOTSTRAP"))


def kill_brokers(directory: Path) -> None:
    """End of the run: the session's brokers are throwaway, so all are killed at once rather than shut down one
    after another (a controlled shutdown each, up to 20 s while its peers go too: ~45 s of every run's end); the
    stop script then finds them gone and only tidies up (pid files, ZooKeeper)."""
    for pidfile in directory.rglob("kafka.pid"):
        with suppress(ValueError, OSError):  # gone already, or a pid file being rewritten
            os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)


def stop_cluster(cluster: KafkaCluster) -> None:
    kill_brokers(cluster.dir)
    run_script("stop", "--dir", str(cluster.dir))
