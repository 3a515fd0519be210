"""Secret references: environment variables, files relative to the manifest repo, sealed values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reconciler.errors import SecretError
from reconciler.model import Secret, SecretRef
from reconciler.secrets.refs import available, resolve, resolve_optional

VALUE = "s3cr3t-value-do-not-print"


def test_env_reference(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RECONCILER_TEST_SECRET", VALUE)
    assert resolve(SecretRef(env="RECONCILER_TEST_SECRET"), tmp_path) == Secret(VALUE)
    assert available(SecretRef(env="RECONCILER_TEST_SECRET"), tmp_path)


def test_env_reference_set_to_empty_is_resolved(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RECONCILER_TEST_SECRET", "")
    assert resolve(SecretRef(env="RECONCILER_TEST_SECRET"), tmp_path) == Secret("")


def test_missing_env_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RECONCILER_TEST_MISSING", raising=False)
    ref = SecretRef(env="RECONCILER_TEST_MISSING")
    with pytest.raises(SecretError, match="environment variable RECONCILER_TEST_MISSING is not set"):
        resolve(ref, tmp_path)
    assert not available(ref, tmp_path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"pw", "pw"),
        (b"pw\n", "pw"),
        (b"pw\n\n", "pw\n"),  # only ONE trailing newline is removed
        (b"pw\r\n", "pw"),  # a Windows line ending counts as one newline
        (b"p\rw\r", "p\rw\r"),  # bytes are kept verbatim: no universal-newline translation
        (b" pw \n", " pw "),  # other whitespace is significant
        ("pässwörd✓ 🔑\n".encode(), "pässwörd✓ 🔑"),
        (b"", ""),
    ],
)
def test_file_reference(tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "pw.txt").write_bytes(content)
    ref = SecretRef(file="secrets/pw.txt")
    assert resolve(ref, tmp_path) == Secret(expected)
    assert available(ref, tmp_path)


def test_file_path_is_relative_to_base_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "pw").write_text("in-repo")
    (tmp_path / "pw").write_text("in-cwd")
    monkeypatch.chdir(tmp_path)
    assert resolve(SecretRef(file="pw"), tmp_path / "repo") == Secret("in-repo")


def test_absolute_file_path_is_used_as_is_inside_the_repository(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("abs")
    assert resolve(SecretRef(file=str(tmp_path / "pw")), tmp_path / "elsewhere", tmp_path) == Secret("abs")


def test_file_outside_the_repository_needs_an_operator_approved_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    (mounted / "pw").write_text("abs")
    repo = tmp_path / "repo"
    repo.mkdir()
    ref = SecretRef(file=str(mounted / "pw"))
    with pytest.raises(SecretError, match="outside the repository"):
        resolve(ref, repo, repo)
    monkeypatch.setenv("RECONCILER_SECRET_DIRS", str(mounted))
    assert resolve(ref, repo, repo) == Secret("abs")


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    ref = SecretRef(file="nope/pw.txt")
    with pytest.raises(SecretError, match=r"secret file .*nope/pw\.txt does not exist"):
        resolve(ref, tmp_path)
    assert not available(ref, tmp_path)


def test_directory_is_not_a_secret_file(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(SecretError, match="not a regular file"):
        resolve(SecretRef(file="dir"), tmp_path)
    assert not available(SecretRef(file="dir"), tmp_path)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_text(VALUE)
    path.chmod(0)
    with pytest.raises(SecretError, match="cannot be read") as exc:
        resolve(SecretRef(file="pw"), tmp_path)
    assert VALUE not in str(exc.value)


def test_non_utf8_file_does_not_echo_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "pw").write_bytes(VALUE.encode() + b"\xff\xfe")
    with pytest.raises(SecretError, match="is not valid UTF-8") as exc:
        resolve(SecretRef(file="pw"), tmp_path)
    assert VALUE not in str(exc.value) and "\\xff" not in str(exc.value)
    assert exc.value.__cause__ is None and exc.value.__suppress_context__


def test_encoded_reference_is_not_resolvable_to_plaintext(tmp_path: Path) -> None:
    ref = SecretRef(encoded=f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,encryptedPassword:{VALUE}")
    with pytest.raises(SecretError, match=r"passwords\.decode") as exc:
        resolve(ref, tmp_path)
    assert VALUE not in str(exc.value) and VALUE not in repr(exc.value)
    assert not available(ref, tmp_path)


def test_resolve_optional(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert resolve_optional(None, tmp_path) is None
    monkeypatch.setenv("RECONCILER_TEST_SECRET", VALUE)
    assert resolve_optional(SecretRef(env="RECONCILER_TEST_SECRET"), tmp_path) == Secret(VALUE)
    monkeypatch.delenv("RECONCILER_TEST_SECRET")
    with pytest.raises(SecretError, match="RECONCILER_TEST_SECRET"):
        resolve_optional(SecretRef(env="RECONCILER_TEST_SECRET"), tmp_path)


def test_resolved_secret_is_redacted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RECONCILER_TEST_SECRET", VALUE)
    secret = resolve(SecretRef(env="RECONCILER_TEST_SECRET"), tmp_path)
    assert VALUE not in repr(secret) and VALUE not in str(secret) and VALUE not in f"{secret}"
