"""Built-in profiles: the shipped data, the manifest encoding, and estimates identical to
the same model written out as header-only safetensors files."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import (
    PROFILE_DIR,
    decode_profile,
    encode_manifest,
    encode_profile,
    expand,
    list_profile_ids,
    load_profile,
    manifest_bytes,
    manifest_count,
    manifest_dtype_bytes,
    profile_snapshot,
    rows_from_json,
    rows_to_json,
)
from core.catalog.resolve import build_catalog, profile_entry
from core.estimate.snapshot import ModelSnapshot
from core.estimate.weights import WeightsSource
from core.model.safetensors_header import tensor_bytes
from core.model.weight_files import INDEX_FILE
from tests.model_writers import write_skeleton
from tui.cli import main

# Weight bytes each model's published files add up to (shared fixtures README, section 2).
PUBLISHED_WEIGHT_BYTES = {
    "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit": 4_517_404_672,
    "mlx-community/Qwen3-30B-A3B-4bit": 17_174_622_208,
    "mlx-community/Qwen2.5-7B-Instruct-4bit": 4_284_263_424,
    "meta-llama/Llama-3.1-8B-Instruct": 16_060_522_496,
    "Qwen/Qwen3-30B-A3B": 61_064_245_248,
    "Qwen/Qwen2.5-7B-Instruct": 15_231_233_024,
    "deepseek-ai/DeepSeek-V2-Lite": 31_412_968_448,
    "google/gemma-2-2b-it": 5_228_683_776,
    "google/gemma-3-4b-it": 8_600_158_944,
    "mistralai/Mistral-7B-Instruct-v0.1": 14_483_464_192,
    "microsoft/Phi-3-mini-4k-instruct": 7_642_159_104,
}
# Tensor lists from mlx-lm's own classes (scripts/derive_tensors.py), no published list.
DERIVED_WEIGHT_BYTES = {
    # The same shapes as google/gemma-2-2b-it in F16: its published total, to the byte.
    "mlx-community/gemma-2-2b-it-fp16": 5_228_683_776,
    # The text model quantized by mlx_lm.convert's rule (3.88B parameters).
    "mlx-community/gemma-3-4b-pt-4bit": 2_183_177_216,
    # 79.67B parameters in BF16 (the card: 80B; the MTP layer is not modelled).
    "Qwen/Qwen3-Next-80B-A3B-Instruct": 159_348_782_592,
}
CONFIG_ONLY: list[str] = []
TENSOR_PROFILES = sorted(PUBLISHED_WEIGHT_BYTES | DERIVED_WEIGHT_BYTES)
ROCM_640 = ["--max-tokens", "640", "--backend", "rocm", "--memory-limit", "82463372083"]


def test_every_model_the_issue_names_is_shipped() -> None:
    assert set(TENSOR_PROFILES) | set(CONFIG_ONLY) == set(list_profile_ids())


@pytest.mark.parametrize("repo_id", TENSOR_PROFILES)
def test_weight_bytes_equal_the_published_totals(repo_id: str) -> None:
    profile = load_profile(repo_id)
    assert profile.weight_bytes == (PUBLISHED_WEIGHT_BYTES | DERIVED_WEIGHT_BYTES)[repo_id]
    assert profile.tensors is not None
    assert sum(tensor_bytes(d, s) for _, d, s in profile.tensors) == profile.weight_bytes


def test_the_moe_original_keeps_every_tensor() -> None:
    profile = load_profile("Qwen/Qwen3-30B-A3B")
    assert profile.tensor_count == len(profile.tensors or ()) == 18_867
    names = {n for n, _, _ in profile.tensors or ()}
    assert "model.layers.47.mlp.experts.127.down_proj.weight" in names


def test_profile_data_stays_small() -> None:
    files = list(PROFILE_DIR.glob("*.json.xz"))
    assert len(files) == len(list_profile_ids()) >= 12
    assert sum(f.stat().st_size for f in files) < 32 * 1024


def _snapshot_facts(snap: ModelSnapshot) -> tuple[object, ...]:
    """Everything an estimate reads from a snapshot (the display name aside)."""
    return (
        snap.weights.bytes,
        snap.weights.source,
        snap.kv_arch,
        snap.activation_dims,
        snap.config.root if snap.config else None,
        snap.max_position_embeddings,
        snap.model_type,
    )


@pytest.mark.parametrize("layout", ["headers", "headers-no-index", "index-only"])
@pytest.mark.parametrize("repo_id", TENSOR_PROFILES)
def test_profile_reads_like_its_header_only_folder(
    repo_id: str, layout: str, tmp_path: Path
) -> None:
    profile = load_profile(repo_id)
    folder = write_skeleton(profile, tmp_path / "m", layout=layout)
    on_disk = read_model_dir(folder)
    assert on_disk.warnings == ()
    assert _snapshot_facts(profile_snapshot(profile)) == _snapshot_facts(on_disk)
    assert on_disk.weights.source is WeightsSource.SAFETENSORS_HEADER


@pytest.mark.parametrize("repo_id", [*TENSOR_PROFILES, *CONFIG_ONLY])
def test_inspect_prints_the_same_bytes_for_profile_and_folder(
    repo_id: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-cache"))
    folder = write_skeleton(load_profile(repo_id), tmp_path / "m")
    # The text at 640 tokens, then the JSON at another context and batch (each inspect
    # reads the model again: 1.1 s for Qwen3-Next's 75,000-tensor folder).
    for extra in ([], ["--json", "--max-tokens", "32768", "--batch", "4"]):
        assert main(["inspect", repo_id, *ROCM_640, *extra]) == 0
        from_profile = capsys.readouterr()
        assert main(["inspect", str(folder), *ROCM_640, *extra]) == 0
        from_folder = capsys.readouterr()
        assert from_profile.err == from_folder.err == ""
        assert from_profile.out == from_folder.out.replace(str(folder), repo_id)


def test_every_built_in_profile_sizes_from_a_tensor_list(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # What a user sees in `vramscope models`: header sizes, none from mlxcel's
    # analytical fallback (which counted Qwen3-Next's 512 experts at 1442 GiB).
    assert main(["models", "--json"]) == 0
    rows = {m["name"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert {r["weights_source"] for r in rows.values()} == {"safetensors_header"}
    gib = 1 << 30
    assert 140 * gib <= rows["Qwen/Qwen3-Next-80B-A3B-Instruct"]["weight_bytes"] <= 160 * gib
    assert 2 * gib <= rows["mlx-community/gemma-3-4b-pt-4bit"]["weight_bytes"] <= 4 * gib


def test_config_only_profile_takes_the_analytical_path(tmp_path: Path) -> None:
    shipped = load_profile("Qwen/Qwen3-Next-80B-A3B-Instruct")
    repo = "example/config-only"
    profile = decode_profile(encode_profile(repo, shipped.config_text, None))
    assert profile.tensors is None and profile.weight_bytes is None
    snap = profile_snapshot(profile)
    assert snap.weights.source is WeightsSource.ANALYTICAL_CONFIG
    folder = write_skeleton(profile, tmp_path / "m")
    assert [p.name for p in folder.iterdir()] == ["config.json"]
    assert _snapshot_facts(snap) == _snapshot_facts(read_model_dir(folder))


def test_gemma3_shows_the_family_context_without_changing_the_estimate() -> None:
    profile = load_profile("google/gemma-3-4b-it")
    snap = profile_snapshot(profile)
    assert snap.max_position_embeddings is None  # the sparse text_config leaves it out
    assert profile_entry("google/gemma-3-4b-it").max_position_embeddings == 131072
    assert "max_position_embeddings" not in profile.config.text


def test_the_known_shard_split_is_written_with_an_index(tmp_path: Path) -> None:
    profile = load_profile("meta-llama/Llama-3.1-8B-Instruct")
    folder = write_skeleton(profile, tmp_path / "m")
    shards = sorted(p.name for p in folder.glob("*.safetensors"))
    assert shards == [f"model-0000{i}-of-00004.safetensors" for i in range(1, 5)]
    index = json.loads((folder / INDEX_FILE).read_text())
    assert index["metadata"]["total_size"] == 16_060_522_496
    assert set(index["weight_map"].values()) == set(shards)
    assert profile.shards is not None and sum(len(v) for v in profile.shards.values()) == 291
    # The published shard sizes (bytes of data, headers aside), as in the fixture's index.
    sizes = [sum(tensor_bytes(d, s) for _, d, s in ts) for ts in profile.shard_plan().values()]
    assert sizes == [4_976_689_152, 4_999_790_592, 4_915_904_512, 1_168_138_240]


def test_every_catalog_profile_entry_matches_its_profile() -> None:
    catalog = build_catalog(include_hf_cache=False, env={})
    assert [e.name for e in catalog.entries] == sorted(list_profile_ids(), key=str.casefold)
    for entry in catalog.entries:
        profile = load_profile(entry.name)
        assert entry.weight_bytes == profile_snapshot(profile).weights.bytes
        assert entry.weights_on_disk is False and entry.path is None


# --- The manifest encoding ----------------------------------------------------------------

_dims = st.lists(st.integers(min_value=0, max_value=5000), min_size=0, max_size=3)
_part = st.one_of(
    st.sampled_from(["model", "layers", "mlp", "experts", "weight", "scales", "a", "b"]),
    st.integers(min_value=0, max_value=12).map(str),
    st.sampled_from(["007", "01", "1e3", "x1"]),
)
_tensor = st.tuples(
    st.lists(_part, min_size=1, max_size=6).map(".".join),
    st.sampled_from(["BF16", "F16", "U32", "F32", "I8"]),
    _dims.map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_tensor, max_size=40))
def test_manifest_round_trips_any_tensor_list(
    tensors: list[tuple[str, str, tuple[int, ...]]],
) -> None:
    rows = encode_manifest(tensors)
    assert list(expand(rows)) == tensors
    assert rows_from_json(json.loads(json.dumps(rows_to_json(rows)))) == rows
    assert manifest_count(rows) == len(tensors)
    assert manifest_bytes(rows) == sum(tensor_bytes(d, s) for _, d, s in tensors)
    expected: dict[str, int] = {}
    for _, d, s in tensors:
        expected[d] = expected.get(d, 0) + tensor_bytes(d, s)
    assert manifest_dtype_bytes(rows) == expected


@settings(max_examples=50, deadline=None)
@given(
    st.integers(min_value=2, max_value=20),
    st.integers(min_value=2, max_value=9),
    st.booleans(),
)
def test_manifest_folds_layers_and_experts(layers: int, experts: int, sort_names: bool) -> None:
    tensors: list[tuple[str, str, tuple[int, ...]]] = [
        ("model.embed_tokens.weight", "BF16", (100, 8))
    ]
    for i in range(layers):
        tensors.append((f"model.layers.{i}.norm.weight", "BF16", (8,)))
        for j in range(experts):
            tensors.append((f"model.layers.{i}.mlp.experts.{j}.w", "BF16", (8, 8)))
    if sort_names:  # safetensors headers list names in byte order: 0, 1, 10, 11, ..., 2
        tensors.sort()
    rows = encode_manifest(tensors)
    assert list(expand(rows)) == tensors
    assert len(json.dumps(rows_to_json(rows))) < 60 * (experts + 4) + 8 * layers * experts


def test_decode_rejects_a_manifest_that_no_longer_adds_up() -> None:
    blob = encode_profile("o/m", "{}", [("a.weight", "BF16", (2, 2))], {"format": "pt"})
    data = json.loads(lzma.decompress(blob))
    data["total_bytes"] += 1
    with pytest.raises(ValueError, match="total_bytes"):
        decode_profile(lzma.compress(json.dumps(data).encode()))
    with pytest.raises(ValueError, match="not a profile file"):
        decode_profile(b"not xz at all")
    assert decode_profile(blob).weight_bytes == 8
