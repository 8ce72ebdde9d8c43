"""No string compare of a device kind, an engine, a backend or a split in hip_backend/ or
core/measurement/: they are typed (core.backend.Backend, core.measurement.engine.Engine,
core.parallel.sharding.ParallelKind), and text becomes the type at the JSON boundary.

A static scan (ast) for `x.kind == "rocm"`, `engine != "mlx"`, `device_kind in ("rocm",
"cuda")` and the like: a comparison (==, !=, in, not in) of a name or attribute called
one of KIND_NAMES against a string literal (or a tuple, list or set of them).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("hip_backend", "core/measurement")
KIND_NAMES = frozenset(
    {
        "kind",
        "device_kind",
        "engine",
        "backend",
        "split",
        "parallel",
        "inflight_emulation",
        "kv_cache_mode",
    }
)
MODE_NAMES = frozenset({"inflight_emulation", "kv_cache_mode"})
"""Typed everywhere (core.measurement.fields.QueueEmulation, core.estimate.estimate.
KvCacheMode): scanned in every package, the command line's text included."""
EVERYWHERE = ("core", "tui", "hip_backend", "scripts")


def _named(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name) and node.id in KIND_NAMES:
        return node.id
    if isinstance(node, ast.Attribute) and node.attr in KIND_NAMES:
        return node.attr
    return None


def _is_text(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_text(e) for e in node.elts)
    return False


_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def string_compares(source: str, filename: str = "<text>") -> list[str]:
    """`file:line name` for each comparison of a kind against string literals."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, sides, sides[1:], strict=False):
            if not isinstance(op, _OPS):
                continue
            for a, b in ((left, right), (right, left)):
                name = _named(a)
                if name is not None and _is_text(b):
                    found.append(f"{filename}:{node.lineno} {name}")
    return found


def _scan(tops: tuple[str, ...]) -> list[str]:
    return [
        hit
        for top in tops
        for path in sorted((ROOT / top).rglob("*.py"))
        for hit in string_compares(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]


def test_no_queue_emulation_or_kv_cache_mode_is_compared_with_a_string() -> None:
    assert [hit for hit in _scan(EVERYWHERE) if hit.split()[-1] in MODE_NAMES] == []


def test_no_kind_is_compared_with_a_string() -> None:
    assert _scan(SCANNED) == []


def test_the_scan_finds_a_planted_compare() -> None:
    planted = (
        "if peak.device_kind in ('rocm', 'cuda'):\n"
        "    pass\n"
        "ok = engine == 'mlx'\n"
        "also = 'tp' != job.kind\n"
        "typed = backend is Backend.ROCM\n"
        "fine = name == 'x'\n"
        "kv = peak.kv_cache_mode != 'fp16'\n"
        "queue = fields.inflight_emulation == 'rocm'\n"
    )
    assert string_compares(planted) == [
        "<text>:1 device_kind",
        "<text>:3 engine",
        "<text>:4 kind",
        "<text>:7 kv_cache_mode",
        "<text>:8 inflight_emulation",
    ]
