"""`vramscope fit` and the Fits view over a folder of hostile models: a FIFO shard, a
`/dev/zero` shard, a 2^63 header length, an oversized and a deeply nested config. Both
finish, mark the fallbacks (!) and name every model they skipped, as `models` does."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from core.catalog.resolve import build_catalog
from tests.tui.helpers import build_app, fixed_deps, settle, wait_for
from tui.cli import main
from tui.screens.fits_screen import FitsScreen

CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 100,
    "max_position_embeddings": 128,
}


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    for name in ("fifo", "zero", "hdr", "big", "deep"):
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(CONFIG))
    os.mkfifo(root / "fifo" / "model.safetensors")  # no writer: a plain open blocks forever
    (root / "zero" / "model.safetensors").symlink_to("/dev/zero")
    (root / "hdr" / "model.safetensors").write_bytes(struct.pack("<Q", 2**63) + b"{}")
    big = dict(CONFIG, pad="x" * 20_000_000)
    (root / "big" / "config.json").write_text(json.dumps(big))
    (root / "deep" / "config.json").write_text("[" * 5000 + "]" * 5000)
    return root


def test_fit_finishes_and_names_every_fallback_and_skip(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["fit", "--models-dir", str(hostile), "--no-cache", "--memory-limit", "24GB"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    table = out.split("\n\n")[1].splitlines()
    for name in ("fifo", "zero", "hdr"):
        assert any(line.startswith(f"{name} (!) ") for line in table), name
    assert "2 skipped; 3 models with file faults (!)." in out
    faults = out.split("File faults (!)")[1]
    assert f"fifo: {hostile}/fifo/model.safetensors: is not a regular file" in faults
    assert f"zero: {hostile}/zero/model.safetensors: is not a regular file" in faults
    assert "hdr: " in faults and "header length 9223372036854775808" in faults
    skipped = out.split("\nSkipped:\n")[1]
    assert f"{hostile}/big: config.json is 20,000," in skipped
    assert f"{hostile}/deep: " in skipped and "nesting deeper than 127 levels" in skipped


def test_fit_json_lists_the_skipped_and_each_row_s_faults(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fit", "--json", "--models-dir", str(hostile), "--no-cache"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert len(doc["skipped"]) == 2
    faults = {r["model"]: r["warnings"] for r in doc["rows"] if r["warnings"]}
    assert set(faults) == {"fifo", "zero", "hdr"}


async def test_the_fits_view_finishes_past_a_fifo_and_counts_what_it_skipped(
    hostile: Path,
) -> None:
    deps = fixed_deps(
        build_catalog=lambda: build_catalog(
            [hostile], include_hf_cache=False, include_hub=False, use_cache=False
        )
    )
    app = build_app(deps, preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await wait_for(
            pilot, lambda: isinstance(app.screen, FitsScreen) and app.screen.done, "rows"
        )
        screen = app.screen
        assert isinstance(screen, FitsScreen)
        names = {p.cells[0] for p in screen.picks if p.cells}
        assert {"fifo (!)", "zero (!)", "hdr (!)"} <= names
        status = str(screen._status())
        assert "2 skipped; 3 models with file faults (!) (first: " in status
