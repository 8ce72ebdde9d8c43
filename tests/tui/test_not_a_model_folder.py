"""The explorer over folders that are no model (#38): named on the command line, the
estimate panel says why in place of an estimate (never mlxcel's 7 B guess that "fits
any context"); in a models folder, the list leaves them out and counts them skipped."""

from __future__ import annotations

from pathlib import Path

from core.catalog.resolve import build_catalog, resolve_entry
from tests.tui.helpers import breakdown_text, build_app, fixed_deps, settle, wait_for
from tui.widgets.breakdown import Breakdown
from tui.widgets.model_list import ModelList


async def test_a_gguf_folder_is_named_with_why_and_the_list_skips_both(tmp_path: Path) -> None:
    models = tmp_path / "models"
    (models / "empty").mkdir(parents=True)
    (models / "gguf").mkdir()
    (models / "gguf" / "model.Q4_K_M.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    deps = fixed_deps(
        build_catalog=lambda: build_catalog(
            [models], include_hf_cache=False, include_hub=False, use_cache=False
        ),
        resolve_entry=lambda name: resolve_entry(name, [models], env={}),
    )
    app = build_app(deps, model=str(models / "gguf"))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: "Cannot read" in breakdown_text(app), "the refusal")
        assert app.screen.query_one(Breakdown).view is None
        text = " ".join(breakdown_text(app).split())
        assert "Cannot read this model" in text
        assert (
            f"{models / 'gguf'}: GGUF files only (model.Q4_K_M.gguf): `vramscope inspect` "
            "reads them (a file, the folder, or REPO:QUANT; docs/gguf.md); the rest of "
            "vramscope reads safetensors models with a config.json"
        ) in text
        assert "FITS" not in text and "any context" not in text
        listed = app.screen.query_one(ModelList)
        await wait_for(pilot, lambda: listed.loaded, "the model list")
        assert not {"empty", "gguf"} & {e.name for e in listed.entries}
        assert str(listed.border_subtitle).endswith(" · 2 skipped")
