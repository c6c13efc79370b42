"""Typed JSON objects that read and write back exactly what they were given.

A :class:`Block` is a frozen, keyword-only dataclass whose field types say what
each JSON key holds (``str``, ``int``, ``float``, ``bool``, ``None``, unions,
``Literal``, ``list[...]``, ``dict[str, ...]``, other blocks, ``Any``).

``from_dict`` checks every known key against its type; keys it does not know
go to ``other`` as they are. ``to_dict`` writes the keys back in the order they
came, a key that was absent stays absent, and a value is never converted (an
``int`` stays an ``int``), so ``Block.from_dict(d).to_dict() == d`` key for key
and byte for byte once serialized: the ledger hashes records read this way.

Two modes: ``strict`` raises on a wrong type or a missing required key (what
greenml writes is held to this); the default, lenient, keeps a value of the
wrong type in ``other`` and leaves the field at its default, so a record
written by other code (or an older greenml) still reads.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

from greenml.errors import RecordTypeError

B = TypeVar("B", bound="Block")
_INTERNAL = ("other", "key_order")


def meta(*, required: bool = False, **schema: Any) -> dict[str, Any]:
    """Field metadata: whether greenml always writes the key, extra JSON Schema keywords.

    ``field(default=0.0, metadata=meta(required=True, minimum=0))``.
    """
    return {"required": required, "schema": schema}


REQUIRED = types.MappingProxyType(meta(required=True))
"""Metadata of a key greenml always writes (its default is used only to read others' records)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Block:
    """Base of the record's typed blocks (see the module docstring)."""

    other: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Keys this version does not know, or (lenient) whose value had the wrong type."""
    key_order: tuple[str, ...] | None = dataclasses.field(default=None, repr=False, compare=False)
    """The keys of the dict this block was read from, in order; ``None`` if built in code."""

    _spec: ClassVar[dict[type, list[_Field]]] = {}

    @classmethod
    def from_dict(
        cls: type[B], data: typing.Mapping[str, Any], *, strict: bool = False, path: str = ""
    ) -> B:
        """Read a JSON object; see the module docstring for ``strict``.

        Raises:
            RecordTypeError: A value of the wrong type (strict), a missing
                required key (strict), or a non-object.
        """
        where = path or cls.__name__
        if not isinstance(data, typing.Mapping):
            raise RecordTypeError(f"{where}: expected an object, got {_kind(data)}")
        spec = {f.name: f for f in _fields(cls)}
        values: dict[str, Any] = {}
        other: dict[str, Any] = {}
        for name, value in data.items():
            f = spec.get(name)
            if f is None:
                other[name] = value
                continue
            try:
                values[name] = decode(f.type, value, f"{where}.{name}", strict)
            except RecordTypeError:
                if strict or not f.has_default:
                    raise
                other[name] = value
        for f in spec.values():
            if f.name not in data and (not f.has_default or (strict and f.required)):
                raise RecordTypeError(f"{where}: the key {f.name!r} is missing")
        return cls(**values, other=other, key_order=tuple(data))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: exactly the dict read (when read), with changed fields updated."""
        parsed = self.key_order is not None
        present = set(self.key_order or ())
        out: dict[str, Any] = {}
        for f in _fields(type(self)):
            if f.name in self.other:
                continue
            value = getattr(self, f.name)
            if f.name in present or value != f.default() or (f.required and not parsed):
                out[f.name] = encode(value)
        out.update(self.other)
        if not parsed:
            return out
        order = [k for k in self.key_order or () if k in out]
        order += [k for k in out if k not in present]
        return {k: out[k] for k in order}


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    type: Any
    required: bool
    schema: dict[str, Any]
    has_default: bool
    default: Any  # a callable giving the default


def _fields(cls: type) -> list[_Field]:
    cached = Block._spec.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name in _INTERNAL:
            continue
        if f.default is not dataclasses.MISSING:
            default: Any = (lambda v: lambda: v)(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory
        else:
            default = _no_default
        has_default = default is not _no_default
        required = bool(f.metadata.get("required", False)) or not has_default
        out.append(_Field(f.name, hints[f.name], required, dict(f.metadata.get("schema", {})),
                          has_default, default))  # fmt: skip
    Block._spec[cls] = out
    return out


def _no_default() -> Any:
    return dataclasses.MISSING


def fields_of(cls: type[Block]) -> list[tuple[str, Any, bool, dict[str, Any]]]:
    """(name, type, required, extra schema keywords) of each field, for the JSON Schema."""
    return [(f.name, f.type, f.required, f.schema) for f in _fields(cls)]


def decode(tp: Any, value: Any, path: str, strict: bool) -> Any:
    """``value`` checked against ``tp`` (blocks read, everything else as is).

    Raises:
        RecordTypeError: The value does not fit.
    """
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        arms = [a for a in get_args(tp) if a is not type(None)]
        if value is None and len(arms) < len(get_args(tp)):
            return None
        if len(arms) == 1:  # X | None: X's own message says what is wrong inside
            return decode(arms[0], value, path, strict)
        for arm in arms:
            try:
                return decode(arm, value, path, strict)
            except RecordTypeError:
                continue
        raise RecordTypeError(f"{path}: {_kind(value)} is not {describe(tp)}")
    if origin is Literal:
        if value in get_args(tp) and isinstance(value, str):
            return value
        raise RecordTypeError(f"{path}: {value!r} is not one of {list(get_args(tp))}")
    if origin is list:
        _expect(isinstance(value, list), value, tp, path)
        (item,) = get_args(tp)
        return [decode(item, v, f"{path}[{i}]", strict) for i, v in enumerate(value)]
    if origin is dict:
        _expect(isinstance(value, dict), value, tp, path)
        _, item = get_args(tp)
        return {k: decode(item, v, f"{path}.{k}", strict) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Block):
        return tp.from_dict(value, strict=strict, path=path)
    _expect(_is_scalar(tp, value), value, tp, path)
    return value


def _is_scalar(tp: Any, value: Any) -> bool:
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    raise TypeError(f"unsupported record field type {tp!r}")


def _expect(ok: bool, value: Any, tp: Any, path: str) -> None:
    if not ok:
        raise RecordTypeError(f"{path}: {_kind(value)} is not {describe(tp)}")


def describe(tp: Any) -> str:
    """A type in words for messages (``a number``, ``a list of ...``)."""
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
             type(None): "null"}  # fmt: skip
    if tp in names:
        return names[tp]
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in get_args(tp))
    if origin is list:
        return "a list"
    if origin is dict or (isinstance(tp, type) and issubclass(tp, Block)):
        return "an object"
    return str(tp)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)  # fmt: skip


def encode(value: Any) -> Any:
    """A field value as JSON-ready data (blocks written with ``to_dict``)."""
    if isinstance(value, Block):
        return value.to_dict()
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value
