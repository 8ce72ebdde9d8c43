"""No kind is compared with a string anywhere: kinds are plain Enums (`core.kind.Kind`),
so `engine == "torch"` is always False and would pass silently. Text becomes a member
once, where it enters (`Kind.named`), and members are compared by identity.

A static scan (ast) of core/, tui/, hip_backend/ and scripts/. The rule, precisely: a
comparison (==, !=, in, not in) of one side against a string literal (or a tuple, list
or set of them), where the other side is

- a name or attribute called a kind name (`engine`, `x.device_kind`),
- `getattr(x, "engine")` (with or without a default),
- a subscript `x["engine"]` or `x.get("engine")` of a record,

and a kind name is one of `KIND_NAMES`, or a name every annotation in the source gives
one of the project's kinds (a class based on `Kind` or `Enum`; `X | None` counts) and
none gives `str`. A record's text compared at its parse boundary is a kind compare like
any other (the boundary parses it with `named`), with one exception, `RECORD_TAGS`: a
file format's own tag, read where that format is decoded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.backend import Backend
from core.estimate.estimate import KvCacheMode
from core.kind import KindError
from core.measurement.engine import Engine

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("core", "tui", "hip_backend", "scripts")
KIND_NAMES = frozenset(
    {
        "kind",
        "device_kind",
        "engine",
        "requested_engine",
        "backend",
        "split",
        "parallel",
        "inflight_emulation",
        "kv_cache_mode",
        "quantization",
        "figure",
        "family_kind",
    }
)
RECORD_TAGS = {
    ("core/measurement/history.py", "kind"),
}
"""(module, key): the history line's `"kind": "measurement"` tag, checked where the line
is decoded; a format marker, not one of vramscope's kinds."""
_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
_ENUM_BASES = frozenset({"Enum", "enum.Enum", "Kind", "StrEnum", "enum.StrEnum"})


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8")))
        for top in SCANNED
        for path in sorted((ROOT / top).rglob("*.py"))
    ]


def kind_classes(trees: list[ast.Module]) -> set[str]:
    """The project's kinds: classes based on Enum, Kind or another of them."""
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in found:
                    bases = {ast.unparse(b) for b in node.bases}
                    if bases & (_ENUM_BASES | found):
                        found.add(node.name)
                        grew = True
    return found


def _annotated(tree: ast.Module) -> list[tuple[str, str]]:
    """(name, annotation text) of every annotated field, variable and parameter."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
            if name:
                out.append((name, ast.unparse(node.annotation)))
        elif isinstance(node, ast.arg) and node.annotation is not None:
            out.append((node.arg, ast.unparse(node.annotation)))
    return out


def annotated_kind_names(trees: list[ast.Module], kinds: set[str]) -> set[str]:
    """Names every annotation gives a kind (and none gives text)."""
    typed: set[str] = set()
    text: set[str] = set()
    for tree in trees:
        for name, annotation in _annotated(tree):
            parts = {p.strip().strip("'\"") for p in annotation.split("|")} - {"None"}
            if parts and parts <= kinds:
                typed.add(name)
            elif any("str" in p for p in parts):
                text.add(name)
    return typed - text


def _key(node: ast.expr) -> str | None:
    """The kind-ish name a compared expression reads, or None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        index = node.slice
        return (
            index.value
            if isinstance(index, ast.Constant) and isinstance(index.value, str)
            else None
        )
    if isinstance(node, ast.Call) and node.args:
        first = node.args[1] if len(node.args) > 1 else None
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and first is not None:
            return (
                first.value
                if isinstance(first, ast.Constant) and isinstance(first.value, str)
                else None
            )
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            arg = node.args[0]
            return (
                arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
            )
    return None


def _is_text(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_text(e) for e in node.elts)
    return False


def string_compares(tree: ast.Module, filename: str, names: frozenset[str]) -> list[str]:
    """`file:line name` for each comparison of a kind against string literals."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, sides, sides[1:], strict=False):
            if not isinstance(op, _OPS):
                continue
            pairs = [(left, right), (right, left)]
            if isinstance(op, ast.Eq | ast.NotEq) and _same_length_tuples(left, right):
                # `(x.engine, n) == ("torch", 2)`: element by element
                assert isinstance(left, ast.Tuple) and isinstance(right, ast.Tuple)
                for a, b in zip(left.elts, right.elts, strict=True):
                    pairs += [(a, b), (b, a)]
            for a, b in pairs:
                name = _key(a)
                if name in names and _is_text(b) and (filename, name) not in RECORD_TAGS:
                    found.append(f"{filename}:{node.lineno} {name}")
    return found


def _same_length_tuples(a: ast.expr, b: ast.expr) -> bool:
    return isinstance(a, ast.Tuple) and isinstance(b, ast.Tuple) and len(a.elts) == len(b.elts)


def all_kind_names(trees: list[ast.Module]) -> frozenset[str]:
    return KIND_NAMES | annotated_kind_names(trees, kind_classes(trees))


def test_no_kind_is_compared_with_a_string_in_any_package() -> None:
    sources = _sources()
    names = all_kind_names([t for _, t in sources])
    assert {"engine", "kv_cache_mode", "inflight_emulation", "memory", "placement"} <= names
    hits = [hit for f, tree in sources for hit in string_compares(tree, f, names)]
    assert hits == []


def test_the_scan_finds_each_planted_compare() -> None:
    planted = (
        "import enum\n"
        "class Colour(Kind):\n"
        "    RED = 'red'\n"
        "def paint(colour: Colour | None, name: str) -> None: ...\n"
        "if peak.device_kind in ('rocm', 'cuda'):\n"  # 5
        "    pass\n"
        "ok = engine == 'mlx'\n"  # 7
        "also = 'tp' != job.kind\n"  # 8
        "typed = backend is Backend.ROCM\n"
        "fine = name == 'x'\n"
        "kv = peak.kv_cache_mode != 'fp16'\n"  # 11
        "by_getattr = getattr(args, 'engine', 'torch') == 'torch'\n"  # 12
        "by_key = record['engine'] == 'mlx'\n"  # 13
        "by_get = record.get('backend') in ('rocm', 'cuda')\n"  # 14
        "annotated = colour == 'red'\n"  # 15
        "tag = data.get('kind') != 'measurement'\n"  # 16: a tag only in history.py
        "pair = (peak.engine, peak.counted) == ('torch', 'x')\n"  # 17
    )
    tree = ast.parse(planted)
    names = KIND_NAMES | annotated_kind_names([tree], kind_classes([tree]))
    assert "colour" in names and "name" not in names
    assert string_compares(tree, "<text>", names) == [
        "<text>:5 device_kind",
        "<text>:7 engine",
        "<text>:8 kind",
        "<text>:11 kv_cache_mode",
        "<text>:12 engine",
        "<text>:13 engine",
        "<text>:14 backend",
        "<text>:15 colour",
        "<text>:16 kind",
        "<text>:17 engine",
    ]
    assert not any(
        h.endswith(":16 kind") for h in string_compares(tree, "core/measurement/history.py", names)
    )


def test_a_kind_is_never_equal_to_its_word_and_prints_as_it() -> None:
    assert Engine.TORCH != "torch" and "torch" != Engine.TORCH  # noqa: SIM300
    assert f"{Engine.TORCH}" == "torch" and str(KvCacheMode.INT8) == "int8"
    assert Engine.named("mlx") is Engine.MLX and Engine.named(Engine.MLX) is Engine.MLX


def test_named_is_one_line_naming_the_choices() -> None:
    with pytest.raises(KindError) as caught:
        Backend.named("vulkan\x1b[31m", "--backend")
    assert str(caught.value) == "--backend: 'vulkan[31m' is not one of rocm, cuda, metal, cpu"
    assert isinstance(caught.value, ValueError)  # record readers skip it as a bad value
    with pytest.raises(KindError, match=r"^kv cache mode: '8' is not one of fp16, int8$"):
        KvCacheMode.named(8)
