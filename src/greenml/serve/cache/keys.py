"""Cache keys: the same request, written differently, gives the same key.

A request is a prompt (a string, or chat messages: lists and dicts of
strings), a model name and generation parameters. Normalization: Unicode NFC,
whitespace stripped and runs collapsed to one space in every prompt string;
the model name stripped; parameters as canonical JSON (sorted keys, no
spaces, integral floats written as integers so ``1.0`` and ``1`` agree). Case
is kept: it can change an answer. The key is the SHA-256 of the canonical
JSON of the three.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from greenml.errors import ConfigError

_SPACES = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """NFC, stripped, whitespace runs collapsed to one space."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def normalize_prompt(prompt: Any) -> Any:
    """Every string of a prompt (a string or nested lists/dicts of them) normalized."""
    if isinstance(prompt, str):
        return normalize_text(prompt)
    if isinstance(prompt, Mapping):
        return {str(k): normalize_prompt(v) for k, v in prompt.items()}
    if isinstance(prompt, (list, tuple)):
        return [normalize_prompt(v) for v in prompt]
    return _canonical_number(prompt)


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, integral floats as integers; ConfigError if not JSON."""
    try:
        return json.dumps(
            _canonical_number(value),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"request parameters are not JSON-serializable: {exc}") from None


def cache_key(prompt: Any, model: str = "", params: Mapping[str, Any] | None = None) -> str:
    """SHA-256 (hex) of the normalized (prompt, model, parameters)."""
    if not isinstance(model, str):
        raise ConfigError(f"the model name must be a string, not {type(model).__name__}")
    request = {"m": model.strip(), "p": normalize_prompt(prompt), "k": dict(params or {})}
    return hashlib.sha256(canonical_json(request).encode()).hexdigest()


def scope_key(model: str = "", params: Mapping[str, Any] | None = None) -> str:
    """SHA-256 (hex, 16 chars) of model and parameters: prompts compared only within one."""
    text = canonical_json({"m": model.strip(), "k": dict(params or {})})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _canonical_number(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, Mapping):
        return {k: _canonical_number(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical_number(v) for v in value]
    return value
