"""The structure docs/architecture.md describes, checked on every import statement.

A static scan (ast) of core/, hip_backend/, tui/ and scripts/: the arrows between the
packages point one way, the UI and the scripts reach the engines only through their
public packages, no module imports itself back through others and no folder through
other folders, the estimate reads nothing of the machine, and no folder grows past
what a newcomer can take in. Imports under `if TYPE_CHECKING:` are left out (they
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
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    yield from imported_in(path.read_text(encoding="utf-8"), package, str(path))


def imported_in(text: str, package: str, filename: str = "<text>") -> Iterator[tuple[str, int]]:
    """`imported` for the source `text` of a module in `package`."""
    tree = ast.parse(text, filename=filename)

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


# --- Folders: no cycle between them ----------------------------------------------------


def folder_node(module: str, is_package: bool) -> str:
    """The folder a module belongs to (`core.catalog` for `core.catalog.resolve`). A top
    package's own modules (`core.units`, `tui.deps`) are each a node of their own: the
    top package holds every folder below it, so it is no folder among them."""
    folder = module if is_package else module.rpartition(".")[0]
    return module if "." not in folder else folder


def folder_graph(
    imports: dict[str, set[str]], packages: set[str] | frozenset[str] = frozenset()
) -> dict[str, set[str]]:
    """Folder -> the folders its modules import (`packages`: the modules that are an
    `__init__`)."""
    graph: dict[str, set[str]] = {}
    for me, targets in imports.items():
        mine = folder_node(me, me in packages)
        edges = graph.setdefault(mine, set())
        edges.update(folder_node(t, t in packages) for t in targets)
        edges.discard(mine)
    return graph


def test_no_folder_imports_itself_back_through_other_folders() -> None:
    packages = {module_name(p) for p in sources(*PACKAGES) if p.name == "__init__.py"}
    imports = {module_name(p): {n for n, _ in our_imports(p)} for p in sources(*PACKAGES)}
    assert _cycles(folder_graph(imports, packages)) == []


def test_the_folder_check_finds_a_folder_cycle_no_module_cycle_shows() -> None:
    # core.model.snapshot -> core.estimate.kv_cache -> core.model.config: no module
    # comes back to itself, but the two folders import each other.
    imports = {
        "core.model.snapshot": {"core.estimate.kv_cache"},
        "core.estimate.kv_cache": {"core.model.config"},
        "core.model.config": {"core.units"},
        "core.units": set(),
        "core.environment": {"core.estimate.kv_cache", "core.units"},
    }
    assert _cycles(imports) == []
    assert _cycles(folder_graph(imports)) == [["core.estimate", "core.model"]]


# --- The estimate is arithmetic: it reads nothing of the machine -----------------------

MACHINE_READERS = ("subprocess", "glob", "os", "platform", "shutil", "socket", "tempfile")
"""Standard modules that read (or run) something of the machine."""
PROBES = ("core.probes", "core.device.reading", "core.device.available")
NOT_FOR_THE_ESTIMATE = (
    *PROBES,
    "pathlib",
    "core.device",
    "core.catalog",
    "core.hub",
    "core.paths",
    "core.atomic_write",
    "core.environment",
)


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def machine_reads(
    imports: Iterator[tuple[str, int]] | list[tuple[str, int]], forbidden: tuple[str, ...]
) -> list[str]:
    """`line: module` for each import of a forbidden module (or one below it)."""
    return sorted({f"{line}: {name}" for name, line in imports if _under(name, forbidden)})


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("core/estimate", (*MACHINE_READERS, *NOT_FOR_THE_ESTIMATE)),
        ("core/answer", (*MACHINE_READERS, *PROBES)),
    ],
)
def test_the_estimate_and_the_answer_read_nothing_of_the_machine(
    folder: str, forbidden: tuple[str, ...]
) -> None:
    wrong = {
        str(p.relative_to(ROOT)): found
        for p in sources(folder)
        if (found := machine_reads(imported(p), forbidden))
    }
    assert wrong == {}


def test_nothing_the_estimate_imports_reaches_a_probe() -> None:
    graph = import_graph()
    seen: set[str] = set()
    todo = [module_name(p) for p in sources("core/estimate")]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    assert sorted(n for n in seen if _under(n, NOT_FOR_THE_ESTIMATE)) == []


def test_the_machine_check_finds_a_planted_probe() -> None:
    planted = (
        "import math\n"
        "import subprocess\n"
        "from glob import glob\n"
        "from core.probes import meminfo\n"
        "from core.units import GIB\n"
        "def late():\n"
        "    import os.path\n"
    )
    found = machine_reads(list(imported_in(planted, "core.estimate")), MACHINE_READERS + PROBES)
    assert found == [
        "2: subprocess",
        "3: glob",
        "3: glob.glob",
        "4: core.probes",
        "4: core.probes.meminfo",
        "7: os.path",
    ]
