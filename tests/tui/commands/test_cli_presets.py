"""`--preset`: a device's available memory and, unless --backend is given, its backend
(`inspect`, `fit`, `explore`)."""

from __future__ import annotations

import json

import pytest

from core.units import GIB
from tests.core.helpers import LLAMA_4BIT
from tui.cli import main
from tui.model.presets import PRESETS_BY_KEY


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def inspect_json(capsys, *flags: str) -> dict[str, object]:
    code, out, err = run(capsys, "inspect", LLAMA_4BIT, "--json", "--max-tokens", "640", *flags)
    assert (code, err) == (0, ""), err
    return dict(json.loads(out))


@pytest.mark.parametrize(
    ("preset", "inflight"),
    [("rtx4090", 0), ("h100", 0), ("gfx1151", GIB), ("rx7900xtx", GIB), ("apple-64", 0)],
)
def test_inspect_preset_selects_the_cards_backend(capsys, preset: str, inflight: int) -> None:
    data = inspect_json(capsys, "--preset", preset)
    assert data["budget_bytes"] == PRESETS_BY_KEY[preset].bytes
    assert data["backend_inflight_bytes"] == inflight  # ROCm's reserve on AMD cards only


def test_inspect_preset_banner_has_no_in_flight_line_on_an_nvidia_card(capsys) -> None:
    code, out, _ = run(capsys, "inspect", LLAMA_4BIT, "--preset", "rtx4090")
    assert code == 0
    assert "Backend in-flight" not in out
    assert "  Available:       19.20 GiB (20615843020 bytes)\n" in out


def test_an_explicit_backend_beats_the_presets(capsys) -> None:
    data = inspect_json(capsys, "--preset", "rtx4090", "--backend", "rocm")
    assert data["backend_inflight_bytes"] == GIB
    assert data["budget_bytes"] == PRESETS_BY_KEY["rtx4090"].bytes


def test_preset_and_memory_limit_together_are_refused(capsys) -> None:
    code, out, err = run(
        capsys, "inspect", LLAMA_4BIT, "--preset", "rtx4090", "--memory-limit", "24GB"
    )
    assert (code, out) == (2, "")
    assert err == (
        "vramscope: error: --preset: sets the available memory; give it or --memory-limit\n"
    )


def test_inspect_tp_with_a_preset_gives_every_rank_that_device(capsys) -> None:
    data = inspect_json(capsys, "--preset", "rtx4090", "--tp", "2")
    ranks = data["ranks"]
    assert isinstance(ranks, list)
    assert [r["budget_bytes"] for r in ranks] == [PRESETS_BY_KEY["rtx4090"].bytes] * 2
    assert all(r["backend_inflight_bytes"] == 0 for r in ranks)


def test_fit_preset_selects_the_cards_backend(capsys) -> None:
    code, out, _ = run(capsys, "fit", "--json", "--preset", "h100", "--quantizations", "stored")
    assert code == 0
    assert json.loads(out)["inputs"]["backend"] == "cuda"


@pytest.mark.parametrize(
    ("preset", "pool_gib", "gfx"),
    [
        ("strix-halo-64", 32, "gfx1151"),
        ("strix-halo-64-ttm", 56, "gfx1151"),
        ("strix-halo-96", 48, "gfx1151"),
        ("strix-halo-96-ttm", 88, "gfx1151"),
        ("strix-halo-128", 64, "gfx1151"),
        ("strix-halo-128-ttm", 120, "gfx1151"),
        ("rx7900xt", 20, "gfx1100"),
        ("rx7900gre", 16, "gfx1100"),
        ("rx9070xt", 16, "gfx1201"),
        ("w7900", 48, "gfx1100"),
        ("mi300x", 192, "gfx942"),
        ("mi325x", 256, "gfx942"),
    ],
)
def test_rocm_presets_are_mlx_s_limit_of_their_pool(
    capsys, preset: str, pool_gib: int, gfx: str
) -> None:
    """Strix Halo: GTT under the TTM limit (half of RAM by default, RAM less 8 GiB
    raised); discrete cards: VRAM. MLX's 80% of it, ROCm, and the gfx target that a
    calibration must match."""
    data = inspect_json(capsys, "--preset", preset)
    assert data["budget_bytes"] == int(pool_gib * GIB * 0.8)
    assert data["backend_inflight_bytes"] == GIB  # ROCm's reserve
    assert data["device"]["target"] == gfx


def test_device_presets_lists_every_preset_with_its_figure_source_and_assumption(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "device", "--presets", "--json")
    assert (code, err) == (0, ""), err
    listed = {row["preset"]: row for row in json.loads(out)}
    assert set(listed) == set(PRESETS_BY_KEY)
    for key, row in listed.items():
        preset = PRESETS_BY_KEY[key]
        assert row["bytes"] == preset.bytes and row["source"] == preset.source
        assert row["assumes"], key  # every preset says what it takes for granted
    # A 128 GB Strix Halo has three: each says the machine it assumes.
    strix = {k: listed[k] for k in ("strix-halo-128", "gfx1151", "strix-halo-128-ttm")}
    assert [round(r["bytes"] / GIB, 2) for r in strix.values()] == [51.2, 76.8, 96.0]
    assert "default, half of RAM (64 GiB)" in strix["strix-halo-128"]["assumes"]
    assert "96 GiB of VRAM carve-out" in strix["gfx1151"]["assumes"]
    assert "raised to 120 GiB" in strix["strix-halo-128-ttm"]["assumes"]
    code, text, err = run(capsys, "device", "--presets")
    assert (code, err) == (0, ""), err
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("strix-halo-128 "))
    assert "51.20 GiB" in lines[at] and "TTM 64 GiB (default)" in lines[at]
    assert lines[at + 1].split()[0] == "from:" and lines[at + 2].split()[0] == "assumes:"
