"""mlxcel's answer on unusual inputs (issue 8, section 3), one table per class of input.

Expected values follow mlxcel's `weight_footprint_bytes`, `validate_index_shards`,
`glob_safetensors` (mlxcel-core `weights.rs`) and spec §12; docs/estimate.md lists
each case under "Unusual inputs".
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from core.catalog.model_dir import read_model_dir, resolve_weight_bytes
from core.estimate.kv_cache import KvKind, classify_kv_arch, kv_term
from core.estimate.weights import WeightsSource
from core.model.config import ModelConfig, decode_json
from core.model.weight_files import has_safetensors_extension
from tests.core.helpers import MINIMAL_CONFIG, safetensors_bytes
from tui.cli import main

ANALYTICAL = 11_604_066_304  # MINIMAL_CONFIG's analytical weights


def st(nbytes_f32: int) -> bytes:
    """A valid safetensors file holding one F32 tensor of `nbytes_f32 / 4` elements."""
    return safetensors_bytes({"w": {"dtype": "F32", "shape": [nbytes_f32 // 4]}})


def index(shards: list[Any], total: int | None = None) -> bytes:
    doc: dict[str, Any] = {"weight_map": {f"t{i}": s for i, s in enumerate(shards)}}
    if total is not None:
        doc["metadata"] = {"total_size": total}
    return json.dumps(doc).encode()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(MINIMAL_CONFIG))
    return d


def weights(d: Path) -> tuple[int, WeightsSource, tuple[str, ...]]:
    term = resolve_weight_bytes(d, ModelConfig.from_dict(MINIMAL_CONFIG))
    return term.bytes, term.source, term.warnings


# --- index weight_map values ------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # class: non-string values beside a string one are skipped, the index counts
        (["a.safetensors", None], 999),
        (["a.safetensors", 7, [1], {"x": 1}, True], 999),
        # class: no string value at all: the index is ignored, step 3 globs
        ([None, 7], 16),
        ([], 16),
    ],
)
def test_weight_map_values(folder: Path, values: list[Any], expected: int) -> None:
    (folder / "a.safetensors").write_bytes(st(16))
    (folder / "model.safetensors.index.json").write_bytes(index(values, 999))
    assert weights(folder)[0] == expected


# --- shard names legal for mlxcel -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "make"),
    [
        # class: names with one Rust path component that exist in the folder
        (".", None),
        ("model..safetensors", "file"),
        ("a\\b.safetensors", "file"),
        ("sub/", "dir"),
        ("x/.", "dir"),
    ],
)
def test_odd_but_legal_shard_names_use_the_index_total(
    folder: Path, name: str, make: str | None
) -> None:
    target = name.rstrip("/").removesuffix("/.")
    if make == "file":
        (folder / target).write_bytes(st(8))
    elif make == "dir":
        (folder / target).mkdir()
    (folder / "model.safetensors.index.json").write_bytes(index([name], 999))
    assert weights(folder)[:2] == (999, WeightsSource.SAFETENSORS_HEADER)


@pytest.mark.parametrize(
    "name",
    # class: names mlxcel refuses: the index is ignored with one warning
    ["./a.safetensors", "a//b", "sub/a.safetensors", "..", "/abs.safetensors", ""],
)
def test_refused_shard_names_ignore_the_index(folder: Path, name: str) -> None:
    (folder / "a.safetensors").write_bytes(st(16))
    (folder / "model.safetensors.index.json").write_bytes(index([name], 999))
    got, source, notes = weights(folder)
    assert (got, source) == (16, WeightsSource.SAFETENSORS_HEADER)
    assert len(notes) == 1 and "not a plain file name" in notes[0]


def test_a_legal_name_whose_header_cannot_be_read_falls_to_step_2(folder: Path) -> None:
    (folder / "sub").mkdir()
    (folder / "model.safetensors.index.json").write_bytes(index(["sub/"]))
    (folder / "model.safetensors").write_bytes(st(40))
    got, _, notes = weights(folder)
    assert got == 40
    assert len(notes) == 1 and "sub" in notes[0] and "sub: is a directory" in notes[0]


# --- broken links, loops, non-regular files -----------------------------------------


def test_broken_symlink_shard_counts_as_present(folder: Path) -> None:
    os.symlink(folder / "nowhere", folder / "a.safetensors")
    (folder / "model.safetensors.index.json").write_bytes(index(["a.safetensors"], 999))
    assert weights(folder)[0] == 999  # mlxcel checks with symlink_metadata
    (folder / "model.safetensors.index.json").write_bytes(index(["a.safetensors"]))
    got, source, notes = weights(folder)
    # no total_size: the header read fails, step 3 meets the same link and fails too
    assert (got, source) == (ANALYTICAL, WeightsSource.ANALYTICAL_CONFIG)
    assert len(notes) == 1 and "a.safetensors" in notes[0]


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        # class: a model.safetensors that does not resolve
        ("dangling", "symbolic link to a missing file"),
        ("loop", "symbolic link loop"),
    ],
)
def test_unresolvable_model_safetensors_is_warned_and_step_3_fails(
    folder: Path, kind: str, words: str
) -> None:
    link = folder / "model.safetensors"
    if kind == "dangling":
        os.symlink(folder / "nowhere", link)
    else:
        os.symlink(link, link)
    (folder / "other.safetensors").write_bytes(st(16))
    got, source, notes = weights(folder)
    # step 3 lists model.safetensors too (extension match) and fails as a whole
    assert (got, source) == (ANALYTICAL, WeightsSource.ANALYTICAL_CONFIG)
    assert len(notes) == 1 and "model.safetensors" in notes[0] and words in notes[0]


@pytest.mark.parametrize(
    "make",
    # class: entries named *.safetensors that are not regular files
    ["dir", "broken-link", "fifo"],
)
def test_step_3_fails_as_a_whole_on_a_non_file(folder: Path, make: str) -> None:
    (folder / "a.safetensors").write_bytes(st(16))
    odd = folder / "b.safetensors"
    if make == "dir":
        odd.mkdir()
    elif make == "broken-link":
        os.symlink(folder / "nowhere", odd)
    else:
        os.mkfifo(odd)
    got, source, notes = weights(folder)
    assert (got, source) == (ANALYTICAL, WeightsSource.ANALYTICAL_CONFIG)
    assert len(notes) == 1 and "b.safetensors" in notes[0]


def test_a_directory_named_model_safetensors_stops_the_search(folder: Path) -> None:
    (folder / "model.safetensors").mkdir()
    (folder / "other.safetensors").write_bytes(st(16))
    got, source, notes = weights(folder)
    assert (got, source) == (ANALYTICAL, WeightsSource.ANALYTICAL_CONFIG)
    assert len(notes) == 1 and "model.safetensors: is a directory" in notes[0]


# --- the glob step's extension rule -----------------------------------------------


@pytest.mark.parametrize(
    ("name", "counted"),
    [
        # class: names and Rust's Path::extension
        ("a.safetensors", True),
        ("..safetensors", True),
        (".hidden.safetensors", True),  # Python's glob would skip it; read_dir does not
        (".safetensors", False),  # no extension: the whole name is the stem
        ("a.SAFETENSORS", False),
        ("a.safetensors.tmp", False),
    ],
)
def test_glob_extension_rule(folder: Path, name: str, counted: bool) -> None:
    assert has_safetensors_extension(name) is counted
    (folder / name).write_bytes(st(16))
    got, source, _ = weights(folder)
    assert (got == 16) is counted
    assert (source is WeightsSource.SAFETENSORS_HEADER) is counted


# --- one fault, one warning ---------------------------------------------------------


def test_index_whose_only_shard_is_bad_warns_once(folder: Path) -> None:
    (folder / "a.safetensors").write_bytes(safetensors_bytes({}, raw_header=b"{"))
    (folder / "model.safetensors.index.json").write_bytes(index(["a.safetensors"]))
    snap = read_model_dir(folder)
    assert snap.weights.source is WeightsSource.ANALYTICAL_CONFIG
    assert len(snap.warnings) == 1 and "a.safetensors" in snap.warnings[0]


# --- text_config, serde_json typing, attn_layer_offset ------------------------------


@pytest.mark.parametrize("text_config", [None, [], "x", 3])
def test_non_object_text_config_through_a_folder(folder: Path, text_config: Any) -> None:
    (folder / "config.json").write_text(json.dumps(dict(MINIMAL_CONFIG, text_config=text_config)))
    snap = read_model_dir(folder)
    assert snap.kv_arch is None and snap.activation_dims is None
    assert snap.weights.source is WeightsSource.FALLBACK  # analytical count finds no H or L


def test_minus_zero_kv_heads_is_a_float_and_skipped() -> None:
    cfg = ModelConfig.from_dict(
        decode_json(
            b'{"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,'
            b' "num_key_value_heads": -0, "n_kv_heads": 8}',
            "config.json",
        )
    )
    arch = classify_kv_arch(cfg)
    assert arch is not None and arch.groups[0].elems_per_token == 2 * 8 * 128


@pytest.mark.parametrize(
    ("offset", "layers", "period", "attention"),
    [
        # class: offsets whose sum with the layer index wraps at 2^64
        (2**64 - 1, 8, 4, 2),  # i + offset wraps to i - 1: layers 1 and 5
        (2**64 - 2, 8, 3, 3),  # layers 1 (2^64-1 = 3k), 2 and 5
        (2**64 - 3, 4, 2, 2),
        (0, 8, 4, 2),
        (4, 32, 8, 4),  # Jamba
    ],
)
def test_attn_layer_offset_wraps_like_release_rust(
    offset: int, layers: int, period: int, attention: int
) -> None:
    expected = sum(1 for i in range(layers) if ((i + offset) % 2**64) % period == 0)
    assert expected == attention
    cfg = ModelConfig.from_dict(
        {
            "hidden_size": 64,
            "num_hidden_layers": layers,
            "num_attention_heads": 4,
            "attn_layer_period": period,
            "attn_layer_offset": offset,
        }
    )
    arch = classify_kv_arch(cfg)
    assert arch is not None and arch.kind is KvKind.HYBRID
    assert arch.groups[0].layers == attention
    assert kv_term(arch, 256, False, 1).bytes == attention * 2 * 4 * 16 * 256 * 2


def test_models_marks_a_folder_with_an_unresolvable_weight_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    root = tmp_path / "models"
    for name in ("ok", "broken"):
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(MINIMAL_CONFIG))
    (root / "ok" / "model.safetensors").write_bytes(st(16))
    os.symlink(root / "gone", root / "broken" / "model.safetensors")
    assert main(["models", "--models-dir", str(root), "--verbose"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("ok", "broken"))}
    assert "(!)" in rows["broken"] and "(!)" not in rows["ok"]
    assert "1 with file faults (!)" in out
    assert "symbolic link to a missing file" in out


# --- analytical counts that overflow: inf, never NaN ------------------------------


@pytest.mark.parametrize(
    "config",
    [
        # class: K and V products of 0 beside an inf (2.0 * 1e308 overflows first)
        {"hidden_size": 1e308, "num_hidden_layers": 1, "num_key_value_heads": 0},
        {"hidden_size": 1.7e308, "num_hidden_layers": 1, "num_key_value_heads": 0},
        # class: every term overflows
        {"hidden_size": 1e308, "num_hidden_layers": 1e308, "intermediate_size": 1e308},
    ],
)
def test_an_overflowing_analytical_count_saturates_as_mlxcel_does(
    tmp_path: Path, config: dict[str, Any]
) -> None:
    # mlxcel: weights 2^64 - 1 and DOES NOT FIT; a NaN would make it 0 bytes and FITS.
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        code = main(["inspect", str(d), "--json", "--memory-limit", "64GB"])
    assert code == 0
    report = json.loads(buffer.getvalue())
    assert report["weights_bytes"] == 2**64 - 1
    assert report["weights_source"] == "analytical_config"
    assert report["fits"] is False
