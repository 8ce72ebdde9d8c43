"""`inspect`'s load lines and `load` object, beside mlxcel's banner and keys (#38)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.answer.advice import MLXCEL_REFUSES
from tests.core.helpers import split_banner
from tui.cli import main

GEMMA3 = "google/gemma-3-4b-it"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
CARD_24 = ["--backend", "rocm", "--memory-limit", "24GiB"]


def inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = inspect(capsys, *argv, "--json")
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def test_gemma3_folder_text_names_the_load_and_why_it_differs(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skeleton(GEMMA3)
    code, out, err = inspect(capsys, str(folder), "--max-tokens", "32768", *CARD_24)
    assert (code, err) == (0, "")
    banner, ours = split_banner(out)
    assert "KV cache:        10.62 GiB (11408506880 bytes)" in banner  # mlxcel's, untouched
    (load,) = [line for line in ours if line.startswith("vramscope: load (mlx-lm):")]
    assert "KV 756.0 MiB" in load and load.endswith("at 32,768 tokens: FITS")
    (context,) = [line for line in ours if "largest context by the load" in line]
    assert "131,072 tokens, the trained context" in context
    (why,) = [line for line in ours if line.startswith("vramscope: load vs mlxcel's estimate:")]
    assert "29 of 34 layers are sliding-window (1,024 tokens)" in why
    assert "a token of KV is 139,264 bytes over 34 layers (4 KV heads of 256)" in why
    assert "mlxcel counts 348,160" in why


def test_the_load_object_follows_mlxcel_s_keys(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skeleton(GEMMA3)
    report = inspect_json(capsys, str(folder), "--max-tokens", "32768", *CARD_24)
    keys = list(report)
    assert keys.index("load") > keys.index("total_bytes") and keys.index("load") > keys.index(
        "fits"
    )
    load = report["load"]
    assert load["engine"] == "mlx-lm" and load["fits"] is True
    assert load["kv_bytes"] == (5 * 32768 + 29 * 1024) * 4 * 256 * 2 * 2
    assert load["weights_bytes"] == report["weights_bytes"]
    assert load["total_bytes"] == (
        load["weights_bytes"] + load["kv_bytes"] + load["transient_bytes"]
    )
    assert load["largest_context"]["tokens"] == 131072
    sources = {s["name"]: s for s in load["sources"]}
    assert sources["num_key_value_heads"]["origin"] == "weights"
    assert sources["num_key_value_heads"]["value"] == 4
    assert "k_proj [1024, 2560]" in sources["num_key_value_heads"]["detail"]
    assert sources["sliding_window_pattern"]["origin"] == "family_default"
    assert {t["kind"] for t in load["terms"]} == {"weights", "kv", "transient", "inflight"}
    modelled = [t for t in load["terms"] if t["kind"] == "transient"]
    # the chunk's scores and activations are fitted, and say so; the logits and the
    # sliding caches' prefill overshoot are mlx-lm's own arithmetic
    assert sum("fitted to MLX CPU peaks of 7 dense" in t["detail"] for t in modelled) == 2
    assert all(t["origin"] == "fitted" for t in modelled if "fitted" in t["detail"])
    assert report["load_unavailable"] is None


def test_where_mlxcel_refuses_what_mlx_lm_loads_the_advice_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = inspect(capsys, GEMMA3, "--max-tokens", "32768", "--preset", "rx7900xtx")
    assert code == 0
    assert "DOES NOT FIT" in out  # mlxcel's verdict stands
    assert f"vramscope: advice: {MLXCEL_REFUSES}" in out


def test_weights_that_contradict_the_config_win_with_one_note(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skeleton(LLAMA)
    config = json.loads((folder / "config.json").read_text())
    config["num_key_value_heads"] = 4  # the weights hold 8 (k_proj [1024, 4096])
    (folder / "config.json").write_text(json.dumps(config))
    report = inspect_json(capsys, str(folder), "--max-tokens", "8192", *CARD_24)
    load = report["load"]
    assert load["kv_bytes"] == 8192 * 32 * 8 * 128 * 2 * 2
    (note,) = [n for n in load["notes"] if n.startswith("num_key_value_heads")]
    assert "the weights say 8" in note and "config.json says 4" in note


def test_a_family_the_load_does_not_know_gets_the_standard_cache_and_says_so(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skeleton(LLAMA)
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "not_a_family"
    (folder / "config.json").write_text(json.dumps(config))
    code, out, err = inspect(capsys, str(folder), "--max-tokens", "8192", *CARD_24)
    assert code == 0, err
    assert "vramscope: load note: model_type 'not_a_family': a family" in out
    assert "the standard cache (a KVCache per layer) is counted" in out


@pytest.mark.parametrize(("pattern", "expect"), [(0, "none"), (1, "full")])
def test_a_sliding_pattern_of_0_or_1_is_read_as_mlx_lm_reads_it(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str], pattern: int, expect: str
) -> None:
    folder = skeleton(GEMMA3)
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["sliding_window_pattern"] = pattern
    (folder / "config.json").write_text(json.dumps(config))
    report = inspect_json(capsys, str(folder), "--max-tokens", "4096", *CARD_24)
    if expect == "none":  # mlx-lm takes the layer index modulo 0: it cannot build it
        assert report["load"] is None
        assert "sliding_window_pattern is 0" in report["load_unavailable"]
    else:  # every layer's index modulo 1 is 0: every layer full
        assert report["load"]["kv_bytes"] == 34 * 4096 * 4 * 256 * 2 * 2


def test_a_window_larger_than_the_context_grows_as_mlx_lm_grows_it(
    skeleton: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report = inspect_json(capsys, str(skeleton(GEMMA3)), "--max-tokens", "600", *CARD_24)
    # 600 tokens: full layers hold 768 slots; sliding ones concatenate the 599-token
    # prefill, then grow by 256 for the last token: 855 of the 1,024 window.
    per_slot = 4 * 256 * 2 * 2
    assert report["load"]["kv_bytes"] == (5 * 768 + 29 * 855) * per_slot
