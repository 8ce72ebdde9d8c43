"""One history writer: only hip_backend/run.py (`record_run`) appends to the history.

A static scan (ast) of every package for a call that writes a history line: the
store's `append` (on `HistoryStore(...)`, `HistoryStore.default()`, or a name bound to
one, or a parameter typed as one) and the line encoder `encode_record`. The store's own
module (core/measurement/history.py) defines them and is not scanned.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("core", "tui", "hip_backend", "scripts")
WRITER = "hip_backend/run.py"
STORE_MODULE = "core/measurement/history.py"


def _mentions_store(node: ast.AST | None) -> bool:
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "HistoryStore")
        or (isinstance(n, ast.Attribute) and n.attr == "HistoryStore")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and "HistoryStore" in n.value)
        for n in ast.walk(node)
    )


def _key(node: ast.expr) -> str | None:
    """`store`, `self.history`: a name or an attribute chain, as text."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _key(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def history_writes(source: str, filename: str = "<text>") -> list[str]:
    """`file:line what` for each call that writes a history line."""
    tree = ast.parse(source, filename=filename)
    stores: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _mentions_store(node.value):
            stores.update(k for t in node.targets if (k := _key(t)))
        elif isinstance(node, ast.AnnAssign) and (
            _mentions_store(node.annotation) or _mentions_store(node.value)
        ):
            key = _key(node.target)
            stores.update([key] if key else [])
        elif isinstance(node, ast.arg) and _mentions_store(node.annotation):
            stores.add(node.arg)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id == "encode_record") or (
            isinstance(func, ast.Attribute) and func.attr == "encode_record"
        ):
            found.append((node.lineno, "encode_record"))
        elif isinstance(func, ast.Attribute) and func.attr == "append":
            receiver = func.value
            if _mentions_store(receiver) or _key(receiver) in stores:
                found.append((node.lineno, "append"))
    return [f"{filename}:{line} {what}" for line, what in sorted(found)]


def test_only_the_run_module_writes_the_history() -> None:
    found = [
        hit
        for top in SCANNED
        for path in sorted((ROOT / top).rglob("*.py"))
        if path.relative_to(ROOT).as_posix() not in (WRITER, STORE_MODULE)
        for hit in history_writes(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == []


def test_the_run_module_is_found_writing() -> None:
    source = (ROOT / WRITER).read_text(encoding="utf-8")
    assert [hit.split()[-1] for hit in history_writes(source)] == ["append"]


def test_the_scan_finds_planted_writes() -> None:
    planted = (
        "store = HistoryStore.default()\n"
        "store.append(peak)\n"
        "HistoryStore(path).append(peak)\n"
        "def keep(history: HistoryStore | None, rows: list[int]) -> None:\n"
        "    history.append(peak)\n"
        "    rows.append(1)\n"
        "line = encode_record(peak)\n"
        "other = []\n"
        "other.append(peak)\n"
    )
    assert history_writes(planted) == [
        "<text>:2 append",
        "<text>:3 append",
        "<text>:5 append",
        "<text>:7 encode_record",
    ]


def record_run_calls(source: str, filename: str = "<text>") -> list[str]:
    """`file:line` for each call of `record_run` (by name or as an attribute)."""
    return [
        f"{filename}:{node.lineno}"
        for node in ast.walk(ast.parse(source, filename=filename))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "record_run")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "record_run")
        )
    ]


def test_every_run_is_recorded_by_its_lifecycle_never_by_a_surface() -> None:
    # One run lifecycle (#39): `vramscope run` and the explorer's `M` hand the command to
    # `hip_backend.start_command`, whose handle records the run as every engine's does.
    found = [
        hit
        for path in sorted((ROOT / "tui").rglob("*.py"))
        for hit in record_run_calls(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == []
    assert record_run_calls("from hip_backend import record_run\nrecord_run(run)\n") == ["<text>:2"]
