"""Runs from a CSV file: every column checked, bad cells named by file, line and column."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.backend import Backend
from core.calibration.sources import (
    CalibrationInputError,
    parse_csv,
    read_csv,
    records_from_history,
)
from core.estimate.estimate import KvCacheMode
from core.measurement.engine import Engine
from core.measurement.result import checked_peak
from tests.factories import peak

HEADER = "model,context,inflight_mib,backend,peak_bytes"


def test_required_and_optional_columns() -> None:
    text = (
        "# a comment line\n"
        f"{HEADER},engine,device,batch,kv_cache_mode\n"
        "m1,640,1024,ROCm,6145000000,MLX,gfx1151,2,int8\n"
        "m2,4096,0,cpu,100,,,,\n"
    )
    a, b = parse_csv(text, "runs.csv")
    assert (a.model, a.context, a.inflight_mib, a.backend, a.peak_bytes) == (
        "m1",
        640,
        1024,
        Backend.ROCM,
        6_145_000_000,
    )
    assert (a.engine, a.device, a.batch) == (Engine.MLX, "gfx1151", 2)
    assert a.kv_cache_mode is KvCacheMode.INT8
    assert (b.engine, b.device, b.batch, b.kv_cache_mode) == (None, None, 1, KvCacheMode.FP16)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("model,context\nm,1\n", "runs.csv: missing column(s) inflight_mib, backend, peak_bytes"),
        (f"{HEADER},peak\nm,1,0,cpu,5,6\n", "runs.csv: unknown column 'peak'"),
        (f"{HEADER}\nm,64k,0,cpu,5\n", "runs.csv:2: column 'context': expected an integer"),
        (f"{HEADER}\nm,640,0,cpu,-5\n", "runs.csv:2: column 'peak_bytes'"),
        (f"{HEADER}\nm,640,0,cpu,0\n", "runs.csv:2: column 'peak_bytes'"),
        (f"{HEADER}\nm,640,0,tpu,5\n", "runs.csv:2: column 'backend': expected one of"),
        (
            f"{HEADER},engine\nm,640,0,cpu,5,llama.cpp\n",
            "runs.csv:2: column 'engine': expected one of torch, mlx, external, got 'llama.cpp'",
        ),
        (f"{HEADER}\n,640,0,cpu,5\n", "runs.csv:2: column 'model' is empty"),
        (f"{HEADER}\nm,640,0,cpu,5,extra\n", "runs.csv:2: more cells than columns"),
        (f"{HEADER}\nm,640,0,cpu,{'9' * 5000}\n", "runs.csv:2: column 'peak_bytes'"),
    ],
)
def test_a_bad_cell_is_one_line_naming_where(body: str, message: str) -> None:
    with pytest.raises(CalibrationInputError) as info:
        parse_csv(body, "runs.csv")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_control_characters_never_reach_the_terminal() -> None:
    with pytest.raises(CalibrationInputError) as info:
        parse_csv(f"{HEADER}\nm,640,0,\x1b[31mcpu,5\n", "runs.csv")
    assert "\x1b" not in str(info.value)


def test_only_regular_utf8_files_are_read(tmp_path: Path) -> None:
    with pytest.raises(CalibrationInputError, match="is a directory"):
        read_csv(tmp_path)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)  # no writer: a plain open would block forever
    with pytest.raises(CalibrationInputError, match="not a regular file"):
        read_csv(fifo)
    bad = tmp_path / "runs.csv"
    bad.write_bytes(f"{HEADER}\n\xff".encode("latin-1"))
    with pytest.raises(CalibrationInputError, match="not UTF-8"):
        read_csv(bad)
    with pytest.raises(CalibrationInputError, match="no such file"):
        read_csv(tmp_path / "missing.csv")


def test_a_history_run_is_held_against_the_formula_table_holds_it_against() -> None:
    emulated = peak("m", engine="torch", device_name="AMD EPYC")  # the queue: ROCm's
    no_queue = peak("m", engine="torch", extra={"inflight_emulation": "none"})
    mlx = peak("m", engine="mlx", device_name="AMD EPYC")
    gpu = peak("m", engine="mlx", device_kind="rocm", arch="gfx1151")
    (a, b, c, d), lacking = records_from_history([emulated, no_queue, mlx, gpu])
    assert lacking == 0
    assert (a.backend, a.measured_on, a.engine) == (Backend.ROCM, Backend.CPU, Engine.TORCH)
    assert a.backend is emulated.estimate_backend  # the launcher's and table's rule
    assert (b.backend, b.measured_on) == (Backend.CPU, Backend.CPU)
    assert (c.backend, c.measured_on, c.engine) == (Backend.CPU, Backend.CPU, Engine.MLX)
    assert (d.backend, d.device) == (Backend.ROCM, "gfx1151")


def test_a_record_of_a_device_kind_no_backend_names_is_left_out() -> None:
    # The device kind is a Backend: a history line naming another is not a peak at all
    # (the history skips it, counted as damaged), so calibration never sees one.
    result = peak("m").to_dict() | {"device_kind": "tpu"}
    with pytest.raises(TypeError, match="'device_kind' is \"tpu\", not one of rocm, cuda"):
        checked_peak(result)


def test_errors_name_the_physical_line_with_comment_lines_counted(tmp_path: Path) -> None:
    rows = tmp_path / "runs.csv"
    rows.write_text(
        "# measured on 2026-12-01\n# gfx1151\n"
        f"{HEADER}\n# the first model\nm,640,0,cpu,5\n\n# the second\nm,640,0,cpx,5\n"
    )
    with pytest.raises(CalibrationInputError) as info:
        read_csv(rows)
    assert str(info.value).startswith(f"{rows}:8: column 'backend'")


def test_the_size_cap_says_why_it_refuses_a_runs_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.calibration.sources as sources

    rows = tmp_path / "runs.csv"
    rows.write_text(f"{HEADER}\n" + "m,640,0,cpu,5\n" * 100)
    monkeypatch.setattr(sources, "CSV_SIZE_CAP", 100)
    with pytest.raises(CalibrationInputError) as info:
        read_csv(rows)
    assert "over vramscope's 100-byte limit for a runs file" in str(info.value)
    assert "mlxcel" not in str(info.value)


def test_a_byte_that_is_not_utf8_is_named_by_its_line_and_offset(tmp_path: Path) -> None:
    head = f"# measured\n{HEADER}\n" + "m,640,0,cpu,5\n" * 3000
    rows = tmp_path / "runs.csv"
    rows.write_bytes(head.encode() + b"m,640,0,cpu,5\xff\n" + b"m,640,0,cpu,5\n" * 10)
    with pytest.raises(CalibrationInputError) as info:
        read_csv(rows)
    # the reader decodes ahead of the line it parses: the error alone says neither
    assert str(info.value) == f"{rows}:3003: not UTF-8 (byte {len(head) + 13})"


def test_lines_are_numbered_across_the_blocks_a_long_file_is_read_in(tmp_path: Path) -> None:
    lines = [f"# measured\n{HEADER}\n"]
    for n in range(20_000):  # some 300 KB: read a block of whole lines at a time
        lines.append("  # a comment\n" if n % 37 == 0 else "\n" if n % 501 == 0 else "")
        lines.append("m,640,0,cpu,5\n" if n != 15_000 else "m,640,0,cpu,5e9\n")
    text = "".join(lines)
    bad_line = text[: text.index("5e9")].count("\n") + 1
    rows = tmp_path / "runs.csv"
    rows.write_text(text)
    with pytest.raises(CalibrationInputError) as info:
        read_csv(rows)
    assert str(info.value).startswith(f"{rows}:{bad_line}: column 'peak_bytes'")
    # and every run read names its own line
    rows.write_text(text.replace("5e9", "6"))
    numbered = [n for n, t in enumerate(rows.read_text().splitlines(), 1) if t.startswith("m,")]
    assert [r.where for r in read_csv(rows)] == [f"{rows}:{n}" for n in numbered]
