"""A measuring engine that is not installed, or installed but failing to load: `measure`,
`table` and `m` in the explorer say so in one line, naming what to install, exit 2.

"Not installed" is made in-process by hiding the module (`sys.modules[name] = None`,
which `importlib.util.find_spec` reads as absent); "fails to load" by a real child
process that finds a `torch` package whose import raises, as a libtorch that cannot be
mapped does under `ulimit -v`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.measurement.engine import MEASURING_ENGINES, Engine
from core.measurement.result import FailureKind
from tests.installed import need
from tests.tui.helpers import LLAMA, build_app, settle, wait_for
from tui.cli import main
from tui.model.measure_state import PanelKind
from tui.widgets.measured_panel import MeasuredPanel

ROOT = Path(__file__).resolve().parents[3]
FAST = ["--prompt-tokens", "8", "--gen-tokens", "2", "--warmup-tokens", "0", "--device", "cpu"]
HIDDEN = {Engine.TORCH: ("torch",), Engine.MLX: ("mlx", "mlx_lm")}
EXTRA = {
    Engine.TORCH: "pip install 'vramscope[measure]'",
    Engine.MLX: "pip install 'vramscope[mlx]'",
}


def hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("engine", MEASURING_ENGINES)
@pytest.mark.parametrize("command", ["measure", "table"])
def test_a_missing_engine_names_its_extra_in_one_line_and_exits_2(
    engine: Engine, command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    hide(monkeypatch, *HIDDEN[engine])
    flags = FAST if command == "measure" else ["--contexts", "640", "--device", "cpu"]
    code = main([command, LLAMA, *flags, "--engine", engine.value, "--no-history"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err  # no progress lines: no child was started
    assert EXTRA[engine] in lines[0]
    assert "not installed" in lines[0]
    assert "Traceback" not in err


def test_the_refusal_is_per_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without mlx, the torch engine's check still passes."""
    from hip_backend import missing_engine

    need("torch")
    hide(monkeypatch, "mlx", "mlx_lm")
    assert missing_engine(Engine.TORCH) is None
    failure = missing_engine(Engine.MLX)
    assert failure is not None and failure.kind is FailureKind.NO_MLX
    assert "mlx and mlx-lm not found" in failure.message


async def test_m_without_torch_says_what_to_install_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide(monkeypatch, "torch")
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        panel = app.explorer.query_one(MeasuredPanel)
        await wait_for(pilot, lambda: panel.kind is PanelKind.FAILURE, "the refusal")
        assert "torch is not installed" in panel.text
        assert "vramscope[measure]" in panel.text
        assert app.explorer.measure.state.run is None  # nothing was started


def test_an_engine_that_fails_to_load_is_told_apart_from_a_missing_one(tmp_path: Path) -> None:
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        'raise ImportError("libtorch_cpu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi")\n'
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "tui", "measure", LLAMA, *FAST, "--no-history"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    last = done.stderr.splitlines()[-1]
    assert "(engine installed but failed to load)" in last
    assert "torch is installed but failed to load in" in last
    assert "undefined symbol: _ZN3c104cuda9SetDeviceEi" in last
    assert "not installed" not in last.replace("installed but", "")
    assert "Traceback" not in done.stderr
