"""`vramscope fit`: stored rows are inspect's figures, what-ifs are labelled, limits hold."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.answer.device import Device
from core.answer.fit import WHAT_IF_FORMULA, model_rows
from core.answer.quantization import Quantization
from core.answer.question import Question
from core.backend import Backend
from core.catalog.profiles import list_profile_ids
from core.catalog.resolve import build_catalog
from core.estimate.available import AvailableMemory
from core.estimate.estimate import Workload
from core.fit.models import read_fit_model
from core.probes.cpuinfo import read_cpu_name
from core.units import format_bytes_short
from tui.cli import main

STORED = Quantization.STORED.word

SETTINGS = [
    ["--memory-limit", "24GB", "--backend", "rocm"],
    [
        "--memory-limit",
        "80GB",
        "--backend",
        "cuda",
        "--max-tokens",
        "640",
        "--batch",
        "2",
        "--kv-cache-mode",
        "int8",
    ],
]
ROW_KEYS = {
    "load",
    "load_problem",
    "ranked_by",
    "model",
    "quantization",
    "weights_bytes",
    "total_bytes",
    "fits",
    "slack_bytes",
    "largest_context_tokens",
    "formula",
    "where",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fit_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, "fit", "--json", *argv)
    assert (code, err) == (0, "")
    document: dict[str, Any] = json.loads(out)
    return document


@pytest.mark.parametrize("flags", SETTINGS, ids=["rocm-24GB", "cuda-80GB-int8-batch2"])
def test_every_stored_row_equals_inspect(
    capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    rows = fit_json(capsys, *flags)["rows"]
    stored = {r["model"]: r for r in rows if r["quantization"] == STORED}
    assert set(stored) == set(list_profile_ids())
    for name, row in stored.items():
        code, out, _ = run(capsys, "inspect", name, "--json", *flags)
        report = json.loads(out)
        assert code == 0
        assert (row["total_bytes"], row["fits"]) == (report["total_bytes"], report["fits"]), name
        assert row["weights_bytes"] == report["weights_bytes"]


def test_the_json_names_its_inputs_and_labels_what_ifs(capsys: pytest.CaptureFixture[str]) -> None:
    document = fit_json(
        capsys, "--preset", "rx7900xtx", "--backend", "rocm", "--max-tokens", "4096"
    )
    inputs = document["inputs"]
    assert (inputs["max_tokens"], inputs["backend"], inputs["preset"]) == (
        4096,
        "rocm",
        "rx7900xtx",
    )
    assert inputs["quantizations"] == ["stored", "mlx-8bit", "mlx-4bit"]
    assert inputs["available_bytes"] == int(24 * 2**30 * 0.8)
    rows = document["rows"]
    assert all(set(r) >= ROW_KEYS for r in rows)
    what_ifs = [r for r in rows if r["quantization"] != STORED]
    assert what_ifs and all(r["formula"] == WHAT_IF_FORMULA for r in what_ifs)

    # Fitting rows first (those within the trained context before those past it), and
    # among them the bigger model first.
    # Ranked by vramscope's load where a row has one (`ranked_by`), else mlxcel's verdict.
    def ranked_fits(r: dict[str, Any]) -> bool | None:
        return r["load"]["fits"] if r["ranked_by"] == "load" else r["fits"]

    fits = [ranked_fits(r) for r in rows if ranked_fits(r) is not None]
    assert fits == sorted(fits, reverse=True)
    # Every built-in row with a number has a load; a what-if with none has neither.
    assert {r["ranked_by"] for r in rows if r["unavailable"] is None} == {"load"}
    assert all(r["load"] is r["ranked_by"] is None for r in rows if r["unavailable"])
    gemma = next(
        r for r in rows if r["model"] == "google/gemma-3-4b-it" and r["quantization"] == STORED
    )
    load = gemma["load"]
    assert set(load) == {
        "engine", "weights_bytes", "kv_bytes", "transient_bytes", "total_bytes", "fits",
        "margin_bytes", "largest_context", "sources",
    }  # fmt: skip
    assert load["engine"] == "mlx-lm" and load["weights_bytes"] == gemma["weights_bytes"]
    assert load["margin_bytes"] == inputs["available_bytes"] - load["total_bytes"]
    for past in (False, True):
        params = [
            r["params_billions"]
            for r in rows
            if ranked_fits(r) and r["past_trained_context"] is past
        ]
        assert params == sorted(params, reverse=True)


def test_the_largest_context_fits_and_256_tokens_more_do_not() -> None:
    device = Device(Backend.ROCM, "test", AvailableMemory(24 * 10**9, "--memory-limit"))
    base = Question(Workload(), device)
    checked = 0
    for entry in build_catalog(include_hf_cache=False).entries:
        model = read_fit_model(entry)
        for row in model_rows(model, tuple(Quantization), base):
            context = row.context
            if context is None or context.memory.value is None or context.memory.unbounded:
                continue
            limit = context.memory.value  # what memory allows; the row may cap it
            assert context.tokens == min(
                limit, context.trained.tokens if context.trained else limit
            )

            fits = [
                model_rows(model, (row.quantization,), replace(base, workload=Workload(n)))[0].fits
                for n in (limit, limit + 256)
            ]
            assert fits == [True, False], (
                row.model,
                row.quantization,
            )
            checked += 1
    assert checked >= 20


def test_a_bf16_folder_gets_the_profile_s_what_ifs(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skeleton("Qwen/Qwen2.5-7B-Instruct", name="qwen25-bf16")
    rows = fit_json(capsys, "--models-dir", str(folder.parent), "--memory-limit", "24GB")["rows"]
    mine = {r["quantization"]: r for r in rows if r["model"] == "qwen25-bf16"}
    profile = {r["quantization"]: r for r in rows if r["model"] == "Qwen/Qwen2.5-7B-Instruct"}
    assert mine["mlx-4bit"]["weights_bytes"] == 4_284_263_424
    for q in ("stored", "mlx-8bit", "mlx-4bit"):
        assert mine[q]["total_bytes"] == profile[q]["total_bytes"]
    assert mine["stored"]["where"].startswith("folder: ")


def test_the_table_says_what_ifs_are_vramscope_s_own(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "fit", "--memory-limit", "24GB", "--quantizations", "mlx-4bit")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "Available: 24.00 GiB (25769803776 bytes; --memory-limit)"
    assert any(
        line.startswith("meta-llama/Llama-3.1-8B-Instruct") and "mlx-4bit*" in line
        for line in lines
    )
    assert any(line.startswith("* vramscope what-if (mlx-lm 0.32.2") for line in lines)
    assert " stored " not in out


def test_folder_names_are_cleaned(skeleton: Callable[..., Path], capsys) -> None:
    folder = skeleton("Qwen/Qwen2.5-7B-Instruct", name="evil\x1b[31mname")
    code, out, _ = run(capsys, "fit", "--models-dir", str(folder.parent), "--memory-limit", "8GB")
    assert code == 0
    assert "\x1b" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--quantizations", "gguf"], "--quantizations: 'gguf' is not one of"),
        (["--quantizations", ","], "--quantizations"),
        (["--memory-limit", "lots"], "--memory-limit: 'lots' is not a size"),
        (["--memory-limit", "8GB", "--preset", "h100"], "not allowed with argument"),
        (["--max-tokens", "-1"], "--max-tokens"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    try:
        code = main(["fit", *argv])
    except SystemExit as exc:  # argparse's own errors exit from inside parse_args
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err


@pytest.mark.skipif(not Path("/proc/meminfo").is_file(), reason="needs /proc/meminfo")
def test_free_memory_on_the_cpu_is_memavailable(capsys: pytest.CaptureFixture[str]) -> None:
    document = fit_json(capsys, "--memory-limit", "free", "--backend", "cpu")
    device = document["inputs"]["device"]
    assert device["total_bytes"] == device["used_bytes"] + device["free_bytes"]
    # MemAvailable moves between reads; the verdict's budget is the free figure read once,
    # capped at MLX's own limit where mlx is installed (80% of MemTotal on the CPU).
    assert document["inputs"]["available_bytes"] == min(device["free_bytes"], device["limit_bytes"])
    assert document["inputs"]["available_source"].startswith("free on system memory")


def test_a_changed_config_is_read_again(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # The what-ifs of folders are cached on disk by file identity; a new config is new.
    folder = skeleton("Qwen/Qwen2.5-7B-Instruct", name="qwen25-retie")
    flags = ("--models-dir", str(folder.parent), "--quantizations", "mlx-4bit")

    def four_bit() -> int:
        rows = fit_json(capsys, *flags)["rows"]
        (row,) = [r for r in rows if r["model"] == "qwen25-retie"]
        return int(row["weights_bytes"])

    assert four_bit() == four_bit() == 4_284_263_424
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "tie_word_embeddings": True}))
    # Tied: mlx-lm's qwen2 sanitize drops lm_head.weight, 306,561,024 bytes at 4 bits.
    assert four_bit() == 4_284_263_424 - 306_561_024


def test_stored_only_gives_one_row_per_model(capsys: pytest.CaptureFixture[str]) -> None:
    rows = fit_json(capsys, "--quantizations", "stored", "--memory-limit", "24GB")["rows"]
    assert sorted(r["model"] for r in rows) == sorted(list_profile_ids())
    assert {r["quantization"] for r in rows} == {"stored"}


def test_calibrated_column_is_inspect_s_calibrated_total_row_by_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # gfx1151's preset: the built-in calibration is that device's (none for an unnamed one).
    flags = ["--preset", "gfx1151", "--max-tokens", "640"]
    doc = fit_json(capsys, *flags, "--quantizations", "stored", "--calibrated")
    assert doc["inputs"]["calibration"]["origin"] == "builtin"
    assert doc["inputs"]["calibration"]["target"] == "peak"
    rows = doc["rows"]
    assert len(rows) == len(list_profile_ids())
    verdicts, load_verdicts = set(), set()
    for row in rows:
        code, out, err = run(capsys, "inspect", row["model"], *flags, "--json", "--calibrated")
        assert (code, err) == (0, ""), row["model"]
        calibrated = json.loads(out)["calibrated"]
        assert row["calibrated_total_bytes"] == calibrated["total_bytes"], row["model"]
        assert row["calibrated_fits"] is calibrated["fits"], row["model"]
        verdicts.add(row["calibrated_fits"])
        # The mlx-lm load calibrated (the built-in calibration carries a load fit).
        load = calibrated["load"]
        assert load is not None, row["model"]
        assert row["calibrated_load_total_bytes"] == load["total_bytes"], row["model"]
        assert row["calibrated_load_fits"] is load["fits"], row["model"]
        load_verdicts.add(row["calibrated_load_fits"])
        # mlxcel's total and verdict stay beside it, inspect's to the byte.
        assert (row["total_bytes"], row["fits"]) == (
            json.loads(out)["total_bytes"],
            json.loads(out)["fits"],
        )
    assert verdicts == load_verdicts == {True, False}
    code, text, _ = run(capsys, "fit", *flags, "--quantizations", "stored", "--calibrated")
    lines = text.splitlines()
    header = next(ln for ln in lines if ln.startswith("MODEL "))
    assert "CALIBRATED (vramscope)" in header
    at, load_at = header.index(" CALIBRATED"), header.index("LOAD CALIBRATED")
    for row in rows:
        (line,) = [ln for ln in lines if ln.startswith(row["model"] + " ")]
        words = "FITS" if row["calibrated_fits"] else "DOES NOT FIT"
        assert f" {words} " in line[at:load_at]
        load = format_bytes_short(row["calibrated_load_total_bytes"])
        words = "FITS" if row["calibrated_load_fits"] else "DOES NOT FIT"
        assert line[load_at:].startswith(f"{load} {words} ")
    assert any(ln.startswith("CALIBRATED: vramscope, 18 runs on gfx1151") for ln in lines)
    assert any(ln.startswith("LOAD CALIBRATED: LOAD (the mlx-lm load) with 0.50 x") for ln in lines)


def test_calibrated_rows_without_a_calibration_say_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ["--memory-limit", "24GB", "--backend", "cpu", "--quantizations", "stored"]
    doc = fit_json(capsys, *flags, "--calibrated")
    assert doc["inputs"]["calibration"] is None
    assert {r["calibrated_total_bytes"] for r in doc["rows"]} == {None}
    assert {r["calibrated_fits"] for r in doc["rows"]} == {None}
    assert {r["calibrated_load_total_bytes"] for r in doc["rows"]} == {None}
    assert {r["calibrated_load_fits"] for r in doc["rows"]} == {None}
    code, text, _ = run(capsys, "fit", *flags, "--calibrated")
    assert "LOAD CALIBRATED" not in text
    assert code == 0
    # This machine's CPU is the device named (its runs' calibration would be for it).
    cpu = read_cpu_name()
    assert f"CALIBRATED: no calibration for cpu {cpu}; mlxcel's estimate only" in text
    plain = fit_json(capsys, *flags)
    assert "calibration" not in plain["inputs"]
    assert all("calibrated_total_bytes" not in r for r in plain["rows"])


def test_gemma_3_fits_by_the_load_where_mlxcel_s_preflight_refuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # mlxcel counts gemma-3-4b-it's 29 sliding-window layers at full length: 10.62 GiB of
    # KV at 32,768 tokens, DOES NOT FIT on a 24 GiB card; mlx-lm holds them at 1,024.
    argv = ["fit", "--preset", "rx7900xtx", "--max-tokens", "32k", "--quantizations", STORED]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("MODEL "))
    columns = re.split(r"\s{2,}", header)
    assert columns[2:9] == [
        "WEIGHTS", "TOTAL", "LOAD", "VERDICT", "MLXCEL", "SLACK", "MAX CONTEXT",
    ]  # fmt: skip
    line = next(x for x in lines if x.startswith("google/gemma-3-4b-it "))
    cells = dict(zip(columns, re.split(r"\s{2,}", line), strict=True))
    gemma = rows["google/gemma-3-4b-it"]
    assert gemma["fits"] is False and gemma["load"]["fits"] is True
    assert (cells["VERDICT"], cells["MLXCEL"]) == ("FITS", "DOES NOT FIT")
    assert cells["TOTAL"] == format_bytes_short(gemma["total_bytes"])  # mlxcel's, unchanged
    assert cells["LOAD"] == format_bytes_short(gemma["load"]["total_bytes"])
    assert cells["SLACK"] == format_bytes_short(gemma["load"]["margin_bytes"])
    context = gemma["load"]["largest_context"]
    assert context["tokens"] > gemma["largest_context_tokens"]  # more than mlxcel's 21,760
    capped = " trained" if context["capped_by_trained_context"] else ""
    assert cells["MAX CONTEXT"] == f"{context['tokens']:,}{capped}"
    assert "MLXCEL DOES NOT FIT where VERDICT FITS (1 row): mlxcel's preflight would " in out
    # Ranked by the load: every row the load fits comes before every row it does not.
    order = list(rows.values())
    assert [r["load"]["fits"] for r in order] == sorted(
        (r["load"]["fits"] for r in order), reverse=True
    )
