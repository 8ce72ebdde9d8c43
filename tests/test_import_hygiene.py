"""Dependencies point one way and torch stays out of start-up.

core imports nothing of ours and no UI or torch; tui and hip_backend never pull
torch in at import time. Checked in fresh interpreters, plus a static scan of
every import statement so a lazy import cannot smuggle a forbidden edge in.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def printed_by(code: str) -> str:
    """What `code` prints, run by a fresh interpreter in the checkout."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    ).stdout


def modules_after(statement: str) -> set[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    return set(json.loads(printed_by(code)))


def top_level(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def test_importing_core_pulls_in_no_ui_torch_or_hub() -> None:
    loaded = top_level(
        modules_after(
            "import core, core.catalog.resolve, core.catalog.profiles, core.estimate.report, "
            "core.environment, core.measurement.result, core.measurement.protocol, "
            "core.estimate.downstream, core.estimate.prompt_cache"
        )
    )
    assert not loaded & {
        "textual",
        "rich",
        "torch",
        "numpy",
        "tui",
        "hip_backend",
        "huggingface_hub",
        "safetensors",
    }


def test_importing_tui_and_the_cli_does_not_pull_torch() -> None:
    loaded = top_level(modules_after("import tui, tui.cli; tui.cli.build_parser()"))
    assert "torch" not in loaded
    assert "textual" not in loaded  # `vramscope inspect` never pays for the UI


def test_inspect_of_a_local_model_imports_no_hub_reader_nor_measurement() -> None:
    """`vramscope inspect` of a built-in profile (as of a folder or the HF cache) never
    reads the Hub nor measures: the Hub reader (huggingface_hub's settings, the store,
    the fetches, logging) and the measurement's types are imported only when used
    (the Hub read's options are in `core.hub.options`)."""
    loaded = modules_after(
        "import io, contextlib; from tui.cli import main; "
        "out = contextlib.redirect_stdout(io.StringIO()); out.__enter__(); "
        "code = main(['inspect', 'mlx-community/Meta-Llama-3.1-8B-Instruct-4bit', "
        "'--preset', 'gfx1151']); out.__exit__(None, None, None); assert code == 0"
    )
    assert "core.estimate.report" in loaded  # the banner was printed
    later = ("core.hub.remote", "core.hub.store", "core.hub.fetch", "core.measurement.result")
    assert sorted(m for m in loaded if m.startswith(later)) == []


def test_the_explorers_start_up_leaves_the_catalog_to_its_reads() -> None:
    """What `vramscope explore` imports before its first frame: the catalog (folders, the
    HF cache, profiles, the disk cache), the reports and the history screen come later."""
    loaded = modules_after("import tui.cli; tui.cli.build_parser(); import tui.app")
    assert "tui.screens.explorer_screen" in loaded
    later = {
        "core.catalog.resolve",
        "core.catalog.disk_cache",
        "core.catalog.hf_cache",
        "core.catalog.profiles",
        "core.estimate.report",
        "core.parallel.report",
        "tui.screens.history_screen",
    }
    assert loaded & later == set()


def test_importing_hip_backend_does_not_pull_torch() -> None:
    assert "torch" not in top_level(modules_after("import hip_backend"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


FORBIDDEN = {
    "core": {"textual", "rich", "torch", "numpy", "tui", "hip_backend", "safetensors"},
    "hip_backend": {"textual", "tui", "rich"},
    "tui": {"torch", "numpy", "safetensors"},
}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_forbidden_import_statement_anywhere(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
        if _imports(path) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_torch_is_imported_only_inside_functions_in_hip_backend() -> None:
    for path in (ROOT / "hip_backend").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                assert not any(n.split(".")[0] == "torch" for n in names), path


HEAVY = {"torch", "mlx", "mlx_lm", "transformers"}


def _module_level_heavy(tree: ast.Module) -> list[str]:
    """torch, mlx, mlx-lm or transformers imported by a module's own top-level statements
    (an import, or a `pytest.importorskip` call, which imports)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in HEAVY]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and ((node.module or "").split(".")[0] in HEAVY)
        ):
            found.append(node.module or "")
        for call in ast.walk(node) if not isinstance(node, ast.FunctionDef | ast.ClassDef) else ():
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "importorskip"
                and call.args
                and isinstance(call.args[0], ast.Constant)
                and str(call.args[0].value).split(".")[0] in HEAVY
            ):
                found.append(f"importorskip({call.args[0].value})")
    return found


def test_no_test_module_imports_torch_or_mlx_to_be_collected() -> None:
    # Every worker imports every test module: a top-level import is paid four times
    # (tests/installed.py). Tests import them inside, or read them through `Later`.
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in (ROOT / "tests").rglob("*.py")
        if "__snapshots__" not in path.parts
        and (found := _module_level_heavy(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert offenders == {}


def test_a_later_module_is_imported_at_its_first_read_and_a_missing_one_is_found_missing() -> None:
    code = (
        "import sys; from tests.installed import Later, installed; later = Later('colorsys')\n"
        "print('colorsys' in sys.modules, hasattr(later, '_fixture_function_marker'))\n"
        "print(later.rgb_to_hsv(0, 0, 1) == (2 / 3, 1.0, 1), 'colorsys' in sys.modules)\n"
        "print(installed('colorsys'), installed('colorsys', 'no_such_package_here'))"
    )
    # Not imported by being named, nor by pytest's probe of a private name; then read.
    assert printed_by(code).split("\n")[:3] == ["False False", "True True", "True False"]


def test_the_explorers_pure_modules_import_no_textual() -> None:
    """tui.model (state, values, rows, views, chart data, scales, measurements) is pure."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & {"textual"})
        for path in (ROOT / "tui" / "model").rglob("*.py")
        if "textual" in _imports(path)
    }
    assert offenders == {}
    statics = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tui" / "model").rglob("*.py")
        if any(
            m.startswith(("tui.widgets", "tui.screens", "tui.app", "tui.controllers.loader"))
            for m in _from_modules(path)
        )
    }
    assert statics == set()
    loaded = top_level(modules_after("import tui.model.views, tui.model.values, tui.model.sizing"))
    assert "textual" not in loaded


def _from_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_gguf_and_numpy_come_only_with_a_gguf_read(tmp_path: Path) -> None:
    """gguf-py imports numpy (0.1-0.2 s): the GGUF reader's modules load neither, and
    only reading a GGUF file brings them in."""
    from tests.gguf_models import write_model

    (path,) = write_model(tmp_path, "llama")
    modules = (
        "core.catalog.gguf_source, core.gguf.local, core.gguf.header, core.gguf.report, "
        "core.hub.gguf_remote, tui.commands.inspect"
    )
    assert not top_level(modules_after(f"import {modules}")) & {"gguf", "numpy"}
    read = f"import core.gguf.local as g, pathlib; g.read_gguf_model(pathlib.Path({str(path)!r}))"
    assert {"gguf", "numpy"} <= top_level(modules_after(read))
