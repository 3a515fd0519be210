"""SCRAM credentials exactly as Kafka stores them in a user's config znode (`/config/users/<sanitized>`).

Mirrors Kafka 3.9:
* `ScramMechanism`: the names `SCRAM-SHA-256` / `SCRAM-SHA-512`, their hash and HMAC, `minIterations` 4096 and
  `maxIterations` 16384 (the brokers' `ScramSaslServer.evaluateResponse` refuses fewer than the minimum;
  `ZkAdminManager.alterUserScramCredentials` more than 16384);
* `ScramFormatter.generateCredential`: saltedPassword = Hi(password, salt, iterations) (PBKDF2 with the
  mechanism's HMAC), clientKey = HMAC(saltedPassword, "Client Key"), storedKey = H(clientKey),
  serverKey = HMAC(saltedPassword, "Server Key"); the salt as `ScramFormatter.secureRandomBytes` makes it:
  the UTF-8 bytes of a 130-bit random number written in base 36 (`BigInteger(130, random).toString(36)`);
* `ScramCredentialUtils.credentialToString` / `credentialFromString`:
  `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`.

Plaintext passwords arrive as `Secret` and never leave this module; only verdicts and the stored format do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from reconciler.model import Secret
from reconciler.rules.quotas import SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}  # ScramMechanism: name -> hash
MIN_ITERATIONS = SCRAM_MIN_ITERATIONS  # ScramMechanism.minIterations (both mechanisms)
MAX_ITERATIONS = SCRAM_MAX_ITERATIONS  # ScramMechanism.maxIterations; ZkAdminManager.alterUserScramCredentials
DEFAULT_ITERATIONS = 4096  # ConfigCommand.DefaultScramIterations


class ScramFormatError(ValueError):
    """A stored value that is not a credential Kafka would read (the message never repeats it)."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # keys derived from a password: never shown
        return f"ScramCredential(iterations={self.iterations})"


def _digest(mechanism: str) -> str:
    try:
        return MECHANISMS[mechanism]
    except KeyError:
        raise ScramFormatError(f"{mechanism!r} is not a SCRAM mechanism Kafka knows") from None


def secure_random_salt() -> bytes:
    """`ScramFormatter.secureRandomBytes`: `new BigInteger(130, random).toString(Character.MAX_RADIX)` as UTF-8."""
    number = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while number:
        number, rest = divmod(number, 36)
        text = digits[rest] + text
    return (text or "0").encode("utf-8")


def generate(mechanism: str, password: Secret, iterations: int, salt: bytes | None = None) -> ScramCredential:
    """`ScramFormatter.generateCredential(password, iterations)` (a fresh salt unless one is given)."""
    digest = _digest(mechanism)
    salt = secure_random_salt() if salt is None else salt
    # ScramFormatter.hi is PBKDF2 with the mechanism's HMAC and one output block (the hash's length)
    salted = hashlib.pbkdf2_hmac(digest, password.reveal().encode("utf-8"), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


def to_string(credential: ScramCredential) -> str:
    """`ScramCredentialUtils.credentialToString`."""
    b64 = base64.b64encode
    return (f"salt={b64(credential.salt).decode()},stored_key={b64(credential.stored_key).decode()},"
            f"server_key={b64(credential.server_key).decode()},iterations={credential.iterations}")


def from_string(text: str) -> ScramCredential:
    """`ScramCredentialUtils.credentialFromString`: exactly the four properties (split on ',', each at its first
    '='), Base64 keys and a decimal iteration count; anything else is refused as Kafka refuses it."""
    props: dict[str, str] = {}
    for token in text.split(","):
        index = token.find("=")
        if index <= 0:
            raise ScramFormatError("not a SCRAM credential (a property without '=')")
        props[token[:index]] = token[index + 1:]
    if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ScramFormatError("not a SCRAM credential (salt, stored_key, server_key, iterations expected)")
    try:
        salt, stored, server = (base64.b64decode(props[k], validate=True)
                                for k in ("salt", "stored_key", "server_key"))
    except (binascii.Error, ValueError):
        raise ScramFormatError("not a SCRAM credential (a key is not Base64)") from None
    raw = props["iterations"]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 10:
        raise ScramFormatError("not a SCRAM credential (iterations is not a number)")
    return ScramCredential(salt, stored, server, int(raw))


def matches(mechanism: str, password: Secret, stored: ScramCredential) -> bool:
    """Whether `password` is the one `stored` was made from: its keys recomputed with the STORED salt and
    iterations (what the broker's ScramSaslServer checks a client proof against), compared in constant time.
    The caller bounds `stored.iterations` first (a hostile value must not cost minutes)."""
    again = generate(mechanism, password, stored.iterations, stored.salt)
    return (hmac.compare_digest(again.stored_key, stored.stored_key)
            and hmac.compare_digest(again.server_key, stored.server_key))


def credential_for(mechanism: str, password: Secret, iterations: int) -> str:
    """What apply writes for a credential: a fresh salt, keys from the resolved password, Kafka's format."""
    return to_string(generate(mechanism, password, iterations))
