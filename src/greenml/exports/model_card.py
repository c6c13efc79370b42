"""Hugging Face model cards: the ``co2_eq_emissions`` metadata block in a README's YAML
front matter (the Hub's documented keys: emissions in grams, source, training_type,
geographical_location, hardware_used).

:func:`write_model_card` keeps what the README holds: the other metadata keys (in
their order) and the Markdown body; only ``co2_eq_emissions`` is replaced. YAML
comments inside the front matter are not kept (the metadata is re-dumped).

Lazy imports: yaml, only when a card is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from greenml.errors import ConfigError
from greenml.exports.footprint import Footprint

TrainingType = Literal["pre-training", "fine-tuning"]
_FENCE = "---"


def co2_eq_emissions(fp: Footprint, training_type: TrainingType) -> dict[str, Any]:
    """The ``co2_eq_emissions`` block for the runs in ``fp`` (emissions in grams CO2eq)."""
    block: dict[str, Any] = {
        "emissions": round(fp.co2_g, 6),
        "source": f"{fp.source}; runs {', '.join(fp.run_ids)}",
        "training_type": training_type,
        "geographical_location": ", ".join(fp.locations) or "not recorded",
        "hardware_used": ", ".join(fp.hardware) or "not recorded",
    }
    return block


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(metadata, body) of a README; ``({}, text)`` when it has no front matter.

    Raises:
        ConfigError: The front matter is not closed, not YAML, or not a mapping.
    """
    import yaml

    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != _FENCE:
        return {}, text
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip("\r\n") == _FENCE:
            try:
                data = yaml.safe_load("".join(lines[1:i])) or {}
            except yaml.YAMLError as exc:
                raise ConfigError(f"the README's front matter is not YAML: {_first(exc)}") from None
            if not isinstance(data, dict):
                raise ConfigError("the README's front matter must be a YAML mapping")
            return data, "".join(lines[i + 1 :])
    raise ConfigError("the README's front matter (---) is never closed")


def with_emissions(text: str, block: dict[str, Any]) -> str:
    """The README ``text`` with ``co2_eq_emissions`` set to ``block``, all else kept."""
    import yaml

    meta, body = split_front_matter(text)
    meta = {**meta, "co2_eq_emissions": block}
    dumped = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    if body and not body.startswith("\n"):
        body = "\n" + body
    return f"{_FENCE}\n{dumped}{_FENCE}\n{body}"


def write_model_card(path: Path, block: dict[str, Any]) -> None:
    """Write ``block`` into the README at ``path`` (created when missing), atomically.

    Raises:
        ConfigError: The README cannot be read or written, or its front matter is broken.
    """
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    new = with_emissions(text, block)
    tmp = path.with_name(f".{path.name}.greenml-tmp")
    try:
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc}") from None


def _first(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
