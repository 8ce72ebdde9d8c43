"""`vramscope device` against recorded amdgpu sysfs and /proc/meminfo trees: a gfx1151
APU at 128 GB with the TTM limit at its default (half of RAM) and raised, MemAvailable
below GTT's free figure, and a discrete 24 GiB card. Each figure with its source, the
budget `--memory-limit free|total` takes (the same one `inspect` prints), and the
kernel parameter that raises the TTM limit where it is too low."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.device import reading
from core.probes.ttm import page_size
from core.units import GIB, MIB
from tui.cli import main

DATA = Path(__file__).parents[2] / "core" / "device" / "data"
pytestmark = pytest.mark.skipif(page_size() != 4096, reason="the trees count 4 KiB pages")


def use_tree(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(reading, "SYS_ROOT", DATA / name / "sys")
    monkeypatch.setattr(reading, "PROC_ROOT", DATA / name / "proc")


def device(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["device", "--backend", "rocm", "--no-runtimes", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def device_json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    report: dict[str, Any] = json.loads("\n".join(device(capsys, "--json")))
    return report


def line(lines: list[str], start: str) -> str:
    found = [text for text in lines if text.strip().startswith(start)]
    assert len(found) == 1, (start, lines)
    return found[0]


def test_apu_at_the_default_ttm_limit_says_how_to_raise_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_tree(monkeypatch, "gfx1151-128g-default-ttm")
    lines = device(capsys)
    assert "card0 (AMD Radeon 8060S, gfx1151), APU:" in lines[1]
    assert "total 512.0 MiB, used 200.0 MiB" in line(lines, "VRAM")
    assert "total 63.50 GiB, used 2.00 GiB" in line(lines, "GTT")
    assert line(lines, "GTT").endswith("card0/device/mem_info_gtt_total, _used]")
    ttm = line(lines, "TTM limit")
    assert "16,646,144 pages x 4096 B = 63.50 GiB" in ttm
    assert ttm.endswith("/sys/module/ttm/parameters/pages_limit]")
    assert "127.00 GiB" in line(lines, "MemTotal") and "/proc/meminfo]" in line(lines, "MemTotal")
    assert "120.00 GiB" in line(lines, "MemAvailable")
    free = line(lines, "vramscope budget --memory-limit free:")
    assert f"50.80 GiB ({int(63.5 * GIB * 0.8):,} bytes)" in free  # MLX's 80% of the TTM'd GTT
    assert "the smallest of GTT free 61.50 GiB" in free
    assert "MemAvailable 120.00 GiB (/proc/meminfo)" in free
    assert "TTM limit less GTT used 61.50 GiB" in free
    fix = line(lines, "vramscope fix:")
    assert "ttm.pages_limit=31195136" in fix  # (127 - 8) GiB in 4 KiB pages
    assert "amdgpu.gttsize is deprecated" in fix


def test_apu_with_the_ttm_limit_raised_has_no_fix_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_tree(monkeypatch, "gfx1151-128g-raised-ttm")
    lines = device(capsys)
    assert "31,195,136 pages x 4096 B = 119.00 GiB" in line(lines, "TTM limit")
    assert f"95.20 GiB ({int(119 * GIB * 0.8):,} bytes)" in line(
        lines, "vramscope budget --memory-limit total:"
    )
    assert not [text for text in lines if "fix" in text]
    report = device_json(capsys)
    assert report["ttm_limit"]["bytes"] == 119 * GIB
    assert report["budget"]["fix"] is None


def test_memavailable_below_gtt_free_is_the_budget(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_tree(monkeypatch, "gfx1151-128g-low-memavailable")
    report = device_json(capsys)
    terms = {t["what"]: t["bytes"] for t in report["budget"]["terms"]}
    assert terms == {
        "GTT free": 117 * GIB,
        "MemAvailable": 40 * GIB,
        "TTM limit less GTT used": 117 * GIB,
    }
    assert report["budget"]["free"]["bytes"] == 40 * GIB
    assert report["mem_available"] == {
        "bytes": 40 * GIB,
        "source": str(DATA / "gfx1151-128g-low-memavailable" / "proc" / "meminfo"),
    }
    card = report["cards"][0]
    assert (card["gfx_target"], card["apu"]) == ("gfx1151", True)
    assert card["gtt"]["total_bytes"] == 119 * GIB
    # inspect --memory-limit free takes the same budget, from the same computation.
    code = main(["inspect", "Qwen/Qwen2.5-7B-Instruct", "--backend", "rocm",
                 "--memory-limit", "free", "--json"])  # fmt: skip
    assert code == 0
    assert json.loads(capsys.readouterr().out)["budget_bytes"] == 40 * GIB


def test_a_discrete_card_counts_vram_and_no_ttm(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_tree(monkeypatch, "discrete-24gib")
    report = device_json(capsys)
    card = report["cards"][0]
    assert (card["name"], card["apu"], card["vram"]["total_bytes"]) == (
        "Radeon RX 7900 XTX",
        False,
        24 * GIB,
    )
    assert card["vram"]["used_bytes"] == 1536 * MIB
    # The TTM limit is read and shown, but caps only an APU's pool (GTT), not VRAM.
    assert report["ttm_limit"]["pages"] == 8192000
    assert [t["what"] for t in report["budget"]["terms"]] == ["VRAM free"]
    assert report["budget"]["free"]["bytes"] == int(24 * GIB * 0.8)
    assert report["budget"]["fix"] is None


def test_no_tree_at_all_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(reading, "SYS_ROOT", tmp_path)
    monkeypatch.setattr(reading, "PROC_ROOT", tmp_path)
    lines = device(capsys)
    assert "no card reports its memory" in line(lines, "amdgpu")
    assert "not read:" in line(lines, "MemTotal") and "cannot be read" in line(lines, "MemTotal")
    assert lines[-1].startswith("vramscope budget: none")


def test_torch_and_mlx_are_shown_beside_sysfs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the runtimes say (their children stood in for): torch's free above its own
    total on an APU, said as read; MLX's limit caps the budget as mlxcel's walk does."""
    from core.device import figures
    from core.probes.mlx_device import MlxDevice
    from core.probes.torch_device import TorchDevice

    use_tree(monkeypatch, "gfx1151-128g-raised-ttm")
    monkeypatch.setattr(figures, "torch_installed", lambda: True)
    monkeypatch.setattr(figures, "mlx_installed", lambda: True)
    torch_says = TorchDevice("2.6.0+rocm6.4", "AMD Radeon 8060S (gfx1151)", 117 * GIB,
                             96 * GIB, 96 * GIB)  # fmt: skip
    monkeypatch.setattr(figures, "read_torch_device", lambda: torch_says)
    mlx_says = MlxDevice("AMD Radeon 8060S", "Device(gpu, 0)", 80 * GIB, None)
    monkeypatch.setattr(figures, "read_mlx_device", lambda: mlx_says)
    assert main(["device", "--backend", "rocm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "mem_get_info free 117.00 GiB, total 96.00 GiB; total_memory 96.00 GiB" in line(
        lines, "torch"
    )
    assert "get_memory_limit 80.00 GiB" in line(lines, "MLX")
    total = line(lines, "vramscope budget --memory-limit total:")
    assert f"80.00 GiB ({80 * GIB:,} bytes)" in total and "MLX's own limit" in total
