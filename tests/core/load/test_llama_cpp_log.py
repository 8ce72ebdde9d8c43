"""llama.cpp's own buffer lines, read from real logs of the vendored llama.cpp (#40).

The two logs are `llama-completion -m golden-ARCH.gguf -c 5000 -ctk q8_0 -ctv q8_0 -np 4
-fa on -ngl 0 --no-repack -fit off -n 1 -p a -no-cnv --no-warmup -t 1 -v` on the golden
gemma3 (sliding window: two caches) and lfm2 (hybrid: a KV cache and recurrent state), with the
per-tensor lines left out. The same flags planned by vramscope must agree with them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.load.llama_cpp import FlashAttn, KvCacheType, LlamaCppOptions, plan_for_model
from core.load.llama_cpp_log import MIB, PRINTED_RESOLUTION_BYTES, parse_llama_log
from core.load.load import Placement, TermKind
from tests.gguf_llama_models import read_model, write_model

DATA = Path(__file__).parent / "data"
OPTIONS = LlamaCppOptions(
    n_gpu_layers=0,
    cache_type_k=KvCacheType.Q8_0,
    cache_type_v=KvCacheType.Q8_0,
    parallel=4,
    flash_attn=FlashAttn.ON,
)


def log_of(arch: str) -> str:
    return (DATA / f"llama_completion_{arch}.log").read_text(errors="replace")


def test_every_buffer_of_a_sliding_window_model_is_read() -> None:
    log = parse_llama_log(log_of("gemma3"))
    assert [(b.device, b.bytes) for b in log.model] == [("CPU_Mapped", round(5.54 * MIB))]
    assert [(b.device, b.bytes) for b in log.output] == [("CPU", round(0.12 * MIB))]
    assert [(k.cells, k.layers, k.seqs, k.streams) for k in log.kv_caches] == [
        (1280, 1, 4, 4),
        (768, 5, 4, 4),
    ]
    assert {k.type_k for k in log.kv_caches} == {"q8_0"}
    assert log.compute == (log.compute[0],) and log.compute[0].device == "CPU"
    assert log.compute_fine[0].bytes == round(17.5020 * MIB)
    table = log.by_device()
    assert set(table) == {"CPU_Mapped", "CPU"}
    assert table["CPU"]["kv"] == round(0.66 * MIB) + round(1.99 * MIB)


def test_the_recurrent_state_of_a_hybrid_is_read() -> None:
    log = parse_llama_log(log_of("lfm2"))
    assert [(r.cells, r.layers) for r in log.recurrent] == [(4, 6)]
    assert log.kv_bytes == round(2.66 * MIB) + round(0.03 * MIB)
    assert [b.device for b in log.recurrent_buffers] == ["CPU"]


@pytest.mark.parametrize("arch", ["gemma3", "lfm2"])
def test_vramscope_agrees_with_the_lines_llama_cpp_printed(tmp_path, arch: str) -> None:
    load = plan_for_model(read_model(write_model(tmp_path, arch)), OPTIONS).at(5000)
    log = parse_llama_log(log_of(arch))
    lines = len(log.kv_caches) + len(log.recurrent)
    assert abs(load.kv_bytes - log.kv_bytes) <= lines * PRINTED_RESOLUTION_BYTES
    assert abs(load.bytes_of(TermKind.OUTPUT) - log.output[0].bytes) <= PRINTED_RESOLUTION_BYTES
    assert abs(load.bytes_of(TermKind.COMPUTE) / log.compute_fine[0].bytes - 1) <= 0.10


def test_a_log_prefix_other_text_and_other_programs_lines_are_borne() -> None:
    text = "\n".join(
        [
            "srv  load_model: loading model 'x.gguf'",
            "load_tensors:        ROCm0 model buffer size =  4403.49 MiB",
            "0.00.1 I load_tensors:   CPU_Mapped model buffer size =   281.81 MiB",
            "llama_context:  ROCm_Host  output buffer size =     0.49 MiB",
            "[1234] llama_kv_cache:      ROCm0 KV buffer size =   512.00 MiB",
            "sched_reserve:      ROCm0 compute buffer size =   296.00 MiB",
            "sched_reserve:  ROCm_Host compute buffer size =    16.01 MiB",
            "load_tensors: RPC0[127.0.0.1:50052] model buffer size =     3.50 MiB",
            "an unrelated line = 12 MiB",
        ]
    )
    table = parse_llama_log(text).by_device()
    assert table == {
        "ROCm0": {
            "model": round(4403.49 * MIB),
            "kv": 512 * MIB,
            "compute": 296 * MIB,
        },
        "CPU_Mapped": {"model": round(281.81 * MIB)},
        "ROCm_Host": {"output": round(0.49 * MIB), "compute": round(16.01 * MIB)},
        "RPC0[127.0.0.1:50052]": {"model": round(3.5 * MIB)},
    }


@pytest.mark.parametrize(
    "line",
    [
        "load_tensors: ROC\x1bm0 model buffer size = 1.00 MiB",  # a control character
        "load_tensors: " + "A" * 65 + " model buffer size = 1.00 MiB",  # a name too long
        "load_tensors: RPC0[a b] model buffer size = 1.00 MiB",  # a space in the endpoint
        "load_tensors: X model buffer size = 1" + "0" * 20 + ".00 MiB",  # a number too long
        "load_tensors: X model buffer size = " + "9" * 5000 + " MiB",  # a line too long
        "llama_kv_cache: size = 0.25 MiB (256 cells, ",  # cut short
    ],
)
def test_hostile_lines_are_not_read(line: str) -> None:
    assert not parse_llama_log(line).found


def share_bytes(load, placement: Placement, kind: TermKind) -> int:
    return sum(
        t.bytes for s in load.shares if s.placement is placement for t in s.terms if t.kind is kind
    )


@pytest.mark.parametrize(("arch", "ngl"), [("gemma3", 3), ("lfm2", 4)])
def test_a_partial_offload_is_split_as_llama_cpp_split_it(tmp_path, arch: str, ngl: int) -> None:
    """Real logs of `llama-completion -c 4096 -np 2 -fa on -ngl N --rpc 127.0.0.1:50052`
    against a local ggml-rpc-server (to llama.cpp a GPU-like device): the weights, the
    KV cache and the recurrent state on the device and on the host are vramscope's shares;
    the two compute buffers are within 15%."""
    text = (DATA / f"llama_completion_rpc_{arch}_ngl{ngl}.log").read_text(errors="replace")
    assert f"offloaded {ngl}/7 layers to GPU" in text  # the output layer counts, and goes first
    table = parse_llama_log(text).by_device()
    device = table["RPC0[127.0.0.1:50052]"]
    host = table["CPU"]
    model = read_model(write_model(tmp_path, arch))
    options = LlamaCppOptions(n_gpu_layers=ngl, parallel=2, flash_attn=FlashAttn.ON)
    load = plan_for_model(model, options).at(4096)
    weights = share_bytes(load, Placement.DEVICE, TermKind.WEIGHTS)
    # A device buffer aligns each tensor: a little more than the tensors' bytes.
    assert 0 <= device["model"] - weights + PRINTED_RESOLUTION_BYTES <= 128 * len(model.tensors)
    for place, held in ((Placement.DEVICE, device), (Placement.HOST, host)):
        kv = share_bytes(load, place, TermKind.KV)
        assert abs(held["kv"] - kv) <= 2 * PRINTED_RESOLUTION_BYTES, (place, held["kv"], kv)
        compute = share_bytes(load, place, TermKind.COMPUTE)
        assert abs(compute / held["compute"] - 1) <= 0.15, (place, compute, held["compute"])
