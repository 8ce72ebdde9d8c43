"""Explorer test setup: no cursor blink, a private history, and a real tiny model to measure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from tests.installed import need


@pytest.fixture(autouse=True)
def _no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor would make every snapshot with a focused box flaky: every box is
    made with Input's public `cursor_blink` off (the cursor shows while it has focus)."""
    made = Input.__init__

    def still(self: Input, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self.cursor_blink = False

    monkeypatch.setattr(Input, "__init__", still)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Measurements go to a temporary XDG_STATE_HOME, never the user's history."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hip_backend tests' 2-layer Llama-3 model in MLX 4-bit, written by mlx-lm.

    Skipped where a real measurement cannot run: no torch for the child, or no
    mlx / mlx-lm to write the model.
    """
    from hip_backend import is_available

    if not is_available():
        pytest.skip("torch is not installed: no real measurement")
    need("mlx", "mlx_lm")
    from tests.hip_backend.mlx_models import LLAMA_CONFIG, write_mlx_model

    return write_mlx_model(tmp_path_factory.mktemp("models") / "tiny-llama-4bit", LLAMA_CONFIG)
