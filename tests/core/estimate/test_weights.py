"""The weights term: index total, header sums, analytical count, 7 B fallback (spec 2)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.catalog.model_dir import resolve_weight_bytes
from core.errors import HeaderError
from core.estimate.weights import WeightsSource, estimate_params_from_config
from core.model.config import ModelConfig
from core.model.safetensors_header import DTYPE_ITEMSIZE, header_weight_bytes, read_header_info
from core.model.weight_files import is_acceptable_shard_name, safetensors_weight_bytes
from tests.core.helpers import MINIMAL_CONFIG, safetensors_bytes

MakeDir = Callable[..., Path]


def st(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    header = {n: {"dtype": d, "shape": s, "data_offsets": [0, 0]} for n, (d, s) in tensors.items()}
    return safetensors_bytes(header)


def index(total: int | None, shards: list[str]) -> bytes:
    body: dict[str, Any] = {"weight_map": {f"t{i}": s for i, s in enumerate(shards)}}
    if total is not None:
        body["metadata"] = {"total_size": total}
    return json.dumps(body).encode()


def weights(path: Path, config: dict[str, Any] | None = None):
    return resolve_weight_bytes(path, ModelConfig.from_dict(config) if config else None)


def test_index_total_size_with_present_shards(model_dir: MakeDir) -> None:
    d = model_dir(
        files={
            "model.safetensors.index.json": index(999_000, ["a.safetensors"]),
            "a.safetensors": b"",
        }
    )  # never opened when total_size is present
    term = weights(d)
    assert (term.bytes, term.source) == (999_000, WeightsSource.SAFETENSORS_HEADER)


def test_single_file_header_sum(model_dir: MakeDir) -> None:
    d = model_dir(files={"model.safetensors": st({"w": ("F32", [1024, 256])})})
    assert weights(d).bytes == 1_048_576


def test_no_files_no_config_is_the_fallback(model_dir: MakeDir) -> None:
    term = weights(model_dir())
    assert (term.bytes, term.source) == (14_000_000_000, WeightsSource.FALLBACK)
    assert safetensors_weight_bytes(model_dir(name="other"))[0] is None


def test_index_without_total_and_missing_shard_uses_model_safetensors(model_dir: MakeDir) -> None:
    d = model_dir(
        files={
            "model.safetensors.index.json": index(None, ["gone.safetensors"]),
            "model.safetensors": st({"w": ("BF16", [512, 128])}),
        }
    )
    term = weights(d)
    assert term.bytes == 131_072
    assert any("gone.safetensors" in w and "missing" in w for w in term.warnings)


def test_index_without_total_sums_the_shards(model_dir: MakeDir) -> None:
    d = model_dir(
        files={
            "model.safetensors.index.json": index(None, ["s1.safetensors"]),
            "s1.safetensors": st({"w": ("F16", [2, 8])}),
        }
    )
    assert weights(d).bytes == 32


def test_stale_index_is_ignored(model_dir: MakeDir) -> None:
    d = model_dir(
        files={
            "model.safetensors.index.json": index(999_000, ["x.safetensors"]),
            "model.safetensors": st({"w": ("F32", [4, 4])}),
        }
    )
    assert weights(d).bytes == 64


def test_glob_sums_every_safetensors_file_sorted(model_dir: MakeDir) -> None:
    d = model_dir(
        files={"b.safetensors": st({"w": ("F32", [2])}), "a.safetensors": st({"w": ("I8", [3])})}
    )
    term = weights(d)
    assert (term.bytes, term.files) == (11, ("a.safetensors", "b.safetensors"))


@pytest.mark.parametrize(
    ("shape", "expected"),
    [([], 4), ([0, 5], 0), ([3, 1, 2], 24)],
)
def test_shapes(model_dir: MakeDir, shape: list[int], expected: int) -> None:
    d = model_dir(files={"model.safetensors": st({"w": ("F32", shape)})})
    assert weights(d).bytes == expected


def test_itemsizes() -> None:
    assert DTYPE_ITEMSIZE["F32"] == 4
    assert DTYPE_ITEMSIZE["BF16"] == DTYPE_ITEMSIZE["F16"] == 2
    assert DTYPE_ITEMSIZE["I8"] == DTYPE_ITEMSIZE["BOOL"] == 1
    assert DTYPE_ITEMSIZE["F64"] == 8
    assert "Q4_K" not in DTYPE_ITEMSIZE


def test_huge_products_saturate_instead_of_rejecting() -> None:
    header = {"w": {"dtype": "F64", "shape": [1 << 40, 1 << 40]}}
    assert header_weight_bytes(header) == (1 << 64) - 1


@pytest.mark.parametrize(
    ("header", "fault"),
    [
        ({"w": {"dtype": "F32", "shape": [2, "bad"]}}, "non-integer dimension"),
        ({"w": {"dtype": "F32", "shape": [2.0]}}, "non-integer dimension"),
        ({"w": {"dtype": "F32", "shape": [True]}}, "non-integer dimension"),
        ({"w": {"dtype": "F32", "shape": [-1]}}, "non-integer dimension"),
        ({"w": {"dtype": "Q4", "shape": [2]}}, "unknown dtype 'Q4'"),
        ({"w": {"shape": [2]}}, "no string 'dtype'"),
        ({"w": {"dtype": "F32"}}, "no 'shape' array"),
        ({"w": [1, 2]}, "is not an object"),
        ([1, 2], "header is not a JSON object"),
    ],
)
def test_bad_headers_name_the_fault(header: Any, fault: str) -> None:
    with pytest.raises(HeaderError, match=r"^x\.safetensors: ") as info:
        header_weight_bytes(header, "x.safetensors")
    assert fault in str(info.value)


def test_metadata_is_skipped(model_dir: MakeDir) -> None:
    header = {"__metadata__": {"format": "mlx"}, "w": {"dtype": "U32", "shape": [4, 2]}}
    d = model_dir(files={"model.safetensors": safetensors_bytes(header)})
    assert weights(d).bytes == 32


@pytest.mark.parametrize(
    ("name", "accepted"),
    [
        # class of input: names mlxcel's own check (Rust Path components) accepts
        ("model-00001-of-00002.safetensors", True),
        ("a..b.safetensors", True),
        ("model..safetensors", True),
        ("sub\\x.safetensors", True),
        ("sub/", True),
        (".", True),
        ("x/.", True),
        # class of input: names it refuses
        ("../x.safetensors", False),
        ("..", False),
        ("/etc/passwd", False),
        ("sub/x.safetensors", False),
        ("./x.safetensors", False),
        ("a//b", False),
        ("x\x00.safetensors", False),
        ("", False),
    ],
)
def test_shard_names_follow_mlxcels_component_rule(name: str, accepted: bool) -> None:
    assert is_acceptable_shard_name(name) is accepted


def test_a_bad_shard_name_invalidates_the_index(model_dir: MakeDir, tmp_path: Path) -> None:
    (tmp_path / "outside.safetensors").write_bytes(st({"w": ("F32", [1000])}))
    d = model_dir(
        files={
            "model.safetensors.index.json": index(123, ["../outside.safetensors"]),
            "ok.safetensors": st({"w": ("F32", [2])}),
        }
    )
    term = weights(d)
    assert term.bytes == 8  # the glob of the folder itself, not the index's total
    assert any("'../outside.safetensors' is not a plain file name" in w for w in term.warnings)


def test_shards_may_be_symlinks_as_in_the_hf_cache(model_dir: MakeDir, tmp_path: Path) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(st({"w": ("F16", [4])}))
    d = model_dir(files={"model.safetensors.index.json": index(None, ["s.safetensors"])})
    os.symlink(blob, d / "s.safetensors")
    assert weights(d).bytes == 8


def test_model_safetensors_that_fails_stops_the_search(model_dir: MakeDir) -> None:
    d = model_dir(
        MINIMAL_CONFIG,
        files={
            "model.safetensors": safetensors_bytes({}, raw_header=b"{"),
            "other.safetensors": st({"w": ("F32", [1])}),
        },
    )
    term = weights(d, MINIMAL_CONFIG)
    assert term.source is WeightsSource.ANALYTICAL_CONFIG
    assert term.bytes == 11_604_066_304
    assert any("model.safetensors" in w and "not valid JSON" in w for w in term.warnings)


def test_header_info_reports_whether_data_is_present(tmp_path: Path) -> None:
    from tests.model_writers import write_safetensors_skeleton

    path = tmp_path / "m.safetensors"
    write_safetensors_skeleton(path, [("w", "F32", (256, 256))], {"format": "pt"})
    info = read_header_info(path)
    assert (info.weight_bytes, info.has_data) == (262_144, True)
    os.truncate(path, info.file_size - 1)
    assert not read_header_info(path).has_data


def test_analytical_count_of_the_minimal_config() -> None:
    billions = estimate_params_from_config(ModelConfig.from_dict(MINIMAL_CONFIG))
    assert billions is not None
    assert round(billions * 1e9) == 5_802_033_152


def test_analytical_llama3_8b_is_about_7_5b() -> None:
    from core.catalog.profiles import load_profile

    billions = estimate_params_from_config(load_profile("meta-llama/Llama-3.1-8B-Instruct").config)
    assert billions is not None
    assert 7.0 <= billions <= 10.0
    assert abs(billions - 7.5049) < 0.001


def test_analytical_rounds_head_dim_half_away_from_zero() -> None:
    # hidden 20 / 8 heads = 2.5: Rust rounds to 3, Python's round() would give 2.
    cfg = {
        "hidden_size": 20,
        "num_hidden_layers": 1,
        "num_attention_heads": 8,
        "vocab_size": 0,
        "intermediate_size": 0,
    }
    billions = estimate_params_from_config(ModelConfig.from_dict(cfg))
    assert billions is not None
    per_layer = 20 * 24 + 2 * 20 * 24 + 24 * 20 + 2 * 20
    assert round(billions * 1e9) == per_layer


def test_analytical_accepts_floats_and_counts_all_experts() -> None:
    cfg = {
        "hidden_size": 64.0,
        "num_hidden_layers": 2,
        "intermediate_size": 128,
        "num_experts": 4,
        "num_attention_heads": 4,
        "vocab_size": 100,
    }
    billions = estimate_params_from_config(ModelConfig.from_dict(cfg))
    per_layer = 64 * 64 + 2 * 64 * 64 + 64 * 64 + 3 * 64 * 128 * 4 + 2 * 64
    assert billions is not None
    assert round(billions * 1e9) == 100 * 64 + 2 * per_layer


def test_analytical_needs_hidden_and_layers() -> None:
    assert estimate_params_from_config(ModelConfig.from_dict({"hidden_size": 64})) is None
    assert estimate_params_from_config(ModelConfig.from_dict({"vocab_size": 64})) is None
