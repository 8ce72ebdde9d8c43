"""Bad models, slow models and failing probes never freeze or crash the explorer."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from core.catalog.resolve import ORIGIN_FOLDER, Catalog, CatalogEntry
from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource
from core.units import MIB
from tests.tui.helpers import (
    LLAMA,
    breakdown_bytes,
    breakdown_text,
    build_app,
    fixed_deps,
    settle,
    type_keys,
    wait_for,
)
from tui.deps import AppDeps
from tui.widgets.breakdown import Breakdown
from tui.widgets.model_list import ModelList

INFLIGHT = "Backend in-flight"


def folder_entry(path: Path, name: str) -> CatalogEntry:
    return CatalogEntry(
        name=name,
        origin=ORIGIN_FOLDER,
        format_label="unknown",
        weight_bytes=0,
        weights_source=WeightsSource.FALLBACK,
        kv_kind=None,
        max_position_embeddings=None,
        weights_on_disk=False,
        path=path,
    )


def write_broken_model(root: Path) -> Path:
    """A folder whose config is not JSON and whose only shard has a truncated header."""
    folder = root / "models" / "broken-model"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"hidden_size": 4096, "num_hidden_layers": ')
    (folder / "model.safetensors").write_bytes(b"\x10\0\0\0\0\0\0\0" + b'{"a":')
    return Path("models/broken-model")


def with_entries(deps: AppDeps, *extra: CatalogEntry) -> AppDeps:
    builtin = deps.build_catalog()
    return replace(deps, build_catalog=lambda: Catalog(extra + builtin.entries))


async def pick(pilot, name: str) -> None:  # type: ignore[no-untyped-def]
    """Filter the list down to `name` and press Enter, as a user would."""
    await type_keys(pilot, f"\x1b/{name}\r")
    await settle(pilot)


async def test_a_broken_model_shows_its_warnings_and_a_fallback_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rel = write_broken_model(tmp_path)
    app = build_app(with_entries(fixed_deps(), folder_entry(rel, "broken-model")))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pick(pilot, "broken-model")
        assert app.explorer.state.model == "models/broken-model"
        text = breakdown_text(app)
        flat = " ".join(text.split())
        assert "config.json is not valid JSON" in flat
        assert "header length 16 runs past the end of the file" in flat
        assert breakdown_bytes(app)["Weights"] == 14_000_000_000
        assert "fallback (7 B params assumed)" in text
        await pilot.press("escape", "i", "home")  # the controls keep working
        assert INFLIGHT not in breakdown_bytes(app)


async def test_a_vanished_model_shows_the_error_in_place_and_the_app_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = build_app(with_entries(fixed_deps(), folder_entry(Path("models/gone"), "gone-model")))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pick(pilot, "gone-model")
        assert app.screen.query_one(Breakdown).view is None
        text = breakdown_text(app)
        assert "Cannot read this model" in text
        assert "models/gone: no such file or folder" in " ".join(text.split())
        await pilot.press("n", "k")  # keys still work while the error shows
        await pick(pilot, "Meta-Llama-3.1-8B-Instruct-4bit")
        assert app.explorer.state.model == LLAMA
        assert breakdown_bytes(app)["Weights"] == 4_517_404_672
        assert app.is_running


async def test_an_unknown_model_on_the_command_line_shows_an_error_not_a_crash() -> None:
    app = build_app(model="no-such/model")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = " ".join(breakdown_text(app).split())
        assert "no-such/model: no such model: not a folder, not a built-in profile" in text
        await pick(pilot, "Qwen2.5-7B-Instruct-4bit")
        assert breakdown_bytes(app)["Weights"] > 0


async def test_an_unexpected_exception_while_reading_is_shown_too() -> None:
    def explode(entry: CatalogEntry) -> ModelSnapshot:
        raise ZeroDivisionError("boom")

    app = build_app(fixed_deps(load_snapshot=explode))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = " ".join(breakdown_text(app).split())
        assert f"{LLAMA}: unexpected ZeroDivisionError: boom" in text


async def test_a_slow_model_never_blocks_the_controls_and_a_stale_read_is_dropped() -> None:
    release = threading.Event()
    base = fixed_deps()

    def slow(entry: CatalogEntry) -> ModelSnapshot:
        if entry.name == LLAMA:
            release.wait(timeout=60)
        return base.load_snapshot(entry)

    app = build_app(replace(base, load_snapshot=slow))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "Reading mlx-community/Meta-Llama-3.1-8B-Instruct-4bit…" in breakdown_text(app)
        await pilot.press("n", "k", "i", "left")  # the UI answers while the read blocks
        assert app.explorer.state.kv_int8
        await pilot.press("escape")
        # The list waits for the first model read, but not for one that hangs.
        listed = lambda: app.explorer.loader.catalog is not None  # noqa: E731
        await wait_for(pilot, listed, "the list while the read hangs", limit_s=20)
        await type_keys(pilot, "/Qwen2.5-7B-Instruct-4bit\r")
        release.set()  # the Llama read now finishes, after the newer pick
        await settle(pilot)
        assert app.explorer.state.model == "mlx-community/Qwen2.5-7B-Instruct-4bit"
        assert app.explorer.loader.entry is not None
        assert app.explorer.loader.entry.name == "mlx-community/Qwen2.5-7B-Instruct-4bit"
        assert breakdown_bytes(app)["Weights"] == app.explorer.loader.entry.weight_bytes


async def test_reads_and_probes_run_off_the_ui_thread() -> None:
    seen: dict[str, threading.Thread] = {}
    base = fixed_deps()

    def record(name, fn):  # type: ignore[no-untyped-def]
        def wrapped(*args):  # type: ignore[no-untyped-def]
            seen[name] = threading.current_thread()
            return fn(*args)

        return wrapped

    deps = replace(
        base,
        build_catalog=record("catalog", base.build_catalog),
        resolve_entry=record("resolve", base.resolve_entry),
        load_snapshot=record("load", base.load_snapshot),
        detect_available=record("available", base.detect_available),
    )
    app = build_app(deps)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
    assert set(seen) == {"catalog", "resolve", "load", "available"}
    assert all(t is not threading.main_thread() for t in seen.values())


async def test_a_failing_catalog_and_probe_leave_a_working_app() -> None:
    def no_catalog() -> Catalog:
        raise PermissionError("denied")

    def no_probe(backend):  # type: ignore[no-untyped-def]
        raise OSError("sysfs unreadable")

    app = build_app(fixed_deps(build_catalog=no_catalog, detect_available=no_probe))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        options = app.screen.query_one(ModelList).options
        first_row = str(options.get_option_at_index(0).prompt)
        assert first_row == "cannot list models: PermissionError: denied"
        assert breakdown_bytes(app)["Available"] == 0
        assert "DOES NOT FIT" in breakdown_text(app)
        await pilot.press("i", "right")
        assert breakdown_bytes(app)[INFLIGHT] == 1536 * MIB


async def test_an_estimate_that_raises_is_shown_in_place(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tui.screens.explorer_screen as screen_module

    def broken_views(*args):  # type: ignore[no-untyped-def]
        raise OverflowError("a config no test foresaw")

    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        monkeypatch.setattr(screen_module, "build_views", broken_views)
        await pilot.press("k")
        text = " ".join(breakdown_text(app).split())
        assert "cannot estimate this model: OverflowError: a config no test foresaw" in text
        assert app.is_running


def test_quitting_does_not_wait_for_a_hung_read() -> None:
    release = threading.Event()
    finished: list[bool] = []
    base = fixed_deps()

    def hung(entry: CatalogEntry) -> ModelSnapshot:
        release.wait(timeout=60)  # a stalled network mount
        finished.append(True)
        return base.load_snapshot(entry)

    app = build_app(replace(base, load_snapshot=hung))

    async def quit_at_once(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        app.exit()

    app.run(headless=True, size=(80, 24), auto_pilot=quit_at_once)
    assert finished == []  # run() came back while the read was still blocked
    release.set()
