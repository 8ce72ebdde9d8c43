"""History lines written before the device kind and the split were typed still read,
typed, and are written back byte for byte (one codec: `MeasuredPeak.to_dict` /
`checked_peak`, `core.measurement.history`)."""

from __future__ import annotations

from pathlib import Path

from core.backend import Backend
from core.calibration.llama_cpp_compute import compute_runs
from core.load.llama_cpp_log import LlamaCppBufferKind
from core.load.load import Placement
from core.measurement.command_flags import EngineFamily
from core.measurement.engine import Engine
from core.measurement.fields import ExternalFields, RankFields, TorchFields
from core.measurement.history import HistoryStore, encode_record
from core.parallel.sharding import ParallelKind

# Copied from `HistoryStore.append`'s output on main 09ae223 (device kind and split as
# strings then): a torch run on ROCm, and rank 1 of a two-rank PP MLX load.
TORCH_ROCM = (
    b'{"schema":1,"kind":"measurement","result":{"model":"mlx-community/Meta-Llama-3.1-8B-Instru'
    b'ct-4bit","device_kind":"rocm","device_name":"AMD Radeon 8060S","peak_bytes":6145000000,"pe'
    b'ak_kind":"torch.cuda.max_memory_allocated over baseline","inflight_mib":1024,"prompt_token'
    b's":512,"gen_tokens":128,"synthetic_weights":false,"load_seconds":3.2,"prefill_tokens_per_s'
    b'":1651.6,"decode_tokens_per_s":40.0,"torch_version":"2.13.0","runtime_version":"6.4","arch'
    b'":"gfx1151","reserved_peak_bytes":null,"device_used_delta_bytes":null,"estimate_bytes":650'
    b'0000000,"timestamp":"2025-01-01T00:00:00+00:00","vramscope_version":"0.9.0","extra":{"infl'
    b'ight_emulation":"rocm","inflight_commits":12,"inflight_waits":null,"inflight_max_committed'
    b'_bytes":null,"inflight_max_held_bytes":null,"ops":null,"fused_bf16_modules":null,"attentio'
    b'n":"mlx-fallback","sdpa_backend":{},"generated_tokens":[1,2]},"warmup_tokens":20,"weights_'
    b'bytes":null,"device_used_source":null,"family":"llama","engine":"torch","mlx_version":null'
    b',"mlx_lm_version":null,"active_bytes":null,"cache_bytes":null,"kv_cache_mode":"fp16","acti'
    b've_plus_cache_peak_bytes":null,"os_peak_bytes":null,"os_peak_source":null}}'
)
MLX_RANK = (
    b'{"schema":1,"kind":"measurement","result":{"model":"m (pp 2, rank 1)","device_kind":"cpu",'
    b'"device_name":"MLX CPU (x86_64)","peak_bytes":10000000,"peak_kind":"mx.get_peak_memory() o'
    b'f this rank (load + workload)","inflight_mib":0,"prompt_tokens":32,"gen_tokens":4,"synthet'
    b'ic_weights":true,"load_seconds":0.1,"prefill_tokens_per_s":1.0,"decode_tokens_per_s":1.0,"'
    b'torch_version":"","runtime_version":"mlx 0.32.4, mlx-lm 0.32.2","arch":null,"reserved_peak'
    b'_bytes":null,"device_used_delta_bytes":null,"estimate_bytes":11521433,"timestamp":"2025-01'
    b'-01T00:00:00+00:00","vramscope_version":"0.9.0","extra":{"parallel":"pp","rank":1,"ranks":'
    b'2,"layers":[4,8],"seconds":{"load":0.1}},"warmup_tokens":20,"weights_bytes":8921608,"devic'
    b'e_used_source":null,"family":null,"engine":"mlx","mlx_version":null,"mlx_lm_version":null,'
    b'"active_bytes":null,"cache_bytes":null,"kv_cache_mode":"fp16","active_plus_cache_peak_byte'
    b's":null,"os_peak_bytes":null,"os_peak_source":null}}'
)

# Copied from `HistoryStore.append`'s output on main a64ef49 (engine-only fields at the
# top level then): a single-device MLX run on the CPU with every MLX figure, and a torch
# run on CUDA with the device readings and the optional fields set.
MLX_CPU = (
    b'{"schema":1,"kind":"measurement","result":{"model":"mlx-community/Qwen2.5-0.5B-Instruct-bf'
    b'16","device_kind":"cpu","device_name":"MLX CPU (x86_64)","peak_bytes":1234567890,"peak_kin'
    b'd":"mx.get_peak_memory() (MLX\'s peak of its allocations), cpu","inflight_mib":0,"prompt_to'
    b'kens":256,"gen_tokens":32,"synthetic_weights":false,"load_seconds":1.2345,"prefill_tokens_'
    b'per_s":321.5,"decode_tokens_per_s":12.25,"torch_version":"","runtime_version":null,"arch":'
    b'null,"reserved_peak_bytes":null,"device_used_delta_bytes":null,"estimate_bytes":null,"time'
    b'stamp":"2026-12-02T19:40:00+00:00","vramscope_version":"0.9.0","extra":{"generated_tokens"'
    b':[5,6,7],"mlx_memory_limit_bytes":99999999999},"warmup_tokens":20,"weights_bytes":98800000'
    b'0,"device_used_source":null,"family":"qwen2","engine":"mlx","mlx_version":"0.32.4","mlx_lm'
    b'_version":"0.32.2","active_bytes":990000000,"cache_bytes":120000000,"kv_cache_mode":"int8"'
    b',"active_plus_cache_peak_bytes":1300000000,"os_peak_bytes":1500000000,"os_peak_source":"Vm'
    b'HWM over baseline"}}'
)
TORCH_CUDA = (
    b'{"schema":1,"kind":"measurement","result":{"model":"m","device_kind":"cuda","device_name":'
    b'"NVIDIA H200","peak_bytes":5000000000,"peak_kind":"torch.cuda.max_memory_allocated over ba'
    b'seline","inflight_mib":0,"prompt_tokens":512,"gen_tokens":64,"synthetic_weights":true,"loa'
    b'd_seconds":2.5,"prefill_tokens_per_s":9000.0,"decode_tokens_per_s":80.5,"torch_version":"2'
    b'.13.0","runtime_version":"12.8","arch":"9.0","reserved_peak_bytes":5200000000,"device_used'
    b'_delta_bytes":5300000000,"estimate_bytes":5100000000,"timestamp":"2026-12-02T19:40:00+00:0'
    b'0","vramscope_version":"0.9.0","extra":{"inflight_emulation":"none","inflight_commits":0,"'
    b'inflight_waits":0,"inflight_max_committed_bytes":0,"inflight_max_held_bytes":0,"ops":100,"'
    b'fused_bf16_modules":0,"attention":"torch-sdpa","sdpa_backend":{"prefill":"flash"},"generat'
    b'ed_tokens":[1],"pci_bus_id":"0000:01:00.0","allocator_settings":{"PYTORCH_CUDA_ALLOC_CONF"'
    b':"expandable_segments:True"}},"warmup_tokens":20,"weights_bytes":4000000000,"device_used_s'
    b'ource":"cudaMemGetInfo","family":"llama","engine":"torch","mlx_version":null,"mlx_lm_versi'
    b'on":null,"active_bytes":null,"cache_bytes":null,"kv_cache_mode":"fp16","active_plus_cache_'
    b'peak_bytes":null,"os_peak_bytes":null,"os_peak_source":null}}'
)

# Written by main 002a0da (a llama.cpp buffer's kind and place, and the command's family,
# were strings then): a `vramscope run -- llama-server ...` with llama.cpp's buffers
# beside vramscope's.
LLAMA_RUN = (
    b'{"schema":1,"kind":"measurement","result":{"model":"g.gguf","device_kind":"cpu","device_'
    b'name":"host","peak_bytes":900000000,"peak_kind":"host RSS","inflight_mib":0,"prompt_toke'
    b'ns":0,"gen_tokens":4096,"synthetic_weights":false,"load_seconds":0.0,"prefill_tokens_per'
    b'_s":0.0,"decode_tokens_per_s":0.0,"torch_version":"","runtime_version":null,"arch":null,'
    b'"reserved_peak_bytes":null,"device_used_delta_bytes":null,"estimate_bytes":null,"timesta'
    b'mp":"2026-12-07T13:00:00+00:00","vramscope_version":"0.9.0","extra":{"command":"llama-se'
    b'rver -m g.gguf -c 4096","family":"llama.cpp","figure":"host","exit_status":0,"host_peak_byt'
    b'es":900000000,"host_rss_peak_bytes":null,"interval_s":0.25,"samples":12,"wall_seconds":3'
    b'.0,"other_gpu_processes":[],"maxrss_bytes":910000000,"followed_by":"environment marker",'
    b'"llama_cpp_buffers":[{"kind":"model","placement":"host","llama_cpp_bytes":511790000,"vra'
    b'mscope_bytes":511000000},{"kind":"kv","placement":"device","llama_cpp_bytes":134217728,"'
    b'vramscope_bytes":134217728},{"kind":"compute","placement":"device","llama_cpp_bytes":314'
    b'583040,"vramscope_bytes":300000000}],"llama_cpp_arch":"gemma3","llama_cpp_flash_attn":tr'
    b'ue},"warmup_tokens":0,"weights_bytes":null,"device_used_source":null,"family":null,"engi'
    b'ne":"external","mlx_version":null,"mlx_lm_version":null,"active_bytes":null,"cache_bytes'
    b'":null,"kv_cache_mode":"fp16","active_plus_cache_peak_bytes":null,"os_peak_bytes":null,"'
    b'os_peak_source":null}}'
)


def test_an_old_torch_line_reads_typed_and_writes_back_the_same(tmp_path: Path) -> None:
    history = tmp_path / "measurements.jsonl"
    history.write_bytes(TORCH_ROCM + b"\n" + MLX_RANK + b"\n")
    read = HistoryStore(history).read()
    assert read.warnings == []
    torch_run, rank = read.results
    assert torch_run.device_kind is Backend.ROCM
    assert torch_run.engine is Engine.TORCH
    assert torch_run.estimate_backend is Backend.ROCM
    fields = torch_run.fields
    assert isinstance(fields, TorchFields)
    assert (fields.emulated_queue, fields.inflight_commits, fields.attention) == (
        True,
        12,
        "mlx-fallback",
    )
    assert rank.device_kind is Backend.CPU
    assert rank.missing_queue == "no in-flight queue (MLX on cpu)"
    split = rank.fields
    assert isinstance(split, RankFields)
    assert (split.parallel, split.rank, split.ranks, split.layers) == (
        ParallelKind.PIPELINE,
        1,
        2,
        [4, 8],
    )
    assert encode_record(torch_run) == TORCH_ROCM + b"\n"
    assert encode_record(rank) == MLX_RANK + b"\n"


def test_current_engine_lines_read_and_write_back_the_same(tmp_path: Path) -> None:
    history = tmp_path / "measurements.jsonl"
    history.write_bytes(MLX_CPU + b"\n" + TORCH_CUDA + b"\n")
    read = HistoryStore(history).read()
    assert read.warnings == []
    mlx_run, torch_run = read.results
    assert (mlx_run.engine, mlx_run.device_kind) == (Engine.MLX, Backend.CPU)
    assert mlx_run.estimate_backend is Backend.CPU
    assert (torch_run.engine, torch_run.device_kind) == (Engine.TORCH, Backend.CUDA)
    assert torch_run.estimate_backend is Backend.CUDA
    assert not torch_run.emulated_queue
    assert encode_record(mlx_run) == MLX_CPU + b"\n"
    assert encode_record(torch_run) == TORCH_CUDA + b"\n"


def test_a_llama_cpp_run_written_with_string_kinds_reads_typed_and_writes_back_the_same(
    tmp_path: Path,
) -> None:
    history = tmp_path / "measurements.jsonl"
    history.write_bytes(LLAMA_RUN + b"\n")
    read = HistoryStore(history).read()
    assert read.warnings == []
    (run,) = read.results
    fields = run.fields
    assert isinstance(fields, ExternalFields) and fields.llama_cpp_buffers is not None
    assert fields.family is EngineFamily.LLAMA_CPP
    assert [(b.kind, b.place) for b in fields.llama_cpp_buffers] == [
        (LlamaCppBufferKind.MODEL, Placement.HOST),
        (LlamaCppBufferKind.KV, Placement.DEVICE),
        (LlamaCppBufferKind.COMPUTE, Placement.DEVICE),
    ]
    # calibrate --engine llama.cpp still finds its compute buffer.
    (compute,), left_out = compute_runs(read.results)
    assert (compute.llama_cpp_bytes, compute.vramscope_bytes, left_out) == (
        314583040,
        300000000,
        0,
    )
    assert encode_record(run) == LLAMA_RUN + b"\n"


def test_a_buffer_of_a_kind_this_version_does_not_know_is_skipped(tmp_path: Path) -> None:
    history = tmp_path / "measurements.jsonl"
    history.write_bytes(LLAMA_RUN.replace(b'"kind":"kv"', b'"kind":"kv2"') + b"\n")
    (run,) = HistoryStore(history).read().results
    fields = run.fields
    assert isinstance(fields, ExternalFields) and fields.llama_cpp_buffers is not None
    kinds = [b.kind for b in fields.llama_cpp_buffers]
    assert kinds == [LlamaCppBufferKind.MODEL, LlamaCppBufferKind.COMPUTE]
