"""The package's floor plan: a top level that reads as a table of contents, no import cycle.

The top level of ``polars_rankeval/`` holds the public modules and the feature packages; the
engine lives in ``_engine/`` and the metric grammar in ``_names/``. No public function shadows
a module of the same name (``import polars_rankeval.compare`` must not hand back a function).
The import graph, function-local imports included (they hid two cycles before), has no cycle:
a module may import a lower one only.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest

import polars_rankeval as rke

PACKAGE = Path(rke.__file__).parent

#: What a newcomer sees in polars_rankeval/: public modules, feature packages, two private
#: packages. A new top-level file must be added here on purpose (and to the API guide).
PUBLIC_MODULES = {"__init__", "__main__", "conventions", "errors", "expr", "io", "lists"}
PUBLIC_MODULES |= {"namespace", "ties"}
FEATURE_PACKAGES = {
    "attribution",
    "fairness",
    "agreement",
    "cli",
    "comparison",
    "gate",
    "metrics",
    "offpolicy",
    "plot",
    "sampling",
    "spark",
}
PRIVATE_PACKAGES = {"_engine", "_names"}


def test_the_top_level_lists_only_public_modules_and_packages() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert modules == PUBLIC_MODULES, "a new top-level module: is it public? else _engine/"
    assert packages == FEATURE_PACKAGES | PRIVATE_PACKAGES


def test_no_public_function_shadows_a_module() -> None:
    for name in rke.__all__:
        spec = importlib.util.find_spec(f"polars_rankeval.{name}")
        if spec is None:
            continue  # a function or class with no module of its name
        module = importlib.import_module(f"polars_rankeval.{name}")
        assert inspect.ismodule(module), f"polars_rankeval.{name} is not a module"
        assert inspect.ismodule(getattr(rke, name)), f"rke.{name} hides its module"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    root = PACKAGE.parent
    return (root / relative).with_suffix(".py").exists() or (root / relative).is_dir()


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, at any depth, except under ``if TYPE_CHECKING``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("polars_rankeval"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("polars_rankeval"):
            module = node.module or ""
            for alias in node.names:
                child = f"{module}.{alias.name}"
                found.add(child if _is_module(child) else module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        # a package's own __init__ re-exports its submodules; the edge back from a submodule
        # to its package is the cycle to catch
        graph[name] = {target for target in _imports(path) if target != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    graph = _graph()
    # the top-level __init__ imports the public API; nothing inside imports it back
    inward = sorted(name for name, targets in graph.items() if "polars_rankeval" in targets)
    assert inward == [], f"modules importing the package's __init__: {inward}"
    assert _cycles(graph) == []


def test_the_cycle_check_can_fail() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", ["compare", "evaluate", "report", "similarity"])
def test_importing_a_function_name_as_a_module_is_a_clear_error(name: str) -> None:
    # the functions are rke.compare etc.; their implementations live in private modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"polars_rankeval.{name}")
