"""Kafka PasswordEncoder compatibility: Kafka's vectors, an independent decoder, Kafka's quirks, no leaks."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import itertools
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.errors import SecretError
from reconciler.model import PasswordEncoderSpec, Secret, SecretRef
from reconciler.secrets import encoder as passwords
from reconciler.secrets.encoder import CBC, GCM, EncoderParams, decode, encode, is_encoded_form, try_decode

VECTORS_FILE = Path(__file__).resolve().parents[1] / "data" / "password-vectors.json"
DATA: dict[str, Any] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))

CBC_FIELDS = {
    "keyFactoryAlgorithm",
    "cipherAlgorithm",
    "keyLength",
    "salt",
    "iterations",
    "encryptedPassword",
    "passwordLength",
    "initializationVector",
}
GCM_FIELDS = CBC_FIELDS | {"authenticationTagLength"}
PLAINTEXTS = {
    "empty": "",
    "unicode": "pässwörd✓",
    "emoji": " 🔑 spaced emoji ",
    "long200": "".join(chr(ord("a") + i % 26) for i in range(200)),
    "separators": "a,b:c=d, key:value=x,,::==",
}


# --- vectors --------------------------------------------------------------------------------------------


def _label(plaintext: str) -> str:
    known = {text: name for name, text in PLAINTEXTS.items()}
    if plaintext in known:
        return known[plaintext]
    if len(plaintext) > 40:
        return f"len{len(plaintext)}"
    return re.sub(r"[^0-9A-Za-z]+", "_", plaintext.encode("ascii", "backslashreplace").decode()).strip("_")


def _vectors() -> list[Any]:
    """Every Kafka-format vector in the file (any list of entries with `encoded`), with readable ids."""
    out = []
    for group, entries in DATA.items():
        if not isinstance(entries, list):
            continue
        for n, v in enumerate(entries):
            if not isinstance(v, dict) or "encoded" not in v:
                continue
            cipher = v.get("cipher_algorithm") or v["decoder_configured_cipher"]
            producer = "java" if group.startswith("java") else group.split("_")[0]
            vid = f"{producer}-{v.get('set', cipher.split('/')[1].lower())}-{n:02d}-{_label(v['plaintext'])}"
            out.append(pytest.param(v, cipher, id=vid))
    return out


VECTORS = _vectors()
JAVA: list[dict[str, Any]] = list(DATA["java_encoded_vectors"])


def test_vector_file_is_complete() -> None:
    assert len(DATA["java_encoded_vectors"]) == 28
    assert len(DATA["python_encoded_vectors_decoded_by_java"]) == 25
    assert len(VECTORS) == 53


@pytest.mark.parametrize(("vector", "cipher"), VECTORS)
def test_kafka_vector_decodes(vector: dict[str, Any], cipher: str) -> None:
    params = EncoderParams(Secret(vector["secret"]), cipher_algorithm=cipher)
    assert decode(vector["encoded"], params) == Secret(vector["plaintext"])
    assert is_encoded_form(vector["encoded"])
    if "password_length_field" in vector:
        assert f"passwordLength:{vector['password_length_field']}" in vector["encoded"]


@pytest.mark.parametrize(("vector", "cipher"), VECTORS)
def test_independent_decoder_agrees_with_kafka(vector: dict[str, Any], cipher: str) -> None:
    """Validates the test's own decoder against Kafka's output before it is used to judge ours."""
    assert independent_decode(vector["encoded"], vector["secret"]) == vector["plaintext"]


@pytest.mark.parametrize(
    "vector", [v for v in JAVA if v["cipher_algorithm"] == GCM], ids=lambda v: _label(v["plaintext"])
)
def test_cbc_configured_decoder_cannot_decode_gcm_value(vector: dict[str, Any]) -> None:
    with pytest.raises(SecretError) as exc:
        decode(vector["encoded"], EncoderParams(Secret(vector["secret"]), cipher_algorithm=CBC))
    assert str(exc.value) == (
        "stored value was encoded with AES/GCM/NoPadding but the encoder is configured for "
        "AES/CBC/PKCS5Padding (Kafka cannot decode across modes)"
    )


def test_gcm_configured_decoder_cannot_decode_cbc_values() -> None:
    for vector in (v for v in JAVA if v["cipher_algorithm"] == CBC):
        with pytest.raises(
            SecretError, match="encoded with AES/CBC/PKCS5Padding but the encoder is configured"
        ):
            decode(vector["encoded"], EncoderParams(Secret(vector["secret"]), cipher_algorithm=GCM))


def test_wrong_secret_is_reported_for_every_vector() -> None:
    for vector in JAVA:
        params = EncoderParams(Secret("not-the-secret"), cipher_algorithm=vector["cipher_algorithm"])
        with pytest.raises(SecretError, match=r"configured password.encoder.secret \(wrong secret\?\)"):
            decode(vector["encoded"], params)


@pytest.mark.parametrize("delta", [1, -1])
def test_tampered_length_fails_the_sanity_check(delta: int) -> None:
    for vector in JAVA:
        if vector["password_length_field"] + delta < 0:
            continue
        tampered = _set_field(
            vector["encoded"], "passwordLength", str(vector["password_length_field"] + delta)
        )
        params = EncoderParams(Secret(vector["secret"]), cipher_algorithm=vector["cipher_algorithm"])
        with pytest.raises(SecretError, match="sanity check of length failed"):
            decode(tampered, params)


def test_tampered_gcm_ciphertext_fails_authentication() -> None:
    vector = next(v for v in JAVA if v["cipher_algorithm"] == GCM)
    raw = bytearray(base64.b64decode(_fields(vector["encoded"])["encryptedPassword"]))
    raw[0] ^= 1
    tampered = _set_field(vector["encoded"], "encryptedPassword", base64.b64encode(bytes(raw)).decode())
    with pytest.raises(SecretError, match="wrong secret"):
        decode(tampered, EncoderParams(Secret(vector["secret"]), cipher_algorithm=GCM))


# --- what we encode, judged by an independent decoder ------------------------------------------------


def independent_decode(encoded: str, secret: str) -> str:
    """Decoder written from ground truth §2 alone: hashlib PBKDF2 + low-level AES, hand-rolled unpadding."""
    fields = _fields(encoded)
    prf = fields["keyFactoryAlgorithm"].removeprefix("PBKDF2WithHmac").lower()
    key = hashlib.pbkdf2_hmac(
        prf,
        secret.encode("utf-8"),
        base64.b64decode(fields["salt"]),
        int(fields["iterations"]),
        int(fields["keyLength"]) // 8,
    )
    iv = base64.b64decode(fields["initializationVector"])
    data = base64.b64decode(fields["encryptedPassword"])
    if fields["cipherAlgorithm"] == "AES/GCM/NoPadding":
        tag = int(fields["authenticationTagLength"]) // 8
        gcm = Cipher(algorithms.AES(key), modes.GCM(iv, data[-tag:])).decryptor()
        raw = gcm.update(data[:-tag]) + gcm.finalize()
    else:
        assert fields["cipherAlgorithm"] == "AES/CBC/PKCS5Padding"
        cbc = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        padded = cbc.update(data) + cbc.finalize()
        pad = padded[-1]
        assert 1 <= pad <= 16 and padded.endswith(bytes([pad]) * pad)
        raw = padded[:-pad]
    text = raw.decode("utf-8")
    assert len(text.encode("utf-16-le")) // 2 == int(fields["passwordLength"])
    return text


def _fields(encoded: str) -> dict[str, str]:
    items = [item.rpartition(":") for item in re.split(r"\s*,\s*", encoded.strip()) if item]
    return {k.strip(): v.strip() for k, _, v in items}


def _set_field(encoded: str, name: str, value: str) -> str:
    fields = _fields(encoded)
    fields[name] = value
    return ",".join(f"{k}:{v}" for k, v in fields.items())


PARAM_SETS = list(
    itertools.product(
        [None, "PBKDF2WithHmacSHA1", "PBKDF2WithHmacSHA256"], [CBC, GCM], [128, 256], [1000, 4096, 8192]
    )
)


@pytest.mark.parametrize("plaintext", PLAINTEXTS.values(), ids=PLAINTEXTS.keys())
@pytest.mark.parametrize(
    ("kdf", "cipher", "key_length", "iterations"),
    PARAM_SETS,
    ids=[f"{k or 'default'}-{c.split('/')[1]}-{kl}-{it}" for k, c, kl, it in PARAM_SETS],
)
def test_encoded_value_decodes_independently(
    plaintext: str, kdf: str | None, cipher: str, key_length: int, iterations: int
) -> None:
    params = EncoderParams(Secret("sëcret-✓-🔑"), kdf, cipher, key_length, iterations)
    encoded = encode(Secret(plaintext), params)
    fields = _fields(encoded)
    assert fields["keyFactoryAlgorithm"] == (kdf or "PBKDF2WithHmacSHA512")
    assert (fields["cipherAlgorithm"], fields["keyLength"], fields["iterations"]) == (
        cipher,
        str(key_length),
        str(iterations),
    )
    assert independent_decode(encoded, "sëcret-✓-🔑") == plaintext


def test_192_bit_key_and_sha384_are_supported() -> None:
    params = EncoderParams(Secret("s"), "PBKDF2WithHmacSHA384", GCM, 192, 1024)
    encoded = encode(Secret("KafkaKey1"), params)
    assert independent_decode(encoded, "s") == "KafkaKey1"
    assert decode(encoded, params) == Secret("KafkaKey1")


def test_password_length_counts_utf16_code_units() -> None:
    encoded = encode(Secret(" 🔑 spaced emoji "), EncoderParams(Secret("s"), iterations=1))
    assert _fields(encoded)["passwordLength"] == "17"  # 16 code points, the emoji is a surrogate pair


@pytest.mark.parametrize("cipher", [CBC, GCM])
def test_encoded_output_has_exactly_kafkas_fields(cipher: str) -> None:
    params = EncoderParams(Secret("s"), cipher_algorithm=cipher, iterations=1)
    first, second = encode(Secret("pw"), params), encode(Secret("pw"), params)
    fields = _fields(first)
    assert set(fields) == (GCM_FIELDS if cipher == GCM else CBC_FIELDS)
    assert first.count(",") == len(fields) - 1 and " " not in first  # Kafka's compact "k:v,k:v" form
    assert len(base64.b64decode(fields["salt"])) == 256
    assert len(base64.b64decode(fields["initializationVector"])) == (12 if cipher == GCM else 16)
    if cipher == GCM:
        assert fields["authenticationTagLength"] == "128"
        assert len(base64.b64decode(fields["encryptedPassword"])) == 2 + 16  # ciphertext ‖ 16-byte tag
    else:
        assert len(base64.b64decode(fields["encryptedPassword"])) == 16
    assert first != second  # random salt and IV
    assert is_encoded_form(first)


@settings(max_examples=60, deadline=None)
@given(
    plaintext=st.text(),  # hypothesis never generates surrogates here, emoji and other astral chars included
    secret=st.text(min_size=1, max_size=40),
    kdf=st.sampled_from([None, "PBKDF2WithHmacSHA1", "PBKDF2WithHmacSHA256", "PBKDF2WithHmacSHA512"]),
    cipher=st.sampled_from([CBC, GCM]),
    key_length=st.sampled_from([128, 192, 256]),
    iterations=st.integers(min_value=1, max_value=20),
)
def test_round_trip(
    plaintext: str, secret: str, kdf: str | None, cipher: str, key_length: int, iterations: int
) -> None:
    params = EncoderParams(Secret(secret), kdf, cipher, key_length, iterations)
    encoded = encode(Secret(plaintext), params)
    assert decode(encoded, params) == Secret(plaintext)
    assert independent_decode(encoded, secret) == plaintext


# --- parsing like Csv.parseCsvMap -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_field_order_and_whitespace_around_separators_are_tolerated(seed: int) -> None:
    vector = next(v for v in JAVA if v["cipher_algorithm"] == GCM)
    items = [f"{k}:{v}" for k, v in _fields(vector["encoded"]).items()]
    random.Random(seed).shuffle(items)
    spaced = "  " + " ,\t".join(items[:3]) + "\n,  " + " , ".join(items[3:]) + " ,"
    assert decode(spaced, EncoderParams(Secret(vector["secret"]), cipher_algorithm=GCM)) == Secret(
        vector["plaintext"]
    )
    assert is_encoded_form(spaced)


def test_algorithm_names_are_case_insensitive_like_jce() -> None:
    params = EncoderParams(Secret("s"), iterations=1)
    encoded = encode(Secret("pw"), params)
    lowered = _set_field(encoded, "keyFactoryAlgorithm", "pbkdf2withhmacsha512")
    lowered = _set_field(lowered, "cipherAlgorithm", "aes/cbc/pkcs5padding")
    assert decode(lowered, params) == Secret("pw")


@pytest.mark.parametrize("field", sorted(CBC_FIELDS))
def test_missing_field_is_named(field: str) -> None:
    params = EncoderParams(Secret("s"), iterations=1)
    fields = _fields(encode(Secret("pw"), params))
    del fields[field]
    broken = ",".join(f"{k}:{v}" for k, v in fields.items())
    with pytest.raises(SecretError, match=f"^malformed encoded password: missing field {field}$"):
        decode(broken, params)
    assert not is_encoded_form(broken)


def test_gcm_value_without_tag_length_is_malformed() -> None:
    params = EncoderParams(Secret("s"), cipher_algorithm=GCM, iterations=1)
    fields = _fields(encode(Secret("pw"), params))
    del fields["authenticationTagLength"]
    with pytest.raises(SecretError, match="missing field authenticationTagLength"):
        decode(",".join(f"{k}:{v}" for k, v in fields.items()), params)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("salt", "not base64!", "field salt is not valid base64"),
        ("iterations", "4k", "field iterations is not an integer"),
        ("keyLength", "64", "not an AES key length"),
        ("keyFactoryAlgorithm", "PBKDF2WithHmacMD5", "stored keyFactoryAlgorithm is not supported"),
        ("cipherAlgorithm", "AES/CTR/NoPadding", "stored cipherAlgorithm is not supported"),
        ("initializationVector", "AAAA", "bad CBC IV"),
    ],
)
def test_malformed_fields_are_reported(field: str, value: str, message: str) -> None:
    params = EncoderParams(Secret("s"), iterations=1)
    broken = _set_field(encode(Secret("pw"), params), field, value)
    with pytest.raises(SecretError, match=message):
        decode(broken, params)


@pytest.mark.parametrize(("tag_bits", "ok"), [(128, True), (96, True), (100, False), (64, False)])
def test_gcm_tag_length_is_read_from_the_stored_value(tag_bits: int, ok: bool) -> None:
    params = EncoderParams(Secret("s"), cipher_algorithm=GCM, iterations=1)
    encoded = encode(Secret("pw"), params)
    full = base64.b64decode(_fields(encoded)["encryptedPassword"])
    truncated = full[: len(full) - (128 - tag_bits) // 8]  # a shorter GCM tag is a prefix of the full one
    stored = _set_field(encoded, "encryptedPassword", base64.b64encode(truncated).decode())
    stored = _set_field(stored, "authenticationTagLength", str(tag_bits))
    if ok:
        assert decode(stored, params) == Secret("pw")
    else:
        with pytest.raises(SecretError, match="bad GCM IV, tag or ciphertext length"):
            decode(stored, params)


@pytest.mark.parametrize("value", ["", "changeit", "a:b,c:d", "no colon at all, x:y", "salt:abc"])
def test_plain_values_are_not_encoded_form(value: str) -> None:
    assert not is_encoded_form(value)
    with pytest.raises(SecretError, match="malformed encoded password"):
        decode(value, EncoderParams(Secret("s")))


# --- rotation ----------------------------------------------------------------------------------------------


def test_try_decode_picks_the_secret_that_works() -> None:
    new = EncoderParams(Secret("new-secret"), iterations=1024)
    old = EncoderParams(Secret("old-secret"), iterations=1024)
    other = EncoderParams(Secret("other"), iterations=1024)
    assert try_decode(encode(Secret("pw1"), new), new, old) == (Secret("pw1"), 0)
    assert try_decode(encode(Secret("pw2"), old), new, old) == (Secret("pw2"), 1)
    assert try_decode(encode(Secret("pw3"), other), new, old) is None
    assert try_decode(encode(Secret("pw4"), new)) is None
    assert try_decode("changeit", new, old) is None


def test_try_decode_respects_each_params_cipher_mode() -> None:
    old_gcm = EncoderParams(Secret("old"), cipher_algorithm=GCM, iterations=1024)
    new_cbc = EncoderParams(Secret("new"), iterations=1024)
    same_secret_gcm = dataclasses.replace(new_cbc, cipher_algorithm=GCM)
    encoded = encode(Secret("pw"), old_gcm)
    assert try_decode(encoded, new_cbc, old_gcm) == (Secret("pw"), 1)
    assert try_decode(encode(Secret("pw"), same_secret_gcm), new_cbc) is None  # cross-mode, like Kafka


def test_decode_takes_kdf_key_length_and_iterations_from_the_stored_value() -> None:
    stored = encode(Secret("pw"), EncoderParams(Secret("s"), "PBKDF2WithHmacSHA1", CBC, 256, 1000))
    assert decode(stored, EncoderParams(Secret("s"))) == Secret("pw")


# --- params -------------------------------------------------------------------------------------------------


def test_from_spec_copies_the_encoder_settings() -> None:
    spec = PasswordEncoderSpec(SecretRef(env="X"), None, "PBKDF2WithHmacSHA256", GCM, 256, 8192)
    params = EncoderParams.from_spec(spec, Secret("s"))
    assert params == EncoderParams(Secret("s"), "PBKDF2WithHmacSHA256", GCM, 256, 8192)
    assert EncoderParams.from_spec(PasswordEncoderSpec(), Secret("s")) == EncoderParams(Secret("s"))


@pytest.mark.parametrize(
    "changes",
    [
        {"cipher_algorithm": "AES/CTR/NoPadding"},
        {"cipher_algorithm": "aes/gcm/nopadding"},
        {"key_length": 64},
        {"iterations": 0},
        {"key_factory_algorithm": "PBKDF2WithHmacMD5"},
    ],
    ids=lambda c: next(iter(c)),
)
def test_invalid_encoder_settings_are_rejected(changes: dict[str, Any]) -> None:
    with pytest.raises(SecretError, match=r"password\.encoder"):
        EncoderParams(Secret("s"), **changes)


# --- nothing leaks ------------------------------------------------------------------------------------------

SECRET = "Sup3r-S3cret-encoder-key"
PLAIN = "hunter2-the-plaintext"


def _failures() -> list[tuple[str, Any]]:
    params = EncoderParams(Secret(SECRET), iterations=1)
    good = encode(Secret(PLAIN), params)
    gcm = encode(Secret(PLAIN), dataclasses.replace(params, cipher_algorithm=GCM))
    n = len(PLAIN)
    cases: list[tuple[str, Any]] = [
        (good, lambda: decode(good, EncoderParams(Secret(PLAIN + SECRET), iterations=1))),
        (gcm, lambda: decode(gcm, params)),
        (good, lambda: decode(good, dataclasses.replace(params, cipher_algorithm=GCM))),
        (good, lambda: decode(_set_field(good, "passwordLength", str(n + 1)), params)),
        (good, lambda: decode(_set_field(good, "salt", PLAIN), params)),
        (good, lambda: decode(_set_field(good, "iterations", PLAIN), params)),
        (good, lambda: decode(_set_field(good, "keyFactoryAlgorithm", PLAIN), params)),
        (good, lambda: decode(_set_field(good, "cipherAlgorithm", PLAIN), params)),
        (PLAIN, lambda: decode(PLAIN, params)),
        (PLAIN, lambda: encode(Secret(PLAIN + "\ud800"), params)),
        (PLAIN, lambda: EncoderParams(Secret(SECRET), cipher_algorithm=PLAIN)),
    ]
    return cases


@pytest.mark.parametrize("index", range(len(_failures())))
def test_errors_never_contain_secret_plaintext_or_encoded_value(index: int) -> None:
    encoded, action = _failures()[index]
    with pytest.raises(SecretError) as exc:
        action()
    err = exc.value
    texts = (str(err), repr(err), err.message, repr(err.args))
    salt = _fields(encoded).get("salt", "")
    for text in texts:
        assert SECRET not in text
        assert PLAIN not in text
        assert encoded not in text
        assert not salt or salt[:24] not in text
    # no chained low-level exception (whose text may quote bytes) shows up in a traceback
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)


def test_params_and_results_are_redacted() -> None:
    params = EncoderParams(Secret(SECRET), iterations=1)
    assert SECRET not in repr(params) and SECRET not in str(params)
    decoded = decode(encode(Secret(PLAIN), params), params)
    assert PLAIN not in repr(decoded) and PLAIN not in str(decoded)
    assert decoded.reveal() == PLAIN


def test_module_exports() -> None:
    assert passwords.DEFAULT_KEY_FACTORY == "PBKDF2WithHmacSHA512"
    assert set(passwords.REQUIRED) == CBC_FIELDS
