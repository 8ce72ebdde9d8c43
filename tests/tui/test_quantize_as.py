"""The explorer's "Quantize as" control: vramscope's what-if weights, labelled as its own."""

from __future__ import annotations

import json
import shlex

import pytest

from core.answer.quantization import Quantization
from tests.tui.helpers import (
    LLAMA,
    breakdown_bytes,
    breakdown_text,
    build_app,
    settle,
    widget_lines,
)
from tui.cli import main
from tui.widgets.command_lines_view import CommandLinesView
from tui.widgets.segmented import Segmented

QWEN = "Qwen/Qwen2.5-7B-Instruct"


async def test_4_bit_shows_the_fit_row_s_weights_and_total(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = build_app(model=QWEN, preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        stored = breakdown_bytes(app)
        control = app.explorer.query_one("#quantize", Segmented)
        assert not control.disabled
        app.explorer.set_focus(control)
        await pilot.press("right", "right")
        await settle(pilot)
        state = app.explorer.state
        shown = breakdown_bytes(app)
        text = breakdown_text(app)
        commands = app.explorer.query_one("#commands", CommandLinesView)
        vramscope, mlxcel = commands.vramscope, commands.mlxcel
    assert state.quantize_as is Quantization.MLX_4BIT
    assert (
        main(
            [
                "fit",
                "--json",
                "--quantizations",
                "mlx-4bit",
                "--preset",
                "gfx1151",
                "--backend",
                "rocm",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    (row,) = [r for r in rows if r["model"] == QWEN]
    assert shown["Weights"] == row["weights_bytes"] == 4_284_263_424
    assert shown["Total estimate"] == row["total_bytes"]
    assert stored["Weights"] == 15_231_233_024 != shown["Weights"]
    # The KV cache, activation and available memory do not follow the weights.
    assert {k: shown[k] for k in ("KV cache", "Activation", "Available")} == {
        k: stored[k] for k in ("KV cache", "Activation", "Available")
    }
    assert "vramscope what-if mlx-4bit" in text and "not mlxcel's" in text
    # The command line is the fit command that prints this row, and mlxcel's says it is not.
    words = shlex.split(vramscope)
    assert words[:4] == ["vramscope", "fit", "--quantizations", "mlx-4bit"]
    assert main([*words[1:], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["rows"]
    assert [r for r in again if r["model"] == QWEN] == [row]
    assert mlxcel.startswith("# mlxcel estimates the model as stored")


async def test_a_quantized_model_is_not_offered_a_what_if() -> None:
    app = build_app(model=LLAMA, preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        control = app.explorer.query_one("#quantize", Segmented)
        hint = " ".join(widget_lines(app.explorer.query_one("#quantize-hint")))
        app.explorer.update(quantize_as=Quantization.MLX_4BIT)  # the palette's entry point
        await settle(pilot)
        shown = breakdown_bytes(app)
        text = breakdown_text(app)
    assert control.disabled
    assert "n/a" in hint and "quantized" in hint
    assert shown["Weights"] == 4_517_404_672  # as stored: no what-if was substituted
    assert "what-if" not in text
