"""Opt-in: llama.cpp itself loads every synthesized model. Set VRAMSCOPE_LLAMA_FIT_PARAMS
to a built `llama-fit-params` (the vendored llama.cpp of llama-cpp-python 0.3.36); its
dry run (`-fitp on`) loads the metadata, the vocabulary and every tensor's shape, and
refuses a file with a missing, extra or misshapen tensor."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.gguf_models import ARCHITECTURES, gguf_layout, write_gguf, write_model

TOOL = os.environ.get("VRAMSCOPE_LLAMA_FIT_PARAMS", "")
pytestmark = pytest.mark.skipif(
    not TOOL or not Path(TOOL).is_file(), reason="VRAMSCOPE_LLAMA_FIT_PARAMS is not set"
)


def dry_run(path: Path) -> list[int]:
    """The MiB the dry run prints for the host: model, context, compute."""
    done = subprocess.run(
        [TOOL, "-m", str(path), "-fitp", "on", "-c", "1000"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # Its verbose log is written by a thread and not always flushed at exit; this line is.
    found = re.search(r"^Host (\d+) (\d+) (\d+)", done.stdout, re.MULTILINE)
    assert found is not None, done.stdout[-2000:]
    return [int(n) for n in found.groups()]


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("weight_type", ["F16", "Q8_0", "Q4_0"])
def test_llama_cpp_loads_the_model(tmp_path: Path, arch: str, weight_type: str) -> None:
    (path,) = write_model(tmp_path, arch, weight_type=weight_type)
    model, _, _ = dry_run(path)
    # Rounded MiB: every tiny model holds under 3 MiB of weights.
    assert model <= 3


def test_llama_cpp_loads_a_split_model(tmp_path: Path) -> None:
    parts = write_gguf(tmp_path / "tiny.gguf", gguf_layout("qwen3moe"), split=3)
    dry_run(parts[0])
