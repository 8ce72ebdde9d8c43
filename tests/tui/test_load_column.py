"""The load's column beside mlxcel's breakdown rows (#38): each row's figure, the total
the device holds, and both verdicts when they disagree. Pure: the widget paints these."""

from __future__ import annotations

from core.answer.verdict import verdict_words
from core.backend import Backend
from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.available import AvailableMemory
from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.load.load import (
    DeviceShare,
    EngineLoad,
    LoadEngine,
    LoadTerm,
    Origin,
    Placement,
    TermKind,
)
from core.units import GIB
from tests.tui.helpers import LLAMA
from tui.model.rows import LoadColumn, RowKey, breakdown_rows

KV = LoadTerm(
    TermKind.KV,
    783_286_272,
    Origin.WEIGHTS,
    "29 of 34 layers sliding-window (1,024 tokens), fp16",
)
MLX_LOAD = EngineLoad(
    LoadEngine.MLX_LM,
    32768,
    (
        LoadTerm(TermKind.WEIGHTS, 8_600_000_000, Origin.WEIGHTS, "as stored"),
        KV,
        LoadTerm(TermKind.TRANSIENT, 400_000_000, Origin.FITTED, "prefill chunk 2,048"),
        LoadTerm(TermKind.INFLIGHT, 1 << 30, Origin.SETTING, "MLX_ROCM_MAX_INFLIGHT_MB"),
    ),
    notes=("29 of 34 layers are sliding-window (1,024 tokens)",),
)
TOTAL = 8_600_000_000 + 783_286_272 + 400_000_000 + (1 << 30)


def test_each_row_gets_the_terms_it_stands_beside() -> None:
    column = LoadColumn(MLX_LOAD, 24 * GIB, mlxcel_fits=False)
    assert column.heading == "mlx-lm load"
    cells = {
        key.value: column.cell(key)
        for key in (RowKey.WEIGHTS, RowKey.KV, RowKey.ACTIVATION, RowKey.INFLIGHT)
    }
    assert {k: c.bytes for k, c in cells.items()} == {
        "weights": 8_600_000_000,
        "kv": 783_286_272,
        "activation": 400_000_000,
        "inflight": 1 << 30,
    }
    assert cells["kv"].detail == "29 of 34 layers sliding-window (1,024 tokens), fp16"
    assert column.cell(RowKey.OVERHEAD).bytes is None  # mlxcel's factor: no counterpart
    assert column.cell(RowKey.TOTAL).bytes == TOTAL
    assert column.cell(RowKey.AVAILABLE).bytes == 24 * GIB


def test_the_rows_keys_are_mlxcels_own() -> None:
    # Every key the load column answers is a row mlxcel's breakdown has.
    snap = profile_snapshot(load_profile(LLAMA))
    available = AvailableMemory(24 * GIB, "test")
    settings = EstimateSettings(Backend.ROCM, available)
    est = estimate(snap, Workload(max_tokens=8192), settings)
    keys = {r.key for r in breakdown_rows(est, available)}
    assert RowKey.INFLIGHT in keys
    column = LoadColumn(MLX_LOAD, 24 * GIB, mlxcel_fits=True)
    assert all(column.cell(k).bytes is not None for k in keys - {RowKey.OVERHEAD})


def test_both_verdicts_when_mlxcel_refuses_what_the_load_holds() -> None:
    column = LoadColumn(MLX_LOAD, 24 * GIB, mlxcel_fits=False)
    assert column.fits and column.disagrees
    assert (verdict_words(column.verdict), column.verdict.bytes) == ("FITS", 24 * GIB - TOTAL)
    assert column.disagreement == "mlxcel's preflight would refuse this; mlx-lm loads it"


def test_when_the_load_is_over_and_mlxcel_fits() -> None:
    column = LoadColumn(MLX_LOAD, TOTAL - 1, mlxcel_fits=True)
    assert not column.fits and column.disagrees
    assert (verdict_words(column.verdict), column.verdict.bytes) == ("DOES NOT FIT", 1)
    assert "mlx-lm would hold more than is available" in column.disagreement


def test_agreeing_verdicts_say_nothing_more() -> None:
    column = LoadColumn(MLX_LOAD, TOTAL, mlxcel_fits=True)  # exactly at the limit fits
    assert column.fits and not column.disagrees and column.disagreement == ""


def test_a_split_with_the_host_counts_only_the_devices_share() -> None:
    weights = LoadTerm(TermKind.WEIGHTS, 6 * GIB, Origin.GGUF, "offloaded layers")
    host = LoadTerm(TermKind.WEIGHTS, 2 * GIB, Origin.GGUF, "layers on the CPU")
    compute = LoadTerm(TermKind.COMPUTE, 300 << 20, Origin.FITTED, "graph at n_ubatch 512")
    load = EngineLoad(
        LoadEngine.LLAMA_CPP,
        8192,
        (weights, host, compute),
        shares=(
            DeviceShare(Placement.DEVICE, (weights, compute)),
            DeviceShare(Placement.HOST, (host,)),
        ),
    )
    column = LoadColumn(load, 8 * GIB, mlxcel_fits=False)
    assert column.heading == "llama.cpp load"
    assert column.cell(RowKey.TOTAL).bytes == 6 * GIB + (300 << 20)
    assert column.cell(RowKey.TOTAL).detail == "the host holds 2.00 GiB more"
    assert column.cell(RowKey.ACTIVATION).bytes == 300 << 20  # the compute buffer
    assert column.fits
