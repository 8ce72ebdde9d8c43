"""`table`'s preamble names the formula its coverage figure holds each engine's peaks
against, from the rows (the rule `calibrate` fits against), not from a fixed sentence."""

from __future__ import annotations

from core.measurement.engine import Engine
from core.measurement.report import TableRow
from tests.factories import peak
from tui.commands.table import formula_words


def row(**fields: object) -> TableRow:
    p = peak(**fields)  # type: ignore[arg-type]
    return TableRow(p.model, p.context_tokens, p.inflight_mib, 1, p, p.engine)


def test_a_torch_run_emulating_the_queue_is_held_against_rocm_s_formula() -> None:
    rows = [row(engine="torch")]
    assert formula_words(rows, [Engine.TORCH]) == (
        "mlxcel's ROCm formula at the context with the row's budget"
    )


def test_a_torch_run_without_the_queue_and_an_mlx_run_name_their_own() -> None:
    rows = [row(engine="torch", extra={"inflight_emulation": "none"}), row(engine="mlx")]
    assert formula_words(rows, [Engine.TORCH, Engine.MLX]) == (
        "torch engine: mlxcel's CPU formula at the context (no in-flight term); "
        "MLX (mlx-lm): mlxcel's CPU formula at the context (no in-flight term)"
    )
    mixed = [row(engine="torch"), row(engine="mlx", device_kind="rocm", arch="gfx1151")]
    assert formula_words(mixed, [Engine.TORCH, Engine.MLX]) == (
        "torch engine: mlxcel's ROCm formula at the context with the row's budget; "
        "MLX (mlx-lm): mlxcel's ROCm formula at the context with the row's budget"
    )
