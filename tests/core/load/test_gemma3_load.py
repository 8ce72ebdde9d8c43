"""google/gemma-3-4b-it as mlx-lm holds it: the real config and tensor list (the built-in
profile, written as a header-only folder), against mlx-lm's caches for the same shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.catalog.model_dir import read_model_dir
from core.catalog.profiles import load_profile
from core.load.load import Origin
from core.load.mlx_lm import MlxLmPlan, plan_mlx_lm
from core.model.tensor_list import folder_tensors
from tests.model_writers import write_skeleton

GEMMA3 = "google/gemma-3-4b-it"


@pytest.fixture
def gemma3_plan(tmp_path: Path) -> MlxLmPlan:
    folder = write_skeleton(load_profile(GEMMA3), tmp_path / "gemma-3-4b-it")
    plan = plan_mlx_lm(read_model_dir(folder, GEMMA3), folder_tensors(folder))
    assert isinstance(plan, MlxLmPlan)
    return plan


def test_dimensions_come_from_the_weights(gemma3_plan: MlxLmPlan) -> None:
    found = {s.name: s for s in gemma3_plan.sources}
    assert found["num_key_value_heads"].value == 4
    assert found["num_key_value_heads"].origin is Origin.WEIGHTS
    assert "k_proj [1024, 2560]" in found["num_key_value_heads"].detail
    assert (found["head_dim"].value, found["head_dim"].origin) == (256, Origin.WEIGHTS)
    assert (found["sliding_window"].value, found["sliding_window"].origin) == (1024, Origin.CONFIG)
    pattern = found["sliding_window_pattern"]
    assert (pattern.value, pattern.origin) == (6, Origin.FAMILY_DEFAULT)
    assert gemma3_plan.sliding_layers == 29 and len(gemma3_plan.caches) == 34


@pytest.mark.child_process
def test_kv_at_32k_is_what_mlx_lm_holds_for_that_shape(
    gemma3_plan: MlxLmPlan, tmp_path: Path
) -> None:
    # A tiny gemma3 of the same KV shape (34 layers, 4 KV heads of 256 from the
    # wrapper's defaults, window 1,024, pattern 6); KV does not depend on the hidden size.
    config = {
        "model_type": "gemma3",
        "vocab_size": 64,
        "text_config": {"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 34,
                        "intermediate_size": 64, "sliding_window": 1024},
    }  # fmt: skip
    spec = {"config": config, "drive": True, "cases": [[32768, 0], [32000, 768]]}
    child = [sys.executable, "-m", "tests.core.load.mlx_lm_kv_reference"]
    done = subprocess.run(
        [*child, json.dumps(spec), str(tmp_path / "shape")],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    held = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(held) == 2
    for line in held:
        prompt, generated = line["case"]
        ours = gemma3_plan.at(prompt + generated, prompt=prompt).kv_bytes
        assert ours == line["kv_bytes"]  # the issue asks within 1%: it is exact
    # 5 full layers x 32,768 slots + 29 sliding x 1,024, of 4 heads x 256 x K and V x bf16
    assert gemma3_plan.at(32768).kv_bytes == (5 * 32768 + 29 * 1024) * 4 * 256 * 2 * 2
