"""The answer's own figures, each against a defect a user met before it existed (#25)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.answer.answer import Answer, answer
from core.answer.device import Device
from core.answer.question import ModelFacts, Question, Split
from core.backend import Backend
from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.available import AvailableMemory
from core.estimate.estimate import Workload
from core.parallel.sharding import ParallelKind
from core.units import GIB, format_bytes_short
from tui.cli import main

RX7900XTX = Device(Backend.ROCM, "test", AvailableMemory(int(24 * GIB * 0.8), "rx7900xtx"))


def facts(repo_id: str) -> ModelFacts:
    profile = load_profile(repo_id)
    tensors = list(profile.tensors) if profile.tensors is not None else None
    return ModelFacts(profile_snapshot(profile), repo_id, tensors=tensors)


def ask(
    repo_id: str, tokens: int, device: Device = RX7900XTX, split: Split | None = None
) -> Answer:
    question = Question(Workload(max_tokens=tokens), device, split=split or Split())
    found = answer(facts(repo_id), question)
    assert isinstance(found, Answer)
    return found


def fit_rows(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict[str, Any]]:
    assert main(["fit", "--json", "--quantizations", "stored", *argv]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    return {r["model"]: r for r in rows}


@pytest.mark.parametrize(
    ("repo_id", "trained"),
    [
        ("microsoft/Phi-3-mini-4k-instruct", 4096),
        ("google/gemma-2-2b-it", 8192),
        ("mlx-community/Qwen2.5-7B-Instruct-4bit", 32768),
    ],
)
def test_the_largest_context_stops_at_the_trained_context(
    capsys: pytest.CaptureFixture[str], repo_id: str, trained: int
) -> None:
    # Before: `fit --preset rx7900xtx --max-tokens 32k` read FITS for Phi-3-mini-4k at
    # 32,768 tokens with a max context of 35,840; gemma-2-2b-it 138,752; Qwen2.5 208,384.
    rows = fit_rows(capsys, "--preset", "rx7900xtx", "--max-tokens", "32k")
    row = rows[repo_id]
    ctx = row["largest_context"]
    assert (row["largest_context_tokens"], ctx["trained_tokens"]) == (trained, trained)
    assert ctx["capped_by_trained_context"] and ctx["memory_tokens"] > trained
    assert row["past_trained_context"] is (trained < 32768)
    assert ask(repo_id, 32768).context.tokens == trained


def test_a_context_past_the_trained_one_is_flagged_and_ranked_after_those_within_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["fit", "--preset", "rx7900xtx", "--max-tokens", "32k"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("MODEL "))
    table = [re.split(r"\s{2,}", line) for line in lines[header + 1 :] if line.strip()]
    table = table[: next(i for i, row in enumerate(table) if len(row) < 10)]
    verdict = lines[header].split().index("VERDICT")
    phi = [row for row in table if row[0] == "microsoft/Phi-3-mini-4k-instruct"]
    assert phi and all(row[-2] == "4,096 trained" and row[verdict] != "FITS" for row in phi)
    verdicts = [row[verdict] for row in table]
    fitting = [v for v in verdicts if v in ("FITS", "PAST TRAINED")]
    assert fitting == verdicts[: len(fitting)]  # what fits comes first
    assert fitting == sorted(fitting, key=lambda v: v == "PAST TRAINED")  # within it first


def test_a_split_plan_and_the_single_device_beside_it_are_capped_alike() -> None:
    # Before: `PLAN FITS 4xPP · 131,072 tokens` while the panel said 32,768 (capped) and
    # the single-device line on the same screen said 208,384 tokens (trained: 32,768).
    model = "mlx-community/Qwen2.5-7B-Instruct-4bit"
    plan = ask(model, 131072, split=Split(ParallelKind.PIPELINE, 4))
    one = ask(model, 131072)
    assert plan.fits and plan.past_trained and one.past_trained
    assert plan.context.tokens == one.context.tokens == 32768
    assert plan.context.capped and one.context.capped
    assert plan.context.memory.value is not None and one.context.memory.value is not None
    assert plan.context.memory.value > one.context.memory.value  # four devices hold more


def test_a_plan_of_one_rank_is_the_single_device() -> None:
    model = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
    for kind in ParallelKind:
        one = ask(model, 40000, split=Split(kind, 1))
        single = ask(model, 40000)
        (rank,) = one.ranks
        assert rank.estimate == single.estimate
        assert (rank.peak_bytes, rank.fits) == (single.estimate.total_bytes, single.fits)
        assert one.context == single.context


@pytest.mark.parametrize(
    ("repo_id", "total", "active"),
    [
        ("Qwen/Qwen3-30B-A3B", 30.5, 3.3),
        ("deepseek-ai/DeepSeek-V2-Lite", 15.7, 2.4),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", 79.7, 3.0),
    ],
)
def test_moe_parameter_counts_are_the_model_s(
    capsys: pytest.CaptureFixture[str], repo_id: str, total: float, active: float
) -> None:
    # Before: fit's params_billions was mlxcel's MoE-blind analytical count: 233.1, 116.9
    # and 774.3. The published totals are within 1%; active within 20% (MLA and
    # linear attention are counted as standard attention).
    row = fit_rows(capsys, "--memory-limit", "24GB")[repo_id]
    assert row["params_billions"] == pytest.approx(total, rel=0.01)
    assert row["params"]["active"] / 1e9 == pytest.approx(active, rel=0.2)
    assert row["params"]["experts"] > 1


def test_advice_never_suggests_the_quantization_the_model_already_has(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: `inspect -v` recommended `INT4 ... 4-bit required to fit` for a 4-bit model
    # with 8.32 GiB free; that line is mlxcel's rule and now says so.
    assert (
        main(["inspect", "mlx-community/Qwen2.5-7B-Instruct-4bit", "-v", "--preset", "rx7900xtx"])
        == 0
    )
    out = capsys.readouterr().out
    (rule,) = [line for line in out.splitlines() if "--recommend-quant:" in line]
    assert "mlxcel's rule" in rule
    (ours,) = [line for line in out.splitlines() if "vramscope's advice:" in line]
    assert "stored in 4 bits" in ours and "nothing to change" in ours
    four_bit = ask("mlx-community/Qwen2.5-7B-Instruct-4bit", 1 << 20)
    assert not four_bit.fits
    assert not any("mlx-4bit" in line or "mlx-8bit" in line for line in four_bit.advice.lines)
    assert four_bit.advice.stored_bits == 4


def test_a_16_bit_model_that_does_not_fit_is_told_the_what_if_that_does() -> None:
    from core.catalog.sources import profile_entry
    from core.fit.models import read_fit_model

    model = read_fit_model(profile_entry("Qwen/Qwen2.5-7B-Instruct")).facts
    question = Question(Workload(max_tokens=32768), RX7900XTX)
    found = answer(model, question)
    assert isinstance(found, Answer) and not found.fits
    (what_if,) = [line for line in found.advice.lines if line.startswith("as mlx-")]
    assert what_if.startswith("as mlx-8bit (mlx_lm.convert -q --q-bits 8) it fits")


def test_no_gpu_means_the_cpu_everywhere_and_inspect_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the explorer estimated for ROCm (7.28 GiB) and `inspect MODEL` for the CPU
    # (6.28 GiB) without saying which.
    from core.backend import BackendChoice

    no_gpu = BackendChoice(Backend.CPU, True, "no GPU device node found")
    monkeypatch.setattr("tui.commands.shared.estimate_args.detect_backend", lambda: no_gpu)
    model = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
    assert main(["inspect", model, "--memory-limit", "32GB", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["device"]["backend"] == "cpu"
    assert report["device"]["backend_reason"] == "no GPU found"
    assert report["backend_inflight_bytes"] == 0
    assert main(["inspect", model, "--memory-limit", "32GB"]) == 0
    assert "vramscope: Backend: cpu (no GPU found); available" in capsys.readouterr().out
    assert main(["fit", "--memory-limit", "32GB", "--quantizations", "stored"]) == 0
    assert "Backend: cpu (no GPU found); context 8,192 tokens" in capsys.readouterr().out


def test_inspect_of_a_16_bit_model_that_does_not_fit_suggests_the_quantization_that_fits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Llama-3.1-8B BF16 on a 24 GiB card at 32k: `fit` shows its 8-bit what-if fitting;
    `inspect` said only "fits at up to 8,192 tokens" (#41). Its advice now names the
    quantization that fits, with fit's figure, for the profile and for its folder."""
    from tests.model_writers import write_skeleton

    name = "meta-llama/Llama-3.1-8B-Instruct"
    flags = ["--preset", "rtx4090", "-n", "32768", "--json"]
    assert main(["fit", *flags, "--quantizations", "mlx-8bit"]) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out)["rows"] if r["model"] == name]
    assert row["fits"]
    folder = write_skeleton(load_profile(name), tmp_path / "llama", layout="headers")
    for model in (name, str(folder)):
        assert main(["inspect", model, *flags]) == 0
        report = json.loads(capsys.readouterr().out)
        advice = report["advice"]
        # The advice's context is the load's (#38), not mlxcel's 8,192.
        load_tokens = report["load"]["largest_context"]["tokens"]
        assert load_tokens > 8192
        assert advice[0] == f"fits at up to {load_tokens:,} tokens"
        assert advice[1] == (
            "as mlx-8bit (mlx_lm.convert -q --q-bits 8) it fits: "
            f"{format_bytes_short(row['total_bytes'])}"
        )
