"""tui/ keeps its shape: no import cycle among its modules, no folder over 15 modules.

The check is scripts/check_tui_structure.py's; it is proven here on a small tree
with a cycle hidden in a function and under TYPE_CHECKING, then run on tui/.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_tui_structure.py"


def _check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_tui_structure", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_check_finds_a_cycle_a_lazy_import_hides(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "tui/__init__.py": "",
            "tui/a.py": "def f():\n    from tui.sub import b\n",
            "tui/sub/__init__.py": "",
            "tui/sub/b.py": "import typing\nif typing.TYPE_CHECKING:\n    import tui.a\n",
            "tui/c.py": "from tui import a\n",
        },
    )
    assert _check().problems(tmp_path) == ["import cycle: tui.a <-> tui.sub.b"]


def test_the_check_counts_a_folders_own_modules(tmp_path: Path) -> None:
    _write(tmp_path, {"tui/__init__.py": "", **{f"tui/w/m{i}.py": "" for i in range(16)}})
    assert _check().problems(tmp_path) == ["tui/w/ holds 16 modules (at most 15)"]


def test_tui_has_no_import_cycle_and_no_crowded_folder() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (0, "")
