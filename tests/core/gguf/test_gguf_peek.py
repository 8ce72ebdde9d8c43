"""The context length a model list row shows for a GGUF file, read from the header's
first 64 KiB only (#40): the full reader's figure when the key is there, nothing (never
a guess) when it lies past the peek or the file is bad."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from core.gguf.header import PEEK_CAP
from core.gguf.local import peek_context_length_of, read_gguf_model
from tests.gguf_models import ARCHITECTURES, gguf_layout, write_gguf


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_peek_names_the_full_readers_context_length(tmp_path: Path, arch: str) -> None:
    path = tmp_path / f"{arch}.gguf"
    write_gguf(path, gguf_layout(arch, n_ctx_train=40_960, n_vocab=5000))
    assert read_gguf_model(path).context_length == 40_960
    assert peek_context_length_of(path) == 40_960


def test_a_length_past_the_first_64_kib_is_left_for_the_open(tmp_path: Path) -> None:
    """Keys written after a vocabulary bigger than the peek: no figure, not a wrong one."""
    layout = gguf_layout("llama", n_ctx_train=40_960, n_vocab=20_000)
    late = [kv for kv in layout.metadata if kv[0].endswith(".context_length")]
    rest = [kv for kv in layout.metadata if not kv[0].endswith(".context_length")]
    path = tmp_path / "late.gguf"
    write_gguf(path, replace(layout, metadata=(*rest, *late)))
    assert read_gguf_model(path).context_length == 40_960
    assert path.stat().st_size > PEEK_CAP
    assert peek_context_length_of(path) is None


def test_a_bad_file_gives_no_length_and_no_error(tmp_path: Path) -> None:
    good = tmp_path / "good.gguf"
    write_gguf(good, gguf_layout("llama", n_ctx_train=40_960))
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:40])  # inside the first keys
    liar = tmp_path / "liar.gguf"
    liar.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)  # counts past the file
    st = tmp_path / "st.gguf"
    st.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}" + b" " * 14)
    folder = tmp_path / "folder.gguf"
    folder.mkdir()
    for path in (cut, liar, st, folder, tmp_path / "missing.gguf"):
        assert peek_context_length_of(path) is None, path
