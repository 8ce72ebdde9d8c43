"""No silent substitution (issue 8, section 2): truncated weights, mixed dtypes, an
empty vocabulary and allocation failures under --memory-cap are typed failures;
history records of the wrong types are skipped with a warning."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.measurement.history import HistoryStore, encode_record
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasurementFailure
from hip_backend import measure
from hip_backend.child import _is_oom
from tests.installed import need

from .mlx_models import LLAMA_CONFIG, write_mlx_model
from .test_history import peak


def request(model: Path | str, **kw: Any) -> MeasureRequest:
    base: dict[str, Any] = {"prompt_tokens": 8, "gen_tokens": 2, "warmup_tokens": 0}
    return MeasureRequest(str(model), device="cpu", **{**base, **kw})


def failure(outcome: object, kind: FailureKind) -> MeasurementFailure:
    assert isinstance(outcome, MeasurementFailure), outcome
    assert outcome.kind is kind, outcome
    assert "\n" not in outcome.message
    return outcome


@pytest.fixture(scope="module")
def tiny_bf16(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("mlx", "mlx_lm")
    dest = tmp_path_factory.mktemp("models") / "tiny-bf16"
    return write_mlx_model(dest, dict(LLAMA_CONFIG, torch_dtype="bfloat16"), bits=None)


# --- real weights whose data region is short ----------------------------------------


@pytest.mark.parametrize("cut", [1, 100, "half"])
def test_truncated_weights_are_a_bad_model_never_synthetic(
    tiny_llama: Path, copy_model: Callable[[Path], Path], cut: int | str
) -> None:
    folder = copy_model(tiny_llama)
    shard = next(folder.glob("*.safetensors"))
    size = shard.stat().st_size
    os.truncate(shard, size // 2 if cut == "half" else size - int(cut))
    got = failure(measure(request(folder), record_history=False), FailureKind.BAD_MODEL)
    assert "truncated" in got.message and shard.name in got.message


def test_a_header_only_file_is_still_synthetic(
    tiny_llama: Path, copy_model: Callable[[Path], Path]
) -> None:
    # class: no data region at all (a skeleton), which is what synthetic weights are for
    from hip_backend.model.manifest import plan_from_folder

    folder = copy_model(tiny_llama)
    shard = next(folder.glob("*.safetensors"))
    with shard.open("rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
    os.truncate(shard, 8 + n)
    plan = plan_from_folder(folder)
    assert plan is not None and plan.synthetic


# --- files the estimate cannot read are not loaded either --------------------------


@pytest.mark.parametrize("make", ["dangling-shard", "dir-shard"])
def test_non_file_shards_are_a_bad_model(
    tiny_llama: Path, copy_model: Callable[[Path], Path], make: str
) -> None:
    folder = copy_model(tiny_llama)
    odd = folder / "zz.safetensors"  # the glob step takes it
    if make == "dangling-shard":
        os.symlink(folder / "nowhere", odd)
    else:
        odd.mkdir()
    shard = next(p for p in folder.glob("model*.safetensors"))
    shard.rename(folder / "a.safetensors")  # no model.safetensors: step 3 lists both
    failure(measure(request(folder), record_history=False), FailureKind.BAD_MODEL)


# --- typed failures ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tensor", "dtype"),
    [
        # class: one float dtype where the embeddings use another
        ("self_attn.q_proj.weight", "float32"),
        ("input_layernorm.weight", "float32"),
        ("embed_tokens.weight", "float16"),
    ],
)
def test_mixed_float_dtypes_are_unsupported_not_internal(
    tiny_bf16: Path, copy_model: Callable[[Path], Path], tensor: str, dtype: str
) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    folder = copy_model(tiny_bf16)
    shard = next(folder.glob("*.safetensors"))
    tensors = load_file(shard)
    name = next(k for k in tensors if k.endswith(tensor))
    tensors[name] = tensors[name].to(getattr(torch, dtype))
    save_file(tensors, shard, metadata={"format": "mlx"})
    got = failure(measure(request(folder), record_history=False), FailureKind.UNSUPPORTED_MODEL)
    assert "mixed float dtypes" in got.message


@pytest.mark.parametrize("vocab", [0])
def test_an_empty_vocabulary_is_a_bad_model(tmp_path: Path, vocab: int) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(LLAMA_CONFIG, vocab_size=vocab)))
    got = failure(measure(request(folder), record_history=False), FailureKind.BAD_MODEL)
    assert "vocab_size is 0" in got.message


@pytest.mark.parametrize(
    ("message", "capped", "oom"),
    [
        # class: what native allocators say when RLIMIT_AS stops them
        ("could not create a primitive", True, True),
        ("std::bad_alloc", True, True),
        ("Cannot allocate memory", True, True),
        ("could not create a primitive", False, False),
        ("expected m1 and m2 to have the same dtype", True, False),
    ],
)
def test_allocation_texts_under_a_cap(message: str, capped: bool, oom: bool) -> None:
    assert _is_oom(RuntimeError(message), capped=capped) is oom


@pytest.mark.parametrize(
    ("sig", "cap", "kind"),
    [
        # class: native code that crashes when an allocation fails under the cap
        ("SEGV", 64 << 20, FailureKind.OUT_OF_MEMORY),
        ("BUS", 64 << 20, FailureKind.OUT_OF_MEMORY),
        ("SEGV", None, FailureKind.KILLED),
        ("KILL", 64 << 20, FailureKind.KILLED),
    ],
)
def test_a_crash_under_the_memory_cap_is_out_of_memory(
    tiny_llama: Path, tmp_path: Path, sig: str, cap: int | None, kind: FailureKind
) -> None:
    python = tmp_path / "crashes"
    python.write_text(f"#!/bin/sh\ncat >/dev/null\nkill -{sig} $$\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    outcome = measure(
        request(tiny_llama, host_memory_cap_bytes=cap), python=str(python), record_history=False
    )
    got = failure(outcome, kind)
    if kind is FailureKind.OUT_OF_MEMORY:
        assert "--memory-cap" in got.message


# --- history records of the wrong types -----------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        # class: fields of the wrong JSON type or impossible values
        ("peak_bytes", "12"),
        ("peak_bytes", -1),
        ("peak_bytes", True),
        ("model", 7),
        ("load_seconds", "fast"),
        ("synthetic_weights", "yes"),
        ("extra", []),
        ("estimate_bytes", 1.5),
        ("engine", None),
        ("prompt_tokens", None),
    ],
)
def test_history_records_are_checked_field_by_field(tmp_path: Path, field: str, value: Any) -> None:
    store = HistoryStore(tmp_path / "h.jsonl")
    store.append(peak(1))
    record = json.loads(encode_record(peak(2)))
    record["result"][field] = value
    with store.path.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    store.append(peak(3))
    read = store.read()
    assert [p.peak_bytes for p in read.results] == [1, 3]
    assert len(read.warnings) == 1 and f"'{field}'" in read.warnings[0]
    assert ":2:" in read.warnings[0]


def test_a_missing_required_field_is_skipped(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.jsonl")
    record = json.loads(encode_record(peak(2)))
    del record["result"]["device_kind"]
    store.path.write_text(json.dumps(record) + "\n")
    read = store.read()
    assert read.results == [] and "'device_kind' is missing" in read.warnings[0]
