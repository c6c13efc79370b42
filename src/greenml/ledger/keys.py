"""Ed25519 keys for signing ledger entries and statements (``cryptography``, imported lazily).

A key is named by its fingerprint: the SHA-256 of its 32 raw public bytes
(64 hex digits). An entry's ``key_id`` is the first 16 of them.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

PRIVATE_NAME = "greenml-ledger.key"
PUBLIC_NAME = "greenml-ledger.pub"
INSTALL_HINT = "pip install 'greenml[ledger]'"


def _ed25519() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:
        raise ConfigError(
            f"ledger signatures need the cryptography package: {INSTALL_HINT}"
        ) from exc
    return ed25519


def _serialization() -> Any:
    _ed25519()
    from cryptography.hazmat.primitives import serialization

    return serialization


def fingerprint(public_key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw public key, 64 hex digits."""
    s = _serialization()
    raw = public_key.public_bytes(s.Encoding.Raw, s.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def key_id(public_key: Ed25519PublicKey) -> str:
    """The short id written in each signed entry: 16 hex digits of the fingerprint."""
    return fingerprint(public_key)[:16]


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    """An unencrypted PEM Ed25519 private key.

    Raises:
        ConfigError: cryptography is missing, or the file is missing or not such a key.
    """
    ed = _ed25519()
    data = _read(path, "private key")
    try:
        key = _serialization().load_pem_private_key(data, password=None)
    except TypeError as exc:
        raise ConfigError(f"ledger key {path} is encrypted: give an unencrypted key") from exc
    except ValueError as exc:
        raise ConfigError(f"ledger key {path} is not a PEM private key") from exc
    if not isinstance(key, ed.Ed25519PrivateKey):
        raise ConfigError(f"ledger key {path} is not an Ed25519 key")
    private: Ed25519PrivateKey = key
    return private


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    """A PEM Ed25519 public key.

    Raises:
        ConfigError: cryptography is missing, or the file is missing or not such a key.
    """
    ed = _ed25519()
    data = _read(path, "public key")
    if b"PRIVATE KEY" in data:
        raise ConfigError(f"{path} holds a private key: give its public key (.pub)")
    try:
        key = _serialization().load_pem_public_key(data)
    except ValueError as exc:
        raise ConfigError(f"public key {path} is not a PEM public key") from exc
    if not isinstance(key, ed.Ed25519PublicKey):
        raise ConfigError(f"public key {path} is not an Ed25519 key")
    public: Ed25519PublicKey = key
    return public


def as_private_key(key: Any) -> Ed25519PrivateKey:
    """A loaded private key, or one loaded from a path."""
    return load_private_key(key) if isinstance(key, (str, Path)) else key  # type: ignore[no-any-return]


def as_public_key(key: Any) -> Ed25519PublicKey:
    """A loaded public key, or one loaded from a path."""
    return load_public_key(key) if isinstance(key, (str, Path)) else key  # type: ignore[no-any-return]


def sign(private_key: Ed25519PrivateKey, data: bytes) -> str:
    """The base64 Ed25519 signature of ``data``."""
    return base64.b64encode(private_key.sign(data)).decode("ascii")


def signature_valid(public_key: Ed25519PublicKey, signature: str, data: bytes) -> bool:
    """Whether ``signature`` (base64) is this key's signature of ``data``."""
    from cryptography.exceptions import InvalidSignature

    try:
        raw = base64.b64decode(signature, validate=True)
        public_key.verify(raw, data)
    except (InvalidSignature, ValueError):
        return False
    return True


def generate_keypair(out_dir: str | Path) -> tuple[Path, Path, str]:
    """Write a new private key (mode 0600) and its public key into ``out_dir``.

    Returns:
        The private key's path, the public key's path and the fingerprint.

    Raises:
        ConfigError: cryptography is missing, a key file already exists, or the
            folder cannot be written.
    """
    ed = _ed25519()
    s = _serialization()
    folder = Path(out_dir).expanduser()
    private_path, public_path = folder / PRIVATE_NAME, folder / PUBLIC_NAME
    for path in (private_path, public_path):
        if path.exists():
            raise ConfigError(f"{path} already exists: not overwriting a key")
    key = ed.Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption())
    public_pem = key.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_new(private_path, private_pem, 0o600)
        _write_new(public_path, public_pem, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot write keys to {folder}: {exc.strerror or exc}") from exc
    return private_path, public_path, fingerprint(key.public_key())


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow it
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: str | Path, what: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} {path} not found") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
