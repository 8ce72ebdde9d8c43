"""The local GGUF reader against gguf-py's own reader, on real synthesized files: the
architecture, metadata, every tensor's type, shape and bytes, where the data starts;
split sets as one model; a folder's file and projector picked by llama.cpp's rules; and
a multi-GB file read for its header alone."""

from __future__ import annotations

import os
from pathlib import Path

import gguf
import pytest

from core.errors import GgufError, ModelNotFoundError
from core.gguf.local import read_gguf_file, read_gguf_model
from core.gguf.record import GgufArray
from tests.gguf_models import (
    ARCHITECTURES,
    gguf_layout,
    write_gguf,
    write_mmproj,
    write_model,
)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_reader_agrees_with_gguf_py(tmp_path: Path, arch: str) -> None:
    (path,) = write_model(tmp_path, arch, weight_type="Q4_0")
    model = read_gguf_model(path)
    reader = gguf.GGUFReader(path)
    assert model.architecture == arch
    assert [(t.name, t.type, t.shape, t.nbytes) for t in model.tensors] == [
        (t.name, t.tensor_type, tuple(int(d) for d in t.shape), int(t.n_bytes))
        for t in reader.tensors
    ]
    assert model.first.data_offset == reader.data_offset
    assert model.weights_bytes == gguf_layout(arch, weight_type="Q4_0").weights_bytes
    assert model.file_sizes == (path.stat().st_size,)
    for key, field in reader.fields.items():
        if not field.types or field.types[0] is gguf.GGUFValueType.ARRAY:
            continue
        if key.startswith("GGUF."):
            continue  # gguf-py's own pseudo-fields (version, counts)
        assert model.metadata[key] == pytest.approx(field.contents()), key
    assert model.context_length == 4096


def test_small_arrays_keep_their_values_and_big_ones_their_length(tmp_path: Path) -> None:
    (path,) = write_model(tmp_path, "lfm2", n_vocab=5000)
    model = read_gguf_model(path)
    kv = model.arch_value("attention.head_count_kv")
    assert isinstance(kv, GgufArray)
    assert kv.values == (0, 0, 2, 0, 0, 2)
    tokens = model.value("tokenizer.ggml.tokens")
    assert isinstance(tokens, GgufArray)
    assert (tokens.length, tokens.values, tokens.item_type) == (
        5000,
        None,
        gguf.GGUFValueType.STRING,
    )


def test_a_split_set_is_one_model_whichever_part_is_named(tmp_path: Path) -> None:
    layout = gguf_layout("qwen3moe")
    parts = write_gguf(tmp_path / "moe-Q8_0.gguf", layout, split=3)
    for part in parts:
        model = read_gguf_model(part)
        assert [f.path for f in model.files] == [str(p) for p in parts]
        assert model.split is not None and model.split.count == 3
        assert model.weights_bytes == layout.weights_bytes
        assert [t.name for t in model.tensors] == [t.name for t in layout.tensors]
        assert model.architecture == "qwen3moe"
        assert model.arch_int("expert_count") == 8


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    parts = write_gguf(tmp_path / "m.gguf", gguf_layout("llama"), split=3)
    parts[1].unlink()
    with pytest.raises(GgufError) as err:
        read_gguf_model(parts[0])
    assert str(err.value) == f"{parts[1]}: part 2 of 3 of the split model is missing"


def test_a_part_from_another_split_is_refused(tmp_path: Path) -> None:
    parts = write_gguf(tmp_path / "m.gguf", gguf_layout("llama"), split=3)
    other = write_gguf(tmp_path / "o.gguf", gguf_layout("llama"), split=2)
    parts[2].write_bytes(other[1].read_bytes())
    with pytest.raises(GgufError) as err:
        read_gguf_model(parts[0])
    assert str(err.value) == f"{parts[2]}: split.no is 1, expected 2"


def test_a_folder_reads_llama_cpps_pick_and_the_projector(tmp_path: Path) -> None:
    write_model(tmp_path, "qwen3", weight_type="F16")
    write_model(tmp_path, "qwen3", weight_type="Q8_0")
    write_model(tmp_path, "qwen3", weight_type="Q4_0")
    write_mmproj(tmp_path / "mmproj-qwen3-F16.gguf")
    write_mmproj(tmp_path / "mmproj-qwen3-Q8_0.gguf")
    model = read_gguf_model(tmp_path)
    # No Q4_K_M file: llama.cpp's next default is Q8_0, and the projector nearest 8 bits.
    assert Path(model.first.path).name == "qwen3-Q8_0.gguf"
    assert model.projector is not None
    assert Path(model.projector.path).name == "mmproj-qwen3-Q8_0.gguf"
    assert model.projector.architecture == "clip"
    assert any("3 GGUF model files" in n for n in model.notes)
    assert Path(read_gguf_model(tmp_path, "f16").first.path).name == "qwen3-F16.gguf"
    with pytest.raises(ModelNotFoundError, match="no GGUF file for quant 'Q6_K'"):
        read_gguf_model(tmp_path, "Q6_K")


def test_a_model_file_finds_the_projector_beside_it(tmp_path: Path) -> None:
    (path,) = write_model(tmp_path, "gemma3", weight_type="Q4_0")
    write_mmproj(tmp_path / "mmproj-gemma3-F16.gguf")
    model = read_gguf_model(path)
    assert model.projector is not None
    assert model.projector.tensor_bytes > 0
    assert model.weights_bytes == gguf_layout("gemma3", weight_type="Q4_0").weights_bytes


def _bytes_read() -> int:
    with open("/proc/self/io", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def test_a_multi_gigabyte_file_is_read_for_its_header_only(tmp_path: Path) -> None:
    layout = gguf_layout(
        "llama", weight_type="F16", n_embd=4096, n_ff=14336, n_layer=32, n_vocab=32000
    )
    (path,) = write_gguf(tmp_path / "big-F16.gguf", layout)
    assert path.stat().st_size > 10**10  # a 7B-sized F16 file: 15.0 GB
    assert os.stat(path).st_blocks * 512 < 16 * 1024**2  # sparse
    before = _bytes_read()
    model = read_gguf_file(path)
    read = _bytes_read() - before
    assert model.tensor_bytes == layout.weights_bytes
    assert read <= model.data_offset + 1024 * 1024


def test_array_values_kept_are_bounded_across_the_header(tmp_path: Path) -> None:
    from gguf import GGUFValueType

    from core.gguf.header import KEPT_ITEMS
    from tests.gguf_models import MetaValue

    layout = gguf_layout("llama")
    for i in range(70):  # 70 x 4,096 items: past the 262,144 kept
        layout = layout.with_metadata(
            f"test.array_{i:02d}", MetaValue([i] * 4096, GGUFValueType.ARRAY, GGUFValueType.UINT8)
        )
    (path,) = write_gguf(tmp_path / "m.gguf", layout)
    model = read_gguf_model(path)
    arrays = [model.value(f"test.array_{i:02d}") for i in range(70)]
    assert all(isinstance(a, GgufArray) and a.length == 4096 for a in arrays)
    kept = [a for a in arrays if isinstance(a, GgufArray) and a.values is not None]
    assert 0 < sum(a.length for a in kept) <= KEPT_ITEMS < 70 * 4096
    assert kept[0].values == (0,) * 4096
    assert arrays[-1].values is None  # type: ignore[union-attr]
