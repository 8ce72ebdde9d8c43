"""Opt-in: vramscope's llama.cpp model against the built llama.cpp itself, live (#40).

Deselected unless VRAMSCOPE_LLAMA_FIT_PARAMS names the build's `llama-fit-params`
(`make test-llama`); `llama-completion` is beside it. A case outside the golden table
(another context, three sequences, a smaller micro-batch, q4_0 K and V) is loaded for
real by llama.cpp and every term is held against vramscope's plan.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core.load.llama_cpp import (
    LLAMA_SERVER_DEFAULTS,
    FlashAttn,
    KvCacheType,
    LlamaCppOptions,
    plan_for_model,
)
from core.load.llama_cpp_log import PRINTED_RESOLUTION_BYTES, LlamaCppLog, parse_llama_log
from core.load.load import Placement, TermKind
from tests.gguf_llama_models import MODELS, read_model, write_model

pytestmark = pytest.mark.llama_cpp


def completion() -> Path:
    return Path(os.environ["VRAMSCOPE_LLAMA_FIT_PARAMS"]).with_name("llama-completion")


def load_log(model: Path, flags: list[str]) -> LlamaCppLog:
    """llama.cpp's log of a real load; its log thread can lose the last lines at exit,
    so a run without every buffer line is run again (at most eight times)."""
    command = [str(completion()), "-m", str(model), *flags, "--no-repack", "-fit", "off"]
    command += ["-n", "1", "-p", "a", "-no-cnv", "--no-warmup", "-t", "1", "-v"]
    for _ in range(8):
        proc = subprocess.run(
            command, capture_output=True, text=True, errors="replace", timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        log = parse_llama_log(proc.stdout + proc.stderr)
        if log.model and log.output and log.compute and (log.kv_caches or log.recurrent):
            return log
    pytest.fail(f"llama.cpp printed no complete log for {command}")


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_a_case_outside_the_table_agrees_with_llama_cpp(tmp_path, arch: str) -> None:
    model = read_model(path := write_model(tmp_path, arch))
    options = LlamaCppOptions(
        n_gpu_layers=0,
        cache_type_k=KvCacheType.Q4_0,
        cache_type_v=KvCacheType.Q4_0,
        parallel=3,
        ubatch_size=256,
        flash_attn=FlashAttn.ON,
    )
    flags = ["-c", "2000", "-ctk", "q4_0", "-ctv", "q4_0", "-np", "3", "-ub", "256", "-fa", "on"]
    log = load_log(path, flags)
    load = plan_for_model(model, options).at(2000)
    lines = len(log.kv_caches) + len(log.recurrent)
    assert abs(load.kv_bytes - log.kv_bytes) <= lines * PRINTED_RESOLUTION_BYTES
    assert abs(load.bytes_of(TermKind.OUTPUT) - log.output[0].bytes) <= PRINTED_RESOLUTION_BYTES
    compute = (log.compute_fine or log.compute)[0].bytes
    assert abs(load.bytes_of(TermKind.COMPUTE) / compute - 1) <= 0.10
    # The mapped model buffer spans the tensors and the file's padding between them.
    slack = log.model[0].bytes - load.weights_bytes
    assert -PRINTED_RESOLUTION_BYTES <= slack <= 32 * len(model.tensors) + PRINTED_RESOLUTION_BYTES


@pytest.fixture
def rpc_endpoint():
    """A local `ggml-rpc-server`: to llama.cpp a GPU-like device, on this CPU, so that
    `--n-gpu-layers` really places layers on a device. Stopped (its group killed) after."""
    server = Path(os.environ["VRAMSCOPE_LLAMA_FIT_PARAMS"]).with_name("ggml-rpc-server")
    if not server.is_file():
        pytest.skip("llama.cpp was built without GGML_RPC")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port), "-t", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # wait for the server to listen (not a timing assertion)
            assert proc.poll() is None, "ggml-rpc-server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "ggml-rpc-server never listened"
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("arch", ["llama", "gemma3", "lfm2"])
def test_partial_offload_places_what_llama_cpp_places(tmp_path, rpc_endpoint, arch) -> None:
    """At every `--n-gpu-layers`, the weights and the KV cache llama.cpp puts on the
    device (the RPC server) are vramscope's device share of them; fully offloaded, the
    device's compute buffer and the host's (the graph's inputs) are within 10%."""
    model = read_model(path := write_model(tmp_path, arch))
    n_layer = plan_for_model(model).hparams.n_layer
    for ngl in (1, 2, n_layer, n_layer + 1):
        flags = ["-c", "4096", "-np", "1", "-fa", "on", "-ngl", str(ngl), "--rpc", rpc_endpoint]
        log = load_log(path, flags)
        on_rpc = {d: row for d, row in log.by_device().items() if d.startswith("RPC")}
        load = plan_for_model(model, LlamaCppOptions(n_gpu_layers=ngl)).at(4096)
        device = next(s for s in load.shares if s.placement is Placement.DEVICE)
        weights = sum(t.bytes for t in device.terms if t.kind is TermKind.WEIGHTS)
        kv = sum(t.bytes for t in device.terms if t.kind is TermKind.KV)
        got_weights = sum(row.get("model", 0) for row in on_rpc.values())
        got_kv = sum(row.get("kv", 0) for row in on_rpc.values())
        # A device buffer aligns each tensor (at most 128 bytes lost a tensor here).
        assert (
            0
            <= got_weights - weights + PRINTED_RESOLUTION_BYTES
            <= 2 * PRINTED_RESOLUTION_BYTES + 128 * len(model.tensors)
        ), (ngl, got_weights, weights)
        assert abs(got_kv - kv) <= 2 * PRINTED_RESOLUTION_BYTES, (ngl, got_kv, kv)
        if ngl == n_layer + 1:
            host = next(s for s in load.shares if s.placement is Placement.HOST)
            ours = {
                "device": sum(t.bytes for t in device.terms if t.kind is TermKind.COMPUTE),
                "host": sum(t.bytes for t in host.terms if t.kind is TermKind.COMPUTE),
            }
            theirs = {
                "device": sum(row.get("compute", 0) for row in on_rpc.values()),
                "host": log.by_device()["CPU"]["compute"],
            }
            for place, want in theirs.items():
                assert abs(ours[place] / want - 1) <= 0.10, (place, ours[place], want)


@pytest.mark.parametrize("arch", ["llama", "gemma3", "lfm2"])
def test_a_unified_cache_agrees_with_llama_cpp(tmp_path, arch: str) -> None:
    """`--kv-unified` with 4 sequences (llama-server's default), through
    llama-batched-bench (llama-completion does not take -kvu): one stream of the whole
    context, and sliding-window layers sized for `n_swa x 4 + n_ubatch`."""
    model = read_model(path := write_model(tmp_path, arch))
    bench = completion().with_name("llama-batched-bench")
    command = [str(bench), "-m", str(path), "-c", "3000", "-npp", "8", "-ntg", "1", "-npl", "4"]
    command += ["-kvu", "-fa", "on", "-ngl", "0", "--no-repack", "-fit", "off", "-t", "1", "-v"]
    for _ in range(8):
        proc = subprocess.run(
            command, capture_output=True, text=True, errors="replace", timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        log = parse_llama_log(proc.stdout + proc.stderr)
        if log.compute and (log.kv_caches or log.recurrent):
            break
    else:
        pytest.fail("llama-batched-bench printed no complete log")
    load = plan_for_model(model, replace(LLAMA_SERVER_DEFAULTS, n_gpu_layers=0)).at(3000)
    assert {k.streams for k in log.kv_caches} == {1}
    lines = len(log.kv_caches) + len(log.recurrent)
    assert abs(load.kv_bytes - log.kv_bytes) <= lines * PRINTED_RESOLUTION_BYTES
    assert abs(load.bytes_of(TermKind.OUTPUT) - log.output[0].bytes) <= PRINTED_RESOLUTION_BYTES
    compute = (log.compute_fine or log.compute)[0].bytes
    assert abs(load.bytes_of(TermKind.COMPUTE) / compute - 1) <= 0.10
