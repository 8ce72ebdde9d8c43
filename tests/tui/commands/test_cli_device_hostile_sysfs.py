"""`vramscope device` on a sysfs and /proc tree that is not what it should be (#41).

A FIFO with no writer, a link to /dev/zero, or a 5,000-digit value where a size is
read: each figure is unread (and said so), never a hang or int()'s digit-limit
traceback. Each run is a real child process under a timeout, so a hang fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.probes.ttm import page_size

DATA = Path(__file__).parents[2] / "core" / "device" / "data"
TREE = "gfx1151-128g-default-ttm"
CARD = Path("sys/class/drm/card0/device")
KFD = Path("sys/class/kfd/kfd/topology/nodes/1/properties")
TTM = Path("sys/module/ttm/parameters/pages_limit")
MEMINFO = Path("proc/meminfo")
pytestmark = pytest.mark.skipif(page_size() != 4096, reason="the tree counts 4 KiB pages")

_RUN = """
import sys
from pathlib import Path
from core.device import reading
reading.SYS_ROOT = Path(sys.argv[1]) / "sys"
reading.PROC_ROOT = Path(sys.argv[1]) / "proc"
from tui.cli import main
sys.exit(main(["device", "--backend", "rocm", "--no-runtimes"]))
"""


def device_on(tree: Path) -> tuple[int, str, str]:
    env = {**os.environ, "HOME": str(tree / "home"), "XDG_CACHE_HOME": str(tree / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(tree)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(DATA / TREE, root)
    return root


def _replace(path: Path, how: str) -> None:
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("how", ["fifo", "zero"])
def test_special_files_where_sysfs_and_proc_files_should_be_never_hang(
    tree: Path, how: str
) -> None:
    for name in ("mem_info_gtt_total", "mem_info_vram_used", "product_name"):
        _replace(tree / CARD / name, how)
    for rel in (KFD, TTM, MEMINFO):
        _replace(tree / rel, how)
    code, out, err = device_on(tree)
    assert (code, err) == (0, ""), err
    assert "Traceback" not in out
    # The card's VRAM still reads; the GTT, the TTM limit and meminfo are unread.
    assert "VRAM" in out and "512.0 MiB" in out
    assert "63.50 GiB" not in out and "16,646,144 pages" not in out
    assert "MemTotal" in out and "not read" in out


def test_a_5000_digit_size_in_sysfs_is_unread_not_a_traceback(tree: Path) -> None:
    huge = "9" * 5000 + "\n"
    (tree / CARD / "mem_info_vram_total").write_text(huge)
    (tree / TTM).write_text(huge)
    props = (tree / KFD).read_text().splitlines()
    (tree / KFD).write_text("\n".join(f"{line.split()[0]} {huge}" for line in props))
    code, out, err = device_on(tree)
    assert (code, err) == (0, ""), err
    assert "no card reports its memory" in out
    assert "Traceback" not in out and "9999" not in out


def test_a_size_past_u64_in_sysfs_is_unread(tree: Path) -> None:
    (tree / CARD / "mem_info_vram_total").write_text(str(2**64) + "\n")
    code, out, err = device_on(tree)
    assert (code, err) == (0, ""), err
    assert "no card reports its memory" in out
