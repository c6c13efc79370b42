"""Report kinds by name: each is a module with ``build(runs, **options) -> Report``.

A kind is imported only when asked for. A kind whose module is not installed
yet, an option the kind's ``build`` does not take, or a required option left
out are :class:`~greenml.errors.ConfigError` (one line in the CLI), not
TypeErrors. Options given as text (``-O key=value`` of earlier releases) are
converted after the parameter's annotation: lists split on commas, numbers
parsed where the parameter takes only numbers, text otherwise.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.report.model import Report
    from greenml.report.runset import RunSet

KINDS: dict[str, str] = {
    "statement": "greenml.report.statement:build",
    "euaiact": "greenml.report.euaiact:build",
    "sci": "greenml.report.sci:build",
    "label": "greenml.report.label:build",
    "savings": "greenml.report.savings:build",
    "audit": "greenml.report.audit:build",
    "savings-plan": "greenml.savings.document:build",
}
"""Kind name → ``module:function``."""


def load_kind(kind: str) -> Callable[..., Report]:
    """The ``build`` function of a kind.

    Raises:
        ConfigError: Unknown kind, or its module is not available.
    """
    target = KINDS.get(kind)
    if target is None:
        raise ConfigError(f"unknown report kind {kind!r}; use one of {', '.join(KINDS)}")
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise ConfigError(f"report kind {kind!r} is not available yet ({module_name})") from None
    build: Any = getattr(module, attribute, None)
    if build is None:
        raise ConfigError(f"report kind {kind!r} is not available yet ({target})")
    return build  # type: ignore[no-any-return]


def build_report(
    kind: str, runs: RunSet, text_options: Mapping[str, Sequence[str]] | None = None, **options: Any
) -> Report:
    """Build a report of ``kind``.

    Args:
        kind: A key of :data:`KINDS`.
        runs: The runs.
        text_options: Options as text, by parameter name (each given once or more).
        **options: Typed options; ``None`` means not given.

    Raises:
        ConfigError: Unknown or unavailable kind, an option the kind does not
            take, a required one missing, or text that does not convert.
    """
    build = load_kind(kind)
    params = dict(list(inspect.signature(build).parameters.items())[1:])
    given = {k: v for k, v in options.items() if v is not None}
    for name, values in (text_options or {}).items():
        if name in given:
            raise ConfigError(f"option {name} given twice")
        param = params.get(name)
        given[name] = _convert(name, values, str(param.annotation) if param else "")
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    extra = sorted(set(given) - set(params))
    if extra and not open_ended:
        raise ConfigError(f"{', '.join(_flag(n) for n in extra)} does not apply to "
                          f"greenml report {kind}")  # fmt: skip
    required = [
        n
        for n, p in params.items()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    ]
    missing = [n for n in required if n not in given]
    if missing:
        raise ConfigError(f"greenml report {kind} needs {', '.join(_flag(n) for n in missing)}")
    return build(runs, **given)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _convert(name: str, values: Sequence[str], annotation: str) -> Any:
    if "Sequence" in annotation or "list" in annotation:
        return [part.strip() for value in values for part in value.split(",") if part.strip()]
    if len(values) > 1:
        raise ConfigError(f"option {name} given {len(values)} times")
    text = values[0]
    numeric = ("float" in annotation or "int" in annotation) and "str" not in annotation
    if not numeric:
        return text
    try:
        number = float(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise ConfigError(f"option {name} must be a number, got {text!r}") from None
    return int(number) if "int" in annotation and "float" not in annotation else number
