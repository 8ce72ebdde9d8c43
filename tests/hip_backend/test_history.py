"""The history store loses nothing: appends are whole lines, damage is skipped with a warning."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from core.measurement.engine import Engine
from core.measurement.history import HISTORY_FILE, HistoryStore, encode_record
from core.measurement.result import MeasuredPeak
from core.paths import state_dir


def peak(n: int, model: str = "m") -> MeasuredPeak:
    return MeasuredPeak(
        model=model,
        device_kind="cpu",
        device_name="test",
        peak_bytes=n,
        peak_kind="test",
        inflight_mib=256,
        prompt_tokens=512,
        gen_tokens=128,
        synthetic_weights=False,
        load_seconds=1.0,
        prefill_tokens_per_s=100.0,
        decode_tokens_per_s=10.0,
        torch_version="2.13.0",
        extra={"note": "é"},
    )


def test_results_round_trip_in_order(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.jsonl")
    for n in (1, 2, 3):
        store.append(peak(n))
    read = store.read()
    assert [p.peak_bytes for p in read.results] == [1, 2, 3]
    assert read.results[0] == peak(1)
    assert read.warnings == []


def test_a_torn_last_line_is_skipped_and_the_next_record_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    store = HistoryStore(path)
    store.append(peak(1))
    whole = encode_record(peak(2))
    with path.open("ab") as fh:  # a crash half-way through the second write
        fh.write(whole[: len(whole) // 2])
    store.append(peak(3))
    read = store.read()
    assert [p.peak_bytes for p in read.results] == [1, 3]
    assert len(read.warnings) == 1
    assert f"{path}:2: skipped a damaged record" in read.warnings[0]


def test_damaged_and_foreign_lines_are_skipped_with_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    good = encode_record(peak(7)).decode()
    path.write_text(
        good
        + "not json\n"
        + json.dumps({"kind": "measurement", "result": {"model": "x"}})
        + "\n"
        + "\n"
        + json.dumps([1, 2])
        + "\n"
        + good,
        encoding="utf-8",
    )
    read = HistoryStore(path).read()
    assert [p.peak_bytes for p in read.results] == [7, 7]
    assert [w.split(": skipped")[0] for w in read.warnings] == [
        f"{path}:2",
        f"{path}:3",
        f"{path}:5",
    ]


def _append_many(path: str, start: int) -> None:
    store = HistoryStore(Path(path))
    for n in range(start, start + 50):
        store.append(peak(n))


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append_many, args=(str(path), s)) for s in (0, 1000, 2000)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    read = HistoryStore(path).read()
    assert read.warnings == []
    assert sorted(p.peak_bytes for p in read.results) == sorted(
        n for s in (0, 1000, 2000) for n in range(s, s + 50)
    )


def test_a_missing_store_reads_as_empty(tmp_path: Path) -> None:
    read = HistoryStore(tmp_path / "none.jsonl").read()
    assert (read.results, read.warnings) == ([], [])


def test_state_dir_follows_xdg_and_ignores_relative_values(tmp_path: Path) -> None:
    assert state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "vramscope"
    home = {"HOME": str(tmp_path / "home")}
    relative = state_dir({**home, "XDG_STATE_HOME": "relative/dir"})
    assert relative == tmp_path / "home/.local/state/vramscope"
    assert state_dir(home) == tmp_path / "home/.local/state/vramscope"


def test_default_store_is_in_the_state_dir(state_home: Path) -> None:
    assert HistoryStore.default().path == state_home / "vramscope" / HISTORY_FILE


def test_records_name_their_engine_and_old_ones_read_as_torch(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    old = json.loads(encode_record(peak(1)))
    del old["result"]["engine"]  # written before engines existed
    mlx = replace(
        peak(2),
        engine="mlx",
        peak_kind="MLX peak (mx.get_peak_memory), cpu",
        torch_version="",
        mlx_version="0.32.4",
        mlx_lm_version="0.32.2",
        active_bytes=10,
        cache_bytes=5,
    )
    path.write_text(json.dumps(old) + "\n")
    HistoryStore(path).append(mlx)
    first, second = HistoryStore(path).read().results
    assert (first.engine, first.counted) == (
        Engine.TORCH,
        "torch engine, RSS over baseline, emulating MLX-ROCm's in-flight queue",
    )
    assert second == mlx
    assert second.counted == "MLX peak (mx.get_peak_memory), cpu"


def test_a_fifo_in_the_history_s_place_is_kept_aside_and_a_new_history_started(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from core.measurement.run import MeasuredRun
    from hip_backend.run import record_run

    path = state_dir() / HISTORY_FILE
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    record_run(MeasuredRun((peak(1),)))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a regular file" in err
    found = re.search(r"kept it as (\S+\.unreadable-\d{8}T\d{6}Z) ", err)
    assert found is not None, err
    assert stat.S_ISFIFO(Path(found.group(1)).lstat().st_mode)
    assert [p.peak_bytes for p in HistoryStore(path).read().results] == [1]


def test_a_record_of_a_newer_schema_is_skipped_with_its_line_and_never_rewritten(
    tmp_path: Path,
) -> None:
    store = HistoryStore(tmp_path / HISTORY_FILE)
    newer = json.dumps({"schema": 2, "kind": "measurement", "result": peak(9).to_dict()})
    store.path.write_text(newer + "\n")
    store.append(peak(1))
    read = store.read()
    assert [p.peak_bytes for p in read.results] == [1]
    assert len(read.warnings) == 1 and ":1: skipped" in read.warnings[0]
    assert "schema 2" in read.warnings[0]
    assert store.path.read_text().splitlines()[0] == newer
