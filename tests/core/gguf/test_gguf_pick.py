"""Which file `REPO[:QUANT]` means, as llama.cpp's `-hf` picks it (common/download.cpp),
on listings laid out as GGUF repos on the Hub are."""

from __future__ import annotations

import pytest

from core.errors import ModelNotFoundError
from core.gguf.pick import (
    find_best_model,
    find_best_projector,
    pick,
    quant_bits,
    split_name,
    split_repo_tag,
)

LISTING = [
    "README.md",
    "Qwen3-8B-BF16/Qwen3-8B-BF16-00001-of-00002.gguf",
    "Qwen3-8B-BF16/Qwen3-8B-BF16-00002-of-00002.gguf",
    "Qwen3-8B-IQ4_XS.gguf",
    "Qwen3-8B-Q3_K_M.gguf",
    "Qwen3-8B-Q4_K_M.gguf",
    "Qwen3-8B-Q8_0.gguf",
    "imatrix_unsloth.gguf",
    "mmproj-BF16.gguf",
    "mmproj-F16.gguf",
    "mmproj-F32.gguf",
]


def test_without_a_quant_llama_cpp_takes_q4_k_m() -> None:
    assert find_best_model(LISTING) == "Qwen3-8B-Q4_K_M.gguf"
    assert find_best_model([f for f in LISTING if "Q4_K_M" not in f]) == "Qwen3-8B-Q8_0.gguf"
    only = ["a/x-Q5_K_S.gguf", "mmproj-F16.gguf", "x-Q6_K.gguf"]
    assert find_best_model(only) == "a/x-Q5_K_S.gguf"  # the first model file listed


def test_a_quant_matches_any_case_before_a_dot_or_dash() -> None:
    assert find_best_model(LISTING, "q3_k_m") == "Qwen3-8B-Q3_K_M.gguf"
    assert find_best_model(LISTING, "iq4_xs") == "Qwen3-8B-IQ4_XS.gguf"
    assert find_best_model(LISTING, "Q4_K") is None  # `Q4_K_M.` is not `Q4_K.` nor `Q4_K-`
    assert find_best_model(LISTING, "Q6_K") is None


def test_a_split_model_is_its_first_part_and_all_its_parts() -> None:
    parts, projector = pick(LISTING, "BF16", "unsloth/Qwen3-8B-GGUF")
    assert parts == [
        "Qwen3-8B-BF16/Qwen3-8B-BF16-00001-of-00002.gguf",
        "Qwen3-8B-BF16/Qwen3-8B-BF16-00002-of-00002.gguf",
    ]
    assert projector == "mmproj-BF16.gguf"  # a folder above the model's; 16 bits, first


def test_the_projector_nearest_in_bits_and_deepest_folder() -> None:
    assert find_best_projector(LISTING, "Qwen3-8B-Q8_0.gguf") == "mmproj-BF16.gguf"
    files = ["mmproj-F32.gguf", "m/mmproj-F16.gguf", "m/x-Q4_0.gguf", "n/mmproj-Q8_0.gguf"]
    assert find_best_projector(files, "m/x-Q4_0.gguf") == "m/mmproj-F16.gguf"
    assert find_best_projector(["mmproj-F32.gguf"], "x-Q4_0.gguf") == "mmproj-F32.gguf"
    assert find_best_projector(["x-Q4_0.gguf"], "x-Q4_0.gguf") is None


def test_names_as_llama_cpp_splits_them() -> None:
    info = split_name("Qwen3-8B-BF16-00002-of-00004.gguf")
    assert info is not None
    assert (info.prefix, info.tag, info.index, info.count) == ("Qwen3-8B-BF16", "BF16", 2, 4)
    assert split_name("config.json") is None
    assert quant_bits("x-Q4_K_M.gguf") == 4
    assert quant_bits("x.bf16.gguf") == 16
    assert quant_bits("model.gguf") == 0
    assert split_repo_tag("org/repo:Q4_K_M") == ("org/repo", "Q4_K_M")
    assert split_repo_tag("org/repo") == ("org/repo", "")


def test_nothing_to_pick_names_the_files_there() -> None:
    with pytest.raises(ModelNotFoundError) as err:
        pick(LISTING, "Q2_K", "org/repo")
    assert str(err.value).startswith("org/repo: no GGUF file for quant 'Q2_K' (files: Qwen3-8B")
    with pytest.raises(ModelNotFoundError, match="holds no GGUF model file"):
        pick(["README.md", "mmproj-F16.gguf"], "", "org/repo")
