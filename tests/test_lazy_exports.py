"""One lazy-export helper: every package's public names resolve, once, and nothing else does."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import pytest

import greenml
from greenml.lazy import lazy_exports


def _packages_with_lazy_exports() -> list[str]:
    found = []
    for info in pkgutil.walk_packages(greenml.__path__, "greenml."):
        if not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        if isinstance(module.__dict__.get("_LAZY") or module.__dict__.get("_EXPORTS"), dict):
            found.append(info.name)
    return found


def test_every_lazy_name_of_every_package_resolves() -> None:
    packages = _packages_with_lazy_exports()
    assert len(packages) >= 17
    for name in packages:
        module = sys.modules[name]
        table = module.__dict__.get("_LAZY") or module.__dict__["_EXPORTS"]
        for public in table:
            if name.startswith("greenml.llm") and public in ("instrument", "GreenmlSpanProcessor"):
                pytest.importorskip("openai")
            assert getattr(module, public) is not None, f"{name}.{public}"


def test_a_name_is_imported_once_and_an_unknown_one_is_an_attribute_error() -> None:
    module = type(sys)("greenml_lazy_probe")
    sys.modules[module.__name__] = module
    try:
        module.__getattr__ = lazy_exports(module.__name__, {"dumps": "json"})  # type: ignore[attr-defined]
        first = module.dumps  # type: ignore[attr-defined]
        assert first is importlib.import_module("json").dumps
        assert module.__dict__["dumps"] is first  # kept: __getattr__ is not asked again
        with pytest.raises(AttributeError, match="no attribute 'loads'"):
            module.loads  # type: ignore[attr-defined]  # noqa: B018
    finally:
        del sys.modules[module.__name__]
