"""The package's shape, read from the source with ``ast`` (nothing is imported).

* no import cycles, function-level imports included (``if TYPE_CHECKING:`` blocks left out),
  and none hidden behind a registry string (``"greenml.report.audit:build"`` counts as an import);
* no module imports upward: the ground floor (``errors``, ``__version__``, ``quantities``,
  ``record``) imports only the ground floor, and only the top floor imports the package face;
* no module imports another module's underscore name;
* the top of ``src/greenml`` holds only ``__init__``, ``__main__``, ``errors`` and packages;
* layers: the store, the measuring code and the CLI only depend the way the flow goes;
* every exception class is defined in ``greenml/errors.py`` or subclasses one there.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "greenml"
ERRORS = "greenml.errors"


@dataclass(frozen=True)
class Import:
    """One imported greenml module, or one name from it, as written in ``importer``."""

    importer: str
    module: str  # the greenml module that is loaded (the deepest one that exists)
    name: str | None  # the name taken from it (``from m import name``), if not a module
    line: int
    type_only: bool  # inside ``if TYPE_CHECKING:``


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def tree(module: str) -> ast.Module:
    path = modules()[module]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if modules()[module].name == "__init__.py" else module.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


@functools.cache
def imports(module: str) -> tuple[Import, ...]:
    """Every greenml import in ``module``, at any depth."""
    found: list[Import] = []

    def visit(node: ast.AST, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "greenml":
                        found.append(Import(module, alias.name, None, child.lineno, type_only))
            elif isinstance(child, ast.ImportFrom):
                source = _absolute(module, child)
                if source.split(".")[0] != "greenml":
                    continue
                for alias in child.names:
                    full = f"{source}.{alias.name}"
                    if full in modules():
                        found.append(Import(module, full, None, child.lineno, type_only))
                    else:
                        found.append(Import(module, source, alias.name, child.lineno, type_only))
            visit(child, type_only or _is_type_checking(child))

    visit(tree(module), False)
    return tuple(found)


def _graph() -> dict[str, set[str]]:
    return {
        m: {i.module for i in imports(m) if not i.type_only and i.module != m} for m in modules()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((e for e in edges if e in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_the_source_tree_is_found() -> None:
    assert {"greenml", "greenml.errors", "greenml.cli.app", "greenml.store"} <= set(modules())
    assert any(i.module == ERRORS for i in imports("greenml.measure.meter"))


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


_REGISTRY_STRING = re.compile(r"^(greenml(?:\.[A-Za-z_0-9]+)+)(?::[A-Za-z_0-9]+)?$")


@functools.cache
def registry_strings(module: str) -> frozenset[str]:
    """greenml modules named by a string constant in ``module`` (``"pkg.mod"`` or ``"pkg.mod:f"``).

    A string naming the module's own package or one above it (a logger name, a label) is
    not a reference to something the module loads, and is left out.
    """
    found = set()
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _REGISTRY_STRING.match(node.value)
            if match and match[1] in modules() and not module.startswith(match[1] + "."):
                found.add(match[1])
    found.discard(module)
    return frozenset(found)


def test_no_cycle_hides_behind_a_registry_string() -> None:
    graph = {m: edges | registry_strings(m) for m, edges in _graph().items()}
    assert _cycles(graph) == []


def test_the_string_finder_follows_a_registry() -> None:
    assert "greenml.report.audit" in registry_strings("greenml.report.kinds")
    assert "greenml.cli.run" in registry_strings("greenml.cli.app")
    assert "greenml" not in registry_strings("greenml.store.url")  # "greenml.db" is a file


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_another_modules_private_names() -> None:
    bad = []
    for module in modules():
        for imp in imports(module):
            if imp.name is not None and _private(imp.name):
                bad.append(f"{module}:{imp.line} imports {imp.name} from {imp.module}")
            # A private module (``_points``) is for its own package only.
            parts = imp.module.split(".")
            for depth, part in enumerate(parts):
                owner = ".".join(parts[:depth])
                if _private(part) and not (module == owner or module.startswith(owner + ".")):
                    bad.append(f"{module}:{imp.line} imports the private module {imp.module}")
    assert bad == []


def test_no_module_reaches_into_another_modules_private_names() -> None:
    """``from greenml.x import y`` then ``y._name``: the same as importing ``_name``."""
    bad = []
    for module in modules():
        aliases: dict[str, str] = {}
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in modules():
                        aliases[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    full = f"{_absolute(module, node)}.{a.name}"
                    if full in modules():
                        aliases[a.asname or a.name] = full
        for node in ast.walk(tree(module)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
            ):
                bad.append(f"{module}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert bad == []


def test_the_top_level_holds_only_the_entry_points_errors_and_packages() -> None:
    allowed = {"__init__.py", "__main__.py", "__version__.py", "errors.py", "lazy.py", "py.typed"}
    stray = []
    for entry in PACKAGE.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            if not (entry / "__init__.py").exists() and any(entry.rglob("*.py")):
                stray.append(f"{entry.name}/ (no __init__.py)")
        elif entry.name not in allowed:
            stray.append(entry.name)
    assert stray == []


# (layer, what it may never import); type-only imports count too.
LAYERS = [
    ("greenml.store", ("greenml.ledger", "greenml.report", "greenml.run", "greenml.cli")),
    (
        "greenml.measure",
        ("greenml.store", "greenml.accounting", "greenml.report", "greenml.run", "greenml.cli"),
    ),
]
CLI_USERS = ("greenml.cli", "greenml.__main__")


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize(("layer", "forbidden"), LAYERS, ids=[layer for layer, _ in LAYERS])
def test_lower_layers_never_import_upper_ones(layer: str, forbidden: tuple[str, ...]) -> None:
    bad = [
        f"{imp.importer}:{imp.line} imports {imp.module}"
        for module in modules()
        if _inside(module, layer)
        for imp in imports(module)
        if any(_inside(imp.module, f) for f in forbidden)
    ]
    assert bad == []


GROUND = (
    "greenml.errors", "greenml.__version__", "greenml.lazy", "greenml.quantities", "greenml.record",
    "greenml.data",  # where the packaged files lie: imports nothing of greenml
)  # fmt: skip
# The top floor: the commands and the team server (an application of its own) may use the
# package face (``from greenml import X``); no layer beneath it may, so the face stays a face.
TOP = ("greenml.cli", "greenml.__main__", "greenml.server")


def test_the_ground_floor_imports_only_the_ground_floor() -> None:
    bad = [
        f"{imp.importer}:{imp.line} imports {imp.module}"
        for module in modules()
        if any(_inside(module, g) for g in GROUND)
        for imp in imports(module)
        if not any(_inside(imp.module, g) for g in GROUND)
    ]
    assert bad == []


def test_no_inner_layer_imports_the_package_face() -> None:
    bad = [
        f"{module}:{node.lineno} imports from greenml/__init__"
        for module in modules()
        if module != "greenml" and not any(_inside(module, top) for top in TOP)
        for node in ast.walk(tree(module))
        if (isinstance(node, ast.ImportFrom) and node.module == "greenml" and not node.level)
        or (isinstance(node, ast.Import) and any(a.name == "greenml" for a in node.names))
    ]
    assert bad == []


def test_tomllib_is_imported_behind_a_version_check() -> None:
    """``requires-python`` says 3.10, where ``tomllib`` does not exist (``tomli`` does)."""
    bad = []
    for module in modules():
        guarded: set[int] = set()
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.If) and "version_info" in ast.unparse(node.test):
                guarded |= {id(child) for child in ast.walk(node)}
        for node in ast.walk(tree(module)):
            imported = isinstance(node, ast.Import) and any(a.name == "tomllib" for a in node.names)
            if imported and id(node) not in guarded:
                bad.append(f"{module}:{node.lineno}")
    assert bad == []


def test_nothing_but_the_cli_imports_the_cli() -> None:
    bad = [
        f"{imp.importer}:{imp.line} imports {imp.module}"
        for module in modules()
        if not any(_inside(module, user) for user in CLI_USERS)
        for imp in imports(module)
        if _inside(imp.module, "greenml.cli")
    ]
    assert bad == []


BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def _base_name(base: ast.expr) -> str:
    return ast.unparse(base).split("[")[0].rsplit(".", 1)[-1]


def _looks_like_an_exception(name: str) -> bool:
    return name in BUILTIN_EXCEPTIONS or name.endswith(("Error", "Exception", "Warning"))


def test_every_exception_class_is_in_the_one_tree() -> None:
    classes = {  # class name → (module, base names), for every class in the source
        (module, node.name): [_base_name(b) for b in node.bases]
        for module in modules()
        for node in ast.walk(tree(module))
        if isinstance(node, ast.ClassDef)
    }
    tree_names = {"GreenmlError"}
    pending = {name: bases for (module, name), bases in classes.items() if module == ERRORS}
    while True:  # the classes of errors.py that descend from GreenmlError
        grown = {name for name, bases in pending.items() if tree_names & set(bases)}
        if grown <= tree_names:
            break
        tree_names |= grown
    outside_tree = sorted(set(pending) - tree_names - {"GreenmlError"})
    assert outside_tree == [], "errors.py classes that are not GreenmlErrors"

    def closure(start: set[str], joins: Callable[[str, set[str]], bool]) -> set[str]:
        names = set(start)
        while True:
            grown = {
                name
                for (module, name), bases in classes.items()
                if module != ERRORS and any(joins(b, names) for b in bases)
            }
            if grown <= names:
                return names
            names |= grown

    exceptions = closure(tree_names, lambda b, names: _looks_like_an_exception(b) or b in names)
    in_tree = closure(tree_names, lambda b, names: b in names)
    bad = sorted(
        f"{module}.{name}({', '.join(bases)})"
        for (module, name), bases in classes.items()
        if module != ERRORS and name in exceptions - in_tree
    )
    assert bad == []


# Its public names are re-exported by greenml.serve; its own __all__ waits for the cache rework.
WITHOUT_ALL = {"greenml.serve.cache"}


def _packages() -> list[str]:
    return sorted(m for m, path in modules().items() if path.name == "__init__.py")


def _declared_all(package: str) -> list[str] | None:
    for node in tree(package).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                assert node.value is not None
                value = ast.literal_eval(node.value)
                assert isinstance(value, list)
                return value
    return None


def test_every_package_says_what_is_public() -> None:
    missing = [p for p in _packages() if p not in WITHOUT_ALL and _declared_all(p) is None]
    assert missing == []


@pytest.mark.parametrize("package", _packages())
def test_every_public_name_resolves(package: str) -> None:
    """Each name in ``__all__`` is there, lazily imported or not."""
    public = _declared_all(package) or []
    loaded = importlib.import_module(package)
    assert [name for name in public if not hasattr(loaded, name)] == []
