"""A TLS-only ZooKeeper (Debian's package) with SASL DIGEST-MD5, and the certificates it needs, made here.

The server has no plaintext port at all: only `secureClientPort` (Netty), requiring a client certificate
signed by the test CA, and a JAAS `Server` section with one DIGEST-MD5 user, as a Kafka operator would set
up ZooKeeper for KIP-515 clients. Certificates are generated with `cryptography` for 127.0.0.1 (and
localhost); 127.0.0.2 reaches the same server under a name the certificate does not hold.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import signal
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.conftest import free_port

# zookeeper.jar's manifest pulls in its other dependencies; Netty's TLS handler also needs netty-codec
JARS = ("/usr/share/java/zookeeper.jar", "/usr/share/java/zookeeper-jute.jar",
        "/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar", "/usr/share/java/netty-codec.jar",
        "/usr/share/java/netty-resolver.jar", "/usr/share/java/netty-transport-native-unix-common.jar")


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
          ca: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, signer = (_name(issuer[0]), issuer[1]) if issuer else (_name(subject), key)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


@dataclass
class Pki:
    ca: Path  # the CA certificate clients and the server trust
    other_ca: Path  # a CA nobody uses (an untrusted server, from the client's side)
    client_cert: Path
    client_key: Path  # encrypted with the key password


def make_pki(directory: Path, key_password: str) -> tuple[Pki, Path]:
    """Client-side files, and the server's PEM keystore (key + certificate) for ZooKeeper."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, other_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("reconciler test CA", ca_key, None, ca=True)
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    issuer = ("reconciler test CA", ca_key)
    files = {
        "ca.pem": _pem(ca),
        "other-ca.pem": _pem(_cert("nobody's CA", other_key, None, ca=True)),
        "client.pem": _pem(_cert("kafka-reconciler", client_key, ("reconciler test CA", ca_key))),
        "client-key-secret.pem": _key_pem(client_key, key_password),
        "server-secret.pem": _key_pem(server_key) + _pem(_cert("zookeeper", server_key, issuer)),
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    pki = Pki(directory / "ca.pem", directory / "other-ca.pem", directory / "client.pem",
              directory / "client-key-secret.pem")
    return pki, directory / "server-secret.pem"


@dataclass
class SecureZooKeeper:
    port: int
    directory: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def start_secure_zookeeper(directory: Path, pki: Pki, server_keystore: Path, key_password: str, sasl_user: str,
                           sasl_password: str) -> SecureZooKeeper:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "data").mkdir(exist_ok=True)
    port = free_port()
    (directory / "zoo.cfg").write_text("\n".join([
        "tickTime=2000", f"dataDir={directory / 'data'}", f"secureClientPort={port}",  # no clientPort at all
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
        f"ssl.keyStore.location={server_keystore}", "ssl.keyStore.type=PEM",
        f"ssl.trustStore.location={pki.ca}", "ssl.trustStore.type=PEM",
        "ssl.clientAuth=need", "ssl.clientHostnameVerification=false",
        "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        "admin.enableServer=false", "maxClientCnxns=0", "",
    ]))
    (directory / "jaas.conf").write_text(
        "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  user_{sasl_user}="{sasl_password}";\n}};\n')
    (directory / "log4j.properties").write_text(
        "log4j.rootLogger=INFO, FILE\nlog4j.appender.FILE=org.apache.log4j.FileAppender\n"
        f"log4j.appender.FILE.File={directory / 'server.out'}\n"
        "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.FILE.layout.ConversionPattern=%d %-5p %m%n\n")
    command = ["java", "-Xmx256m", "-XX:+UseSerialGC", f"-Djava.security.auth.login.config={directory / 'jaas.conf'}",
               f"-Dlog4j.configuration=file:{directory / 'log4j.properties'}", "-Dzookeeper.admin.enableServer=false",
               "-cp", ":".join(j for j in JARS if os.path.exists(j)),
               "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(directory / "zoo.cfg")]
    with open(directory / "java.out", "wb") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = SecureZooKeeper(port, directory, process)
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(str(pki.client_cert), str(pki.client_key), password=key_password)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"secure ZooKeeper exited: {(directory / 'java.out').read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, \
                    context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"srvr")
                if b"Mode" in tls.recv(4096):
                    return server
        except OSError:
            time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"secure ZooKeeper did not answer on {port}: {(directory / 'server.out').read_text()[-3000:]}")
