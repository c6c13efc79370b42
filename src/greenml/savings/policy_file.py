"""Write and remove ``[policy.ITEM]`` tables in the config file, keeping everything else.

tomlkit edits the file in place: the user's comments, order and other tables stay as
they were. The file is written whole to a temporary file and renamed over the old one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError
from greenml.savings.policy import TABLE, check_item


def _document(path: Path) -> Any:
    try:
        import tomlkit
    except ImportError:  # pragma: no cover - the savings extra
        needs = "writing a policy needs tomlkit: pip install 'greenml[savings]'"
        raise ConfigError(needs) from None
    from greenml.config.toml_file import read_toml

    read_toml(path, "config file", missing_ok=True)  # one line for an unreadable file
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return tomlkit.parse(text)


def _write(path: Path, document: Any) -> None:
    import tomlkit

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".greenml-config-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(tomlkit.dumps(document))
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"cannot write the config file {path}: {exc.strerror or exc}") from None


def write_item(path: Path, item_id: str, values: Mapping[str, Any]) -> None:
    """Add (or replace) ``[policy.ITEM]``.

    Raises:
        ConfigError: A setting out of bounds, or the file cannot be read or written.
    """
    import tomlkit

    checked = check_item(item_id, values)
    document = _document(path)
    if TABLE not in document:
        document[TABLE] = tomlkit.table(is_super_table=True)
    table = tomlkit.table()
    for key, value in checked.items():
        table[key] = value
    document[TABLE][item_id] = table
    _write(path, document)


def remove_item(path: Path, item_id: str) -> bool:
    """Remove ``[policy.ITEM]``; ``False`` when it was not there."""
    document = _document(path)
    policy = document.get(TABLE)
    if policy is None or item_id not in policy:
        return False
    del policy[item_id]
    if not policy:
        del document[TABLE]
    _write(path, document)
    return True
