"""No private member of Textual's is used anywhere in vramscope: tui/, scripts/ and tests/.

Textual's private members (`_compositor`, `_display`, `_dirty_regions`, ...) change
without notice between its releases, and the range `pyproject.toml` admits is only
what the tests ran on. The names come from Textual's own source (every `def _x`, class
attribute `_x` and `self._x =`), so a new private member is caught without a list here.

Two scans of the ast:
- outside a class's own code: `obj._x`, `getattr(obj, "_x")`, `setattr`/`hasattr`/
  `delattr` and `monkeypatch.setattr(obj, "_x", ...)` where `_x` is Textual's;
- inside our subclasses of Textual's classes: `self._x` where a Textual class of the
  subclass's ancestry defines `_x` (using it reaches into Textual; assigning it would
  overwrite Textual's own).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import textual
from textual.message_pump import MessagePump

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("tui", "scripts", "tests")
NOT_TEXTUAL = {"os", "sys"}
"""Receivers that are not Textual objects (`os._exit`)."""
OURS = {
    "_blocks": "Breakdown's kept blocks (tui/widgets/breakdown.py)",
    "_cache": "Breakdown's kept lines (tui/widgets/breakdown.py)",
    "_strips": "Breakdown's lines for a width (tui/widgets/breakdown.py)",
}
"""Our own private members that a test reads and that share a name with a private
member of some unrelated Textual class; `test_our_own_names_are_not_textual_s` checks
that no Textual class a vramscope widget descends from defines them."""
NAME_ARGUMENT = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.AST) -> set[str]:
    """Private names a piece of source defines: methods, class attributes, `self._x =`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = item.targets if isinstance(item, ast.Assign) else []
                if isinstance(item, ast.AnnAssign):
                    targets = [item.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {name for name in names if _private(name)}


@cache
def textual_private() -> frozenset[str]:
    """Every private member name Textual's source defines."""
    names: set[str] = set()
    for path in Path(textual.__file__).parent.rglob("*.py"):
        names |= _defined(ast.parse(path.read_text(encoding="utf-8")))
    return frozenset(names)


@cache
def class_private(cls: type) -> frozenset[str]:
    """The private names one Textual class's own body defines."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return frozenset()
    return frozenset(_defined(ast.parse(inspect.cleandoc("\n" + source))))


def reaches(source: str, private: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(line, what) for each use of a name in `private` on something other than `self`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private:
            receiver = ast.unparse(node.value)
            if receiver in {"self", "cls", "super()"} | NOT_TEXTUAL or node.attr in OURS:
                continue
            yield node.lineno, f"{receiver}.{node.attr}"
        elif isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            index = 1 if func in NAME_ARGUMENT or func.endswith("monkeypatch.setattr") else None
            if index is None or len(node.args) <= index:
                continue
            name = node.args[index]
            if isinstance(name, ast.Constant) and name.value in private:
                yield node.lineno, f"{func}(..., {name.value!r})"


def sources() -> Iterator[Path]:
    for top in SCANNED:
        yield from sorted((ROOT / top).rglob("*.py"))


def test_no_code_reaches_a_private_member_of_textual() -> None:
    private = textual_private()
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sources()
        for line, what in reaches(path.read_text(encoding="utf-8"), private)
    ]
    assert not found, "Textual's private members used:\n" + "\n".join(found)


def _textual_subclasses() -> Iterator[type]:
    for path in sorted((ROOT / "tui").rglob("*.py")):
        if path.name == "__main__.py":
            continue  # runs the CLI
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        module = importlib.import_module(".".join(p for p in parts if p != "__init__"))
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, MessagePump):
                yield cls


def test_no_widget_uses_or_overwrites_a_private_member_of_its_textual_ancestry() -> None:
    found: list[str] = []
    classes = list(_textual_subclasses())
    assert len(classes) > 20  # the scan sees the app, its screens and widgets
    for cls in classes:
        theirs = frozenset().union(
            *(class_private(base) for base in cls.__mro__ if base.__module__.startswith("textual"))
        )
        own = ast.parse(inspect.cleandoc("\n" + inspect.getsource(cls)))
        for node in ast.walk(own):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr in theirs
            ):
                found.append(f"{cls.__module__}.{cls.__qualname__}: self.{node.attr}")
    assert not found, "Textual's private members used or overwritten:\n" + "\n".join(found)


def test_our_own_names_are_not_textual_s() -> None:
    for cls in _textual_subclasses():
        for base in cls.__mro__:
            if base.__module__.startswith("textual"):
                assert not set(OURS) & class_private(base), (cls, base)


def test_the_scan_catches_what_it_is_for() -> None:
    # Planted cases: each way a script or test reached Textual's privates before #39.
    private = textual_private()
    planted = """
display = app._display
app._display = timed
labels = [str(label) for label, _ in select._options]
monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
regions = getattr(screen, "_compositor")
os._exit(0)
self._display()
"""
    found = [what for _, what in sorted(reaches(planted, private))]
    assert found == [
        "app._display",
        "app._display",
        "select._options",
        "monkeypatch.setattr(..., '_toggle_cursor')",
        "getattr(..., '_compositor')",
    ]
    for name in ("_compositor", "_arrangement_cache", "_dirty_regions", "_display", "_driver"):
        assert name in private
