"""The JSON Schema of the run record, generated from its types.

The schema is shipped as ``greenml/data/run_record.schema.json`` (a test keeps
it equal to :func:`generate_schema`) and printed by ``greenml schema run-record``.
It holds records to the types greenml writes: a key of the wrong type fails;
keys it does not name (blocks added by other code) are allowed.

Lazy imports: the record types, only when a schema is generated.
"""

from __future__ import annotations

import json
import types
from typing import Any, Literal, Union, get_args, get_origin

from greenml.data import packaged
from greenml.record.codec import Block, fields_of

SCHEMA_FILE = "run_record.schema.json"
_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def generate_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of :class:`~greenml.record.run_record.RunRecord`."""
    from greenml.record.run_record import RECORD_SCHEMA_VERSION, RunRecord

    defs: dict[str, Any] = {}
    _schema_of(RunRecord, defs)
    top = defs.pop(RunRecord.__name__)
    top["properties"]["schema_version"]["description"] = (
        f"{RECORD_SCHEMA_VERSION} for records written by this greenml; absent: version 1"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "greenml run record",
        **{k: v for k, v in top.items() if k != "title"},
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    """The schema as the shipped file holds it (2-space indent, trailing newline)."""
    return json.dumps(generate_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped_schema_text() -> str:
    """The shipped ``run_record.schema.json``."""
    return packaged(SCHEMA_FILE).read_text(encoding="utf-8")


def _schema_of(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        arms = [_schema_of(a, defs) for a in get_args(tp)]
        if all(set(a) == {"type"} for a in arms):
            return {"type": [a["type"] for a in arms]}
        return {"anyOf": arms}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin is list:
        return {"type": "array", "items": _schema_of(get_args(tp)[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(get_args(tp)[1], defs)}
    if isinstance(tp, type) and issubclass(tp, Block):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: blocks may refer to each other
            defs[name] = _block_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for record field type {tp!r}")


def _block_schema(cls: type[Block], defs: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, tp, is_required, extra in fields_of(cls):
        props[name] = {**_schema_of(tp, defs), **extra}
        if is_required:
            required.append(name)
    out: dict[str, Any] = {"title": cls.__name__, "type": "object"}
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    if doc and not doc.startswith(f"{cls.__name__}("):  # dataclass's generated docstring
        out["description"] = " ".join(doc.split())
    out["properties"] = props
    if required:
        out["required"] = required
    return out
