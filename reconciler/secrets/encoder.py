"""Kafka `PasswordEncoder`-compatible encoding of dynamic password configs (Kafka 2.0-3.9, ZooKeeper mode).

A stored value is a `key:value,...` map (ground truth §2): the AES key is PBKDF2(encoder secret, 256-byte
salt), the cipher AES-CBC/PKCS5Padding or AES-GCM/NoPadding. Nothing raised here ever holds the secret, the
plaintext or the encoded string: errors name fields and algorithms only and are raised `from None`, so no
low-level exception (whose text may quote bytes) is chained into a traceback.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass

from reconciler.errors import SecretError, check_cancelled
from reconciler.model import PasswordEncoderSpec, Secret
from reconciler.rules.cluster import MAX_ENCODER_ITERATIONS

# `cryptography` is imported when a password is first encoded or decoded, not with this module: most plans
# have no password to compare, and its import costs 10-15 ms of every command's start.

CBC = "AES/CBC/PKCS5Padding"
GCM = "AES/GCM/NoPadding"
DEFAULT_KEY_FACTORY = "PBKDF2WithHmacSHA512"  # used when password.encoder.keyfactory.algorithm is unset
KEY_FACTORIES: dict[str, str] = {  # Kafka's key factory -> the name of `cryptography`'s hash class
    "PBKDF2WithHmacSHA1": "SHA1",
    "PBKDF2WithHmacSHA224": "SHA224",
    "PBKDF2WithHmacSHA256": "SHA256",
    "PBKDF2WithHmacSHA384": "SHA384",
    "PBKDF2WithHmacSHA512": "SHA512",
}
_FACTORY_BY_LOWER = {name.lower(): name for name in KEY_FACTORIES}  # JCE algorithm names are case-insensitive
_FACTORY_NAMES = ", ".join(KEY_FACTORIES)
_CIPHER_BY_LOWER = {CBC.lower(): CBC, GCM.lower(): GCM}
KEY_LENGTHS = (128, 192, 256)  # AES-128/192/256
SALT_BYTES = 256
GCM_TAG_BITS = 128
_GCM_TAG_LENGTHS = (96, 104, 112, 120, 128)  # what the JDK's GCMParameterSpec accepts for AES

# Field names as Kafka writes them; REQUIRED: written by every version, and Kafka ≤3.7 needs all of them.
KEY_FACTORY, CIPHER, KEY_LENGTH, SALT = "keyFactoryAlgorithm", "cipherAlgorithm", "keyLength", "salt"
ITERATIONS, ENCRYPTED, PASSWORD_LENGTH = "iterations", "encryptedPassword", "passwordLength"
IV, TAG_LENGTH = "initializationVector", "authenticationTagLength"
REQUIRED = (KEY_FACTORY, CIPHER, KEY_LENGTH, SALT, ITERATIONS, ENCRYPTED, PASSWORD_LENGTH, IV)

_JAVA_SPLIT = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # Java's `\s*,\s*` (\s is ASCII-only in Java)
_JAVA_TRIM = "".join(map(chr, range(33)))  # String.trim() strips every char <= U+0020
_JAVA_INT = re.compile(r"[+-]?0*[0-9]{1,10}")  # Integer.parseInt's syntax (range checked separately)
# A derivation costs `iterations` HMACs. MAX_ENCODER_ITERATIONS (600,000) is 146x Kafka's default (4096) and
# OWASP's highest PBKDF2 advice (2023: 600,000 for HMAC-SHA256; 210,000 for SHA-512), so no sound setting is
# refused, while one derivation stays around a second on a small machine: a signal is handled between
# derivations within a couple of seconds. More is refused before deriving: a stored 2147483647 would take tens
# of minutes per password.
MAX_SALT_BYTES = 4096  # Kafka writes 256


class EncodingBoundsError(SecretError):
    """A stored or configured encoding asks for more work than any real Kafka setting (refused, not derived)."""


@dataclass(frozen=True, slots=True)
class EncoderParams:
    """One broker's `password.encoder.*` settings; `secret` is a `Secret`, so the repr stays redacted."""

    secret: Secret
    key_factory_algorithm: str | None = None  # None: PBKDF2WithHmacSHA512, like Kafka
    cipher_algorithm: str = CBC
    key_length: int = 128
    iterations: int = 4096

    def __post_init__(self) -> None:
        kdf = self.key_factory_algorithm
        if kdf is not None and kdf.lower() not in _FACTORY_BY_LOWER:
            raise SecretError(f"unsupported password.encoder.keyfactory.algorithm; use {_FACTORY_NAMES}")
        if self.cipher_algorithm not in (CBC, GCM):
            raise SecretError(f"unsupported password.encoder.cipher.algorithm; use {CBC} or {GCM}")
        if self.key_length not in KEY_LENGTHS:
            raise SecretError(f"password.encoder.key.length must be 128, 192 or 256, not {self.key_length}")
        if self.iterations < 1:
            raise SecretError(f"password.encoder.iterations must be at least 1, not {self.iterations}")
        if self.iterations > MAX_ENCODER_ITERATIONS:
            raise EncodingBoundsError(f"password.encoder.iterations={self.iterations} is over the "
                                      f"{MAX_ENCODER_ITERATIONS:,} this tool derives keys with")

    @classmethod
    def from_spec(cls, spec: PasswordEncoderSpec, secret: Secret) -> EncoderParams:
        """Params for `spec` with its resolved secret (the new one, or the old one during a rotation)."""
        kdf, cipher = spec.key_factory_algorithm, spec.cipher_algorithm
        return cls(secret, kdf, cipher, spec.key_length, spec.iterations)


def _parse_csv_map(value: str) -> dict[str, str] | None:
    """Kafka's `Csv.parseCsvMap`; None where Kafka would throw (an item without ':')."""
    if not value:
        return {}
    items = _JAVA_SPLIT.split(value)
    while items and not items[-1]:  # Java's String.split drops trailing empty strings
        items.pop()
    result: dict[str, str] = {}
    for item in items:
        key, sep, val = item.rpartition(":")
        if not sep:
            return None
        result[key.strip(_JAVA_TRIM)] = val.strip(_JAVA_TRIM)  # duplicate keys: last wins, as in a HashMap
    return result


def is_encoded_form(value: str) -> bool:
    """Does `value` look like a Kafka-encoded password (every field Kafka writes is present)? No crypto."""
    fields = _parse_csv_map(value)
    return fields is not None and all(name in fields for name in REQUIRED)


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise SecretError(f"{what} is not valid Unicode (it contains unpaired surrogates)") from None


def _derive_key(secret: Secret, kdf: str, key_bits: int, salt: bytes, iterations: int) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    check_cancelled()  # a signal ends the command between derivations (each is bounded, see above)
    hash_class = getattr(hashes, KEY_FACTORIES[kdf])
    pbkdf2 = PBKDF2HMAC(hash_class(), length=key_bits // 8, salt=salt, iterations=iterations)
    return pbkdf2.derive(_utf8(secret.reveal(), "password.encoder.secret"))  # Java: secret chars -> UTF-8


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode(plaintext: Secret, params: EncoderParams) -> str:
    """Encode like `EncryptingPasswordEncoder.encode`: random salt and IV, fields in Kafka 3.9's order."""
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    data = _utf8(plaintext.reveal(), "the password")
    salt = os.urandom(SALT_BYTES)
    kdf = _FACTORY_BY_LOWER[(params.key_factory_algorithm or DEFAULT_KEY_FACTORY).lower()]
    key = _derive_key(params.secret, kdf, params.key_length, salt, params.iterations)
    gcm = params.cipher_algorithm == GCM
    if gcm:  # the JDK's defaults for Cipher.init without parameters: 12-byte IV, 128-bit tag appended
        iv = os.urandom(12)
        aead = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
        encrypted = aead.update(data) + aead.finalize() + aead.tag
    else:
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()  # PKCS5Padding is PKCS#7 on 16-byte blocks
        cbc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        encrypted = cbc.update(padder.update(data) + padder.finalize()) + cbc.finalize()
    fields = [
        (IV, _b64(iv)),
        (KEY_LENGTH, str(params.key_length)),
        (SALT, _b64(salt)),
        (KEY_FACTORY, kdf),
        (CIPHER, params.cipher_algorithm),
        *([(TAG_LENGTH, str(GCM_TAG_BITS))] if gcm else []),
        (ITERATIONS, str(params.iterations)),
        (PASSWORD_LENGTH, str(_java_length(plaintext.reveal()))),
        (ENCRYPTED, _b64(encrypted)),
    ]
    return ",".join(f"{name}:{value}" for name, value in fields)


def _java_length(text: str) -> int:
    """Java's `String.length()`: UTF-16 code units (a character outside the BMP counts 2)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _int(fields: dict[str, str], name: str) -> int:
    raw = fields[name]
    if not _JAVA_INT.fullmatch(raw) or not -(2**31) <= int(raw) < 2**31:
        raise SecretError(f"malformed encoded password: field {name} is not an integer")
    return int(raw)


def _bytes(fields: dict[str, str], name: str) -> bytes:
    raw = fields[name]
    try:  # java.util.Base64's basic decoder: standard alphabet, padding optional
        return base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise SecretError(f"malformed encoded password: field {name} is not valid base64") from None


def _check_derivation(key_bits: int, iterations: int) -> None:
    """A stored value's key length and iteration count, checked before the (deliberately slow) derivation."""
    if key_bits not in KEY_LENGTHS:
        raise SecretError(f"stored keyLength {key_bits} is not an AES key length (128, 192 or 256)")
    if iterations < 1:
        raise SecretError("malformed encoded password: iterations must be at least 1")
    if iterations > MAX_ENCODER_ITERATIONS:
        raise EncodingBoundsError(f"stored value asks for {iterations} PBKDF2 iterations, over the "
                                  f"{MAX_ENCODER_ITERATIONS:,} this tool derives (Kafka's default is 4096); "
                                  "refusing to derive its key")


def decode(encoded: str, params: EncoderParams) -> Secret:
    """Decode like `EncryptingPasswordEncoder.decode`.

    KDF, cipher, key length, salt, iterations and IV come from the stored string; from `params` only the
    secret and, as in Kafka, the *configured* cipher, which picks the IV parser: so CBC-configured brokers
    cannot decode GCM values and vice versa. Raises `SecretError` saying which of these went wrong.
    """
    fields = _parse_csv_map(encoded)
    if fields is None:
        raise SecretError("malformed encoded password: an item has no ':' (is this a Kafka-encoded value?)")
    for name in REQUIRED:
        if name not in fields:
            raise SecretError(f"malformed encoded password: missing field {name}")
    stored_cipher = _CIPHER_BY_LOWER.get(fields[CIPHER].lower())
    if stored_cipher is None:
        raise SecretError(f"stored cipherAlgorithm is not supported (Kafka writes {CBC} or {GCM})")
    configured_gcm = params.cipher_algorithm.startswith("AES/GCM/")  # Kafka's IV-parser choice
    if (stored_cipher == GCM) != configured_gcm:
        raise SecretError(
            f"stored value was encoded with {stored_cipher} but the encoder is configured for "
            f"{params.cipher_algorithm} (Kafka cannot decode across modes)"
        )
    if configured_gcm and TAG_LENGTH not in fields:
        raise SecretError(f"malformed encoded password: missing field {TAG_LENGTH}")
    kdf = _FACTORY_BY_LOWER.get(fields[KEY_FACTORY].lower())
    if kdf is None:
        raise SecretError(f"stored keyFactoryAlgorithm is not supported (one of {_FACTORY_NAMES})")
    key_bits, iterations, length = (_int(fields, name) for name in (KEY_LENGTH, ITERATIONS, PASSWORD_LENGTH))
    _check_derivation(key_bits, iterations)
    salt, iv, encrypted = _bytes(fields, SALT), _bytes(fields, IV), _bytes(fields, ENCRYPTED)
    if not salt or len(salt) > MAX_SALT_BYTES:
        raise SecretError(f"malformed encoded password: salt of {len(salt)} bytes (Kafka writes 256)")
    # shape checks before the (deliberately slow) key derivation
    tag_bits = _int(fields, TAG_LENGTH) if configured_gcm else 0
    tag_bytes = tag_bits // 8
    if configured_gcm and (
        tag_bits not in _GCM_TAG_LENGTHS or not 8 <= len(iv) <= 128 or len(encrypted) < tag_bytes
    ):
        raise SecretError("malformed encoded password: bad GCM IV, tag or ciphertext length")
    if not configured_gcm and (len(iv) != 16 or not encrypted or len(encrypted) % 16):
        raise SecretError("malformed encoded password: bad CBC IV or ciphertext length")
    key = _derive_key(params.secret, kdf, key_bits, salt, iterations)
    text = _decrypt(key, iv, encrypted, tag_bytes if configured_gcm else None)
    if _java_length(text) != length:
        raise SecretError("stored password could not be decoded: sanity check of length failed")
    return Secret(text)


def _decrypt(key: bytes, iv: bytes, encrypted: bytes, gcm_tag_bytes: int | None) -> str:
    """AES-GCM (Java appends the tag to the ciphertext) or AES-CBC with PKCS#5 padding, to UTF-8 text."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    try:
        if gcm_tag_bytes is not None:
            cut = len(encrypted) - gcm_tag_bytes
            mode = modes.GCM(iv, encrypted[cut:], min_tag_length=12)
            aead = Cipher(algorithms.AES(key), mode).decryptor()
            data = aead.update(encrypted[:cut]) + aead.finalize()
        else:
            cbc = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
            unpadder = padding.PKCS7(128).unpadder()
            data = unpadder.update(cbc.update(encrypted) + cbc.finalize()) + unpadder.finalize()
        return data.decode("utf-8")  # a wrong key that survives the padding check yields garbage bytes here
    except (InvalidTag, ValueError):
        raise SecretError(
            "stored password could not be decoded with the configured password.encoder.secret (wrong secret?)"
        ) from None


def try_decode(encoded: str, *secrets_in_order: EncoderParams) -> tuple[Secret, int] | None:
    """Decode with the first params that work (e.g. new secret, then old) -> (plaintext, index), or None."""
    for index, params in enumerate(secrets_in_order):
        try:
            return decode(encoded, params), index
        except EncodingBoundsError:
            raise  # the stored value itself is refused: no other secret would change that
        except SecretError:
            continue
    return None
