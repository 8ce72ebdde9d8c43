"""Check tui/'s structure: no import cycle among its modules, no folder over 15 modules.

Every import statement counts, at module level, inside a function or under
`TYPE_CHECKING`: a lazy import that only dodges a cycle is still a cycle. Exit 0
when both hold; otherwise print each cycle and crowded folder and exit 1.

    python scripts/check_tui_structure.py
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tui"
MAX_MODULES_PER_FOLDER = 15


def module_names(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    names = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _imported(node: ast.Import | ast.ImportFrom, here: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement may load (a `from` target may be a module)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: resolve against this module's package
        anchor = here.split(".") if is_package else here.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in its body."""
    modules = module_names(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(t for t in _imported(node, name, is_package) if t in modules)
        found.discard(name)
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def crowded_folders(
    root: Path = ROOT, package: str = PACKAGE, limit: int = MAX_MODULES_PER_FOLDER
) -> dict[str, int]:
    """Folders holding more than `limit` modules of their own (subfolders not counted)."""
    counts: dict[str, int] = {}
    for folder in [root / package, *(p for p in (root / package).rglob("*") if p.is_dir())]:
        count = sum(1 for p in folder.glob("*.py"))
        if count > limit:
            counts[str(folder.relative_to(root))] = count
    return counts


def problems(root: Path = ROOT, package: str = PACKAGE) -> list[str]:
    """One line per cycle and per crowded folder; empty when the structure holds."""
    lines = [
        f"import cycle: {' <-> '.join(group)}" for group in cycles(import_graph(root, package))
    ]
    lines += [
        f"{folder}/ holds {count} modules (at most {MAX_MODULES_PER_FOLDER})"
        for folder, count in crowded_folders(root, package).items()
    ]
    return lines


def main() -> int:
    """Print what is wrong, if anything; exit 1 then."""
    found = problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
