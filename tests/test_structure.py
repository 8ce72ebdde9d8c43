"""The structure docs/architecture.md describes, checked on every import statement.

A static scan (ast) of core/, hip_backend/, tui/ and scripts/: the arrows between the
packages point one way, the UI and the scripts reach the engines only through their
public packages, no module imports itself back through others, and no folder grows
past what a newcomer can take in. Imports under `if TYPE_CHECKING:` are left out (they
never run); function-local imports count like any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "hip_backend", "tui")
MAX_MODULES_PER_FOLDER = 15
HIP_BACKEND_PUBLIC = {"hip_backend"}
"""What tui/ may import of the engines."""
SCRIPT_PUBLIC = {"hip_backend", "hip_backend.torch_engine", "hip_backend.mlx_engine"}
"""What scripts/ may import: the top level, or an engine's own package API (the
benchmarks that time an engine's pass in-process)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(*tops: str) -> Iterator[Path]:
    for top in tops:
        yield from sorted((ROOT / top).rglob("*.py"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(path: Path) -> Iterator[tuple[str, int]]:
    """(module, line) for every import that runs, with `from a import b` naming `a.b`
    when `a.b` is a module of ours (so `from core.estimate import weights` counts)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)

    def walk(nodes: list[ast.stmt]) -> Iterator[tuple[str, int]]:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                yield from walk(node.orelse)
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name, node.lineno
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                yield base, node.lineno
                for alias in node.names:
                    yield f"{base}.{alias.name}", node.lineno
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from walk([child])

    yield from walk(tree.body)


OURS = {module_name(p) for p in sources(*PACKAGES)}


def our_imports(path: Path) -> Iterator[tuple[str, int]]:
    for name, line in imported(path):
        if name in OURS:
            yield name, line


def test_core_imports_nothing_of_the_ui_or_the_engines() -> None:
    wrong = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in sources("core")
        for name, line in our_imports(p)
        if name.split(".")[0] != "core"
    ]
    assert wrong == []


def test_hip_backend_never_imports_the_ui() -> None:
    wrong = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in sources("hip_backend")
        for name, line in our_imports(p)
        if name.split(".")[0] == "tui"
    ]
    assert wrong == []


@pytest.mark.parametrize(
    ("top", "allowed"), [("tui", HIP_BACKEND_PUBLIC), ("scripts", SCRIPT_PUBLIC)]
)
def test_the_ui_and_the_scripts_reach_the_engines_through_their_public_packages(
    top: str, allowed: set[str]
) -> None:
    wrong = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in sources(top)
        for name, line in our_imports(p)
        if name.startswith("hip_backend") and name not in allowed
        # `from hip_backend import measure` names hip_backend.measure: not a module
    ]
    assert wrong == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for p in sources(*PACKAGES):
        me = module_name(p)
        # A package's own __init__ importing its submodules is not a cycle of theirs.
        graph[me] = {n for n, _ in our_imports(p) if n != me and not n.startswith(me + ".")}
    return graph


def test_no_module_imports_itself_back_through_others() -> None:
    assert _cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    # The check itself: a two-module loop and a three-module loop are found.
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert _cycles(graph) == [["a", "b"], ["c", "d", "e"]]


def test_no_folder_holds_more_than_fifteen_modules_of_its_own() -> None:
    folders: dict[Path, int] = {}
    for p in sources(*PACKAGES):
        if p.name != "__init__.py":
            folders[p.parent] = folders.get(p.parent, 0) + 1
    crowded = {
        str(f.relative_to(ROOT)): n for f, n in folders.items() if n > MAX_MODULES_PER_FOLDER
    }
    assert crowded == {}
