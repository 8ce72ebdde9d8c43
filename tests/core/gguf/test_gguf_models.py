"""The synthesized GGUF models are what gguf-py's own reader sees: the architecture, the
metadata llama.cpp requires, every tensor's ggml shape, type and bytes, and split parts
numbered as llama.cpp's loader checks them."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from tests.gguf_models import (
    ARCHITECTURES,
    gguf_layout,
    split_names,
    write_gguf,
    write_mmproj,
    write_model,
)


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("weight_type", ["F16", "Q8_0", "Q4_0"])
def test_gguf_py_reads_back_every_tensor_as_written(
    tmp_path: Path, arch: str, weight_type: str
) -> None:
    (path,) = write_model(tmp_path, arch, weight_type=weight_type)
    layout = gguf_layout(arch, weight_type=weight_type)
    reader = gguf.GGUFReader(path)
    assert reader.fields["general.architecture"].contents() == arch
    assert reader.fields[f"{arch}.block_count"].contents() == layout.value(f"{arch}.block_count")
    read = [
        (t.name, tuple(int(d) for d in t.shape), t.tensor_type, int(t.n_bytes))
        for t in reader.tensors
    ]
    assert read == [(t.name, t.shape, t.type, t.nbytes) for t in layout.tensors]
    tokens = reader.fields["tokenizer.ggml.tokens"]
    assert len(tokens.data) == len(layout.value("tokenizer.ggml.tokens")) == 512
    # The data is a sparse hole: the file ends where the last padded tensor does.
    last = reader.tensors[-1]
    assert path.stat().st_size >= int(last.data_offset) + int(last.n_bytes)


def test_matrices_take_the_models_type_and_norms_stay_f32() -> None:
    layout = gguf_layout("qwen3", weight_type="Q4_0")
    types = {t.name: t.type for t in layout.tensors}
    assert types["blk.0.attn_q.weight"] is gguf.GGMLQuantizationType.Q4_0
    assert types["blk.0.attn_q_norm.weight"] is gguf.GGMLQuantizationType.F32
    assert types["token_embd.weight"] is gguf.GGMLQuantizationType.Q4_0


def test_split_parts_are_named_and_numbered_as_llama_cpp_loads_them(tmp_path: Path) -> None:
    layout = gguf_layout("llama")
    files = write_gguf(tmp_path / "tiny.gguf", layout, split=3)
    assert files == split_names(tmp_path / "tiny.gguf", 3)
    assert [f.name for f in files] == [f"tiny-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    seen = 0
    for number, file in enumerate(files):
        reader = gguf.GGUFReader(file)
        assert reader.fields["split.no"].contents() == number
        assert reader.fields["split.count"].contents() == 3
        assert reader.fields["split.tensors.count"].contents() == len(layout.tensors)
        seen += len(reader.tensors)
    assert seen == len(layout.tensors)
    # Only the first part carries the model's metadata, as gguf-split writes it.
    assert "llama.block_count" in gguf.GGUFReader(files[0]).fields
    assert "llama.block_count" not in gguf.GGUFReader(files[1]).fields


def test_the_projector_is_a_clip_file(tmp_path: Path) -> None:
    path = write_mmproj(tmp_path / "mmproj-tiny-F16.gguf")
    reader = gguf.GGUFReader(path)
    assert reader.fields["general.architecture"].contents() == "clip"
    assert reader.fields["clip.has_vision_encoder"].contents() is True
    assert any(t.name == "mm.0.weight" for t in reader.tensors)
