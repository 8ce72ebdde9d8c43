"""Bad GGUF input: each fault a one-line GgufError naming the file and what is wrong,
never a traceback, a hang or a huge allocation; random cuts and byte flips of a real
file never raise anything else."""

from __future__ import annotations

import functools
import os
import struct
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import GgufError, HeaderError
from core.gguf.header import HEADER_CAP, NeedMoreBytes, parse_header
from core.gguf.local import read_gguf_file, read_gguf_model
from core.model.safetensors_header import read_header_info
from tests.gguf_models import gguf_layout, write_gguf, write_model
from tests.model_writers import write_safetensors_skeleton


@pytest.fixture
def model(tmp_path: Path) -> Path:
    (path,) = write_model(tmp_path, "llama", weight_type="Q8_0")
    return path


def header_end(path: Path) -> int:
    return read_gguf_file(path).data_offset


def fault(path: Path) -> str:
    with pytest.raises(GgufError) as err:
        read_gguf_model(path)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: ")
    return text.removeprefix(f"{path}: ")


@pytest.mark.parametrize("keep", [3, 10, 30, 2000, -1])
def test_a_truncated_header_is_named(model: Path, keep: int) -> None:
    data = model.read_bytes()
    cut = header_end(model) - 100 if keep == -1 else keep
    model.write_bytes(data[:cut])
    text = fault(model)
    assert text.startswith(("truncated GGUF header: ", "truncated or corrupt GGUF header: "))
    assert f"{cut:,} bytes" in text


def test_a_file_cut_inside_its_tensor_data_is_named(model: Path) -> None:
    with model.open("r+b") as fh:
        fh.truncate(model.stat().st_size - 5000)
    assert fault(model).startswith("truncated GGUF file: its tensors end at byte ")


def test_a_tensor_count_past_the_file_is_refused_before_any_allocation(model: Path) -> None:
    data = bytearray(model.read_bytes())
    data[8:16] = struct.pack("<Q", 2**62)
    model.write_bytes(data)
    assert fault(model).startswith(
        f"truncated or corrupt GGUF header: tensor count {2**62:,} cannot fit in the file ("
    )


def test_a_metadata_count_past_the_file_is_refused(model: Path) -> None:
    data = bytearray(model.read_bytes())
    data[16:24] = struct.pack("<Q", 10**15)
    model.write_bytes(data)
    assert fault(model).startswith(
        f"truncated or corrupt GGUF header: metadata count {10**15:,} cannot fit in the file"
    )


@pytest.mark.parametrize(
    ("at", "count", "said"),
    [
        (8, 300_000, "tensor count 300,000 is over vramscope's cap of 262,144"),
        (16, 70_000, "metadata count 70,000 is over vramscope's cap of 65,536"),
    ],
)
def test_counts_the_file_could_hold_are_capped_all_the_same(
    model: Path, at: int, count: int, said: str
) -> None:
    data = bytearray(model.read_bytes())
    data[at : at + 8] = struct.pack("<Q", count)
    model.write_bytes(data)
    with model.open("r+b") as fh:
        fh.truncate(16 * 1024 * 1024)  # room for that many, as zeros
    assert fault(model) == said


def test_a_string_length_past_the_file_is_refused(model: Path) -> None:
    data = bytearray(model.read_bytes())
    data[24:32] = struct.pack("<Q", 2**40)  # the first key's length
    model.write_bytes(data)
    assert fault(model).startswith(
        "truncated or corrupt GGUF header: "
        f"metadata key 0: string length {2**40:,} runs past the end of the file"
    )


def test_an_array_longer_than_the_file_is_refused(model: Path) -> None:
    data = bytearray(model.read_bytes())
    at = data.index(b"tokenizer.ggml.scores") + len(b"tokenizer.ggml.scores")
    data[at + 8 : at + 16] = struct.pack("<Q", 2**50)  # after the type and item type
    model.write_bytes(data)
    assert fault(model).startswith(
        "truncated or corrupt GGUF header: "
        f"'tokenizer.ggml.scores': array of {2**50:,} items runs past the end of the file"
    )


def test_an_unknown_quant_type_is_named_with_its_tensor(model: Path) -> None:
    data = bytearray(model.read_bytes())
    name = b"blk.0.attn_q.weight"
    at = data.index(name) + len(name) + 4 + 2 * 8  # n_dims, two dimensions
    data[at : at + 4] = struct.pack("<I", 99)
    model.write_bytes(data)
    assert fault(model) == "tensor 'blk.0.attn_q.weight' has unknown ggml type 99"


def test_a_removed_ggml_type_is_unknown_too(model: Path) -> None:
    data = bytearray(model.read_bytes())
    name = b"output_norm.weight"
    at = data.index(name) + len(name) + 4 + 8
    data[at : at + 4] = struct.pack("<I", 4)  # Q4_2, gone from ggml
    model.write_bytes(data)
    assert fault(model) == "tensor 'output_norm.weight' has unknown ggml type 4"


def test_an_unknown_architecture_is_read_and_reported_as_written(tmp_path: Path) -> None:
    layout = replace(gguf_layout("llama"), arch="mystery\x1b[2J")
    (path,) = write_gguf(tmp_path / "m.gguf", layout)
    model = read_gguf_model(path)
    assert model.architecture == "mystery\x1b[2J"  # cleaned where it is shown, not here
    assert model.weights_bytes == layout.weights_bytes


def test_a_safetensors_file_named_gguf_is_named_for_what_it_is(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    write_safetensors_skeleton(path, [("w", "F16", (4, 4))], {"format": "pt"})
    assert fault(path) == "is a safetensors file, not GGUF"


def test_a_gguf_file_named_safetensors_is_named_for_what_it_is(model: Path) -> None:
    path = model.rename(model.with_name("model.safetensors"))
    with pytest.raises(HeaderError) as err:
        read_header_info(path)
    assert str(err.value) == f"{path}: is a GGUF file, not safetensors"


def test_any_other_file_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "notes.gguf"
    path.write_text("hello, world\n")
    assert fault(path) == "is not a GGUF file (it starts with b'hell', not b'GGUF')"


def test_a_big_endian_file_is_named(model: Path) -> None:
    data = bytearray(model.read_bytes())
    data[4:8] = struct.pack(">I", 3)
    model.write_bytes(data)
    assert fault(model) == "GGUF version 0x3000000: a big-endian file, not readable"


def test_a_fifo_named_gguf_does_not_hang(tmp_path: Path) -> None:
    path = tmp_path / "pipe.gguf"
    os.mkfifo(path)
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(fault(path)), daemon=True)
    thread.start()
    thread.join(30)
    assert done == ["is not a regular file"]


def test_the_header_cap_bounds_what_is_read(model: Path) -> None:
    data = model.read_bytes()
    with pytest.raises(GgufError, match="over vramscope's 4,096-byte cap"):
        parse_header(data, len(data), str(model), cap=4096)
    with pytest.raises(NeedMoreBytes) as more:
        parse_header(data[:4096], len(data), str(model))
    assert 4096 < more.value.end <= HEADER_CAP


def read_or_fault(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.gguf"
        path.write_bytes(data)
        try:
            read_gguf_model(path)
        except GgufError as exc:
            assert "\n" not in str(exc)
            assert str(exc).startswith(str(path))


@functools.cache
def real_file() -> tuple[bytes, int]:
    """A real synthesized file's bytes (its data a few hundred KiB of zeros) and where
    its header ends."""
    with tempfile.TemporaryDirectory() as tmp:
        (path,) = write_model(Path(tmp), "qwen3moe", weight_type="Q4_0", n_vocab=300)
        return path.read_bytes(), read_gguf_file(path).data_offset


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0, 1))
def test_any_cut_of_a_real_file_is_a_typed_error(where: float) -> None:
    data, header = real_file()
    read_or_fault(data[: int(where * (header + 64))])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_byte_flips_in_a_real_header_read_or_give_a_typed_error(
    flips: list[tuple[float, int]],
) -> None:
    data, header = real_file()
    flipped = bytearray(data)
    for where, value in flips:
        flipped[int(where * (header - 1))] = value
    read_or_fault(bytes(flipped))
