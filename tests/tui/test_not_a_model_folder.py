"""The explorer over folders that are no model (#38): named on the command line, the
estimate panel says why in place of an estimate (never mlxcel's 7 B guess that "fits
any context"); in a models folder, the list leaves them out and counts them skipped."""

from __future__ import annotations

from pathlib import Path

from core.catalog.resolve import build_catalog, resolve_entry
from tests.tui.helpers import breakdown_text, build_app, fixed_deps, settle, wait_for
from tui.widgets.breakdown import Breakdown
from tui.widgets.model_list import ModelList


async def test_a_gguf_folder_is_read_as_inspect_reads_it_and_listed_as_a_gguf_file(
    tmp_path: Path,
) -> None:
    # A folder of GGUF files is llama.cpp's model (#40): read as `inspect DIR` reads it,
    # here a header cut short, named in one line; the list shows its file in the GGUF
    # group, and only the empty folder among the skipped.
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
        assert f"{models / 'gguf' / 'model.Q4_K_M.gguf'}: " in text
        assert "FITS" not in text and "any context" not in text
        assert "model.Q4_K_M.gguf" in app.screen.query_one("#status").text
        listed = app.screen.query_one(ModelList)
        await wait_for(pilot, lambda: listed.loaded, "the model list")
        names = {e.name for e in listed.entries}
        assert "gguf/model.Q4_K_M.gguf" in names and not {"empty", "gguf"} & names
        assert str(listed.border_subtitle).endswith(" · 1 skipped")
