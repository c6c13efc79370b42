"""How cache values become bytes: JSON by default, raw bytes on request.

Encoding happens before anything is written, so a value that cannot be
encoded fails at ``put`` with a :class:`~greenml.errors.ConfigError` and the
cache holds nothing for it. Pickle is deliberately absent: a Redis cache is
shared, and unpickling what another process wrote runs its code.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from greenml.errors import ConfigError


class Codec(Protocol):
    """Turns cache values into bytes and back."""

    name: str

    def encode(self, value: Any) -> bytes:
        """Bytes of a value; ConfigError when it cannot be encoded."""
        ...

    def decode(self, data: bytes) -> Any:
        """The value back from :meth:`encode`'s bytes."""
        ...


class JsonCodec:
    """UTF-8 JSON: str, numbers, bools, None, lists and dicts with string keys."""

    name = "json"

    def encode(self, value: Any) -> bytes:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"cache value of type {type(value).__name__} cannot be stored as JSON ({exc}); "
                "convert it to plain data or give the cache a codec for it"
            ) from None
        return text.encode()

    def decode(self, data: bytes) -> Any:
        return json.loads(data)


class BytesCodec:
    """Values are bytes already (serialized by the caller)."""

    name = "bytes"

    def encode(self, value: Any) -> bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ConfigError(
                f"the bytes codec stores bytes only, not {type(value).__name__}"
            )
        return bytes(value)

    def decode(self, data: bytes) -> Any:
        return data
