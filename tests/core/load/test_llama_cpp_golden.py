"""vramscope's llama.cpp memory model against llama.cpp's own dry run (#40).

The golden table holds what the vendored llama.cpp's `llama-fit-params -fitp on -v` printed
for the synthesized models of tests/gguf_llama_models.py (scripts/llama_golden.py wrote it;
`make test-llama` regenerates and compares it live). Here the same models are written
again, read, and planned: the KV cache must equal llama.cpp's `llama_kv_cache: size` (and
`llama_memory_recurrent: size`) to the 0.01 MiB it prints, the output buffer likewise, the
compute buffer within 10%, and the weights must be the tensors' bytes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from core.gguf.record import GgufModel
from core.load.llama_cpp import (
    ContextCells,
    FlashAttn,
    KvCacheType,
    LlamaCppOptions,
    LlamaCppPlan,
    plan_for_model,
)
from core.load.llama_cpp_log import PRINTED_RESOLUTION_BYTES
from core.load.load import TermKind
from tests.gguf_llama_models import MODELS, read_model, write_model

GOLDEN = Path(__file__).parent / "data" / "llama_cpp_golden.json"
TABLE: dict[str, Any] = json.loads(GOLDEN.read_text())
RUNS: list[dict[str, Any]] = TABLE["runs"]
BY_ARCH: dict[str, list[dict[str, Any]]] = defaultdict(list)
for _run in RUNS:
    BY_ARCH[_run["arch"]].append(_run)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> dict[str, GgufModel]:
    folder = tmp_path_factory.mktemp("gguf")
    return {arch: read_model(write_model(folder, arch)) for arch in MODELS}


def options_of(run: dict[str, Any]) -> LlamaCppOptions:
    """The run's flags as vramscope's options (the golden runs are CPU-only: -ngl 0)."""
    return LlamaCppOptions(
        n_gpu_layers=0,
        cache_type_k=KvCacheType.named("-ctk", run["ctk"]),
        cache_type_v=KvCacheType.named("-ctv", run["ctv"]),
        parallel=run["np"],
        ubatch_size=run["ub"],
        flash_attn=FlashAttn(run["fa"]),
    )


def plan_of(synthesized, run: dict[str, Any]) -> LlamaCppPlan:
    return plan_for_model(synthesized[run["arch"]], options_of(run))


def describe(run: dict[str, Any]) -> str:
    return (
        f"{run['arch']} -c {run['ctx']} -ctk {run['ctk']} -ctv {run['ctv']} "
        f"-np {run['np']} -fa {run['fa']} -ub {run['ub']}"
    )


def test_the_table_covers_what_the_issue_asks() -> None:
    """Eight architectures and a hybrid, contexts off the 256 grid, three cache types,
    --parallel 1 and 4, flash attention on and off, and the command recorded."""
    assert set(BY_ARCH) == set(MODELS)
    assert len(MODELS) >= 9
    assert any(r["ctx"] % 256 for r in RUNS)
    assert {r["ctk"] for r in RUNS} >= {"f16", "q8_0", "q4_0"}
    assert {r["np"] for r in RUNS} == {1, 4}
    assert {r["fa"] for r in RUNS} == {"on", "off"}
    assert "llama-fit-params" in TABLE["commands"]["fit"]
    assert TABLE["llama_cpp"]["version"]
    assert any(r["recurrent"] for r in RUNS), "the hybrid's recurrent state was not reported"
    assert any(len(r["kv_caches"]) == 2 for r in RUNS), "no sliding-window model (two caches)"


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_kv_bytes_equal_llama_cpps_kv_cache_size(synthesized, arch: str) -> None:
    wrong = []
    for run in BY_ARCH[arch]:
        printed = sum(k["bytes"] for k in run["kv_caches"]) + sum(
            r["bytes"] for r in run["recurrent"]
        )
        lines = len(run["kv_caches"]) + len(run["recurrent"])
        ours = plan_of(synthesized, run).at(run["ctx"]).kv_bytes
        if abs(ours - printed) > PRINTED_RESOLUTION_BYTES * lines:
            wrong.append(f"{describe(run)}: vramscope {ours:,} B, llama.cpp {printed:,} B")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_cells_and_streams_are_llama_cpps(synthesized, arch: str) -> None:
    """The full cache's cells, and the sliding-window cache's where there is one, are the
    cells llama.cpp printed, per stream, with one stream per sequence when not unified."""
    wrong = []
    for run in BY_ARCH[arch]:
        plan = plan_of(synthesized, run)
        cells = ContextCells.of(run["ctx"], plan.options)
        want = [cells.n_ctx_seq]
        if plan.hparams.n_swa:
            want = [cells.n_ctx_seq, cells.swa_cells(plan.hparams.n_swa, plan.options)]
        got = [k["cells"] for k in run["kv_caches"]]
        streams = {k["streams"] for k in run["kv_caches"]}
        if run["kv_caches"] and (got != want or streams != {cells.n_stream}):
            wrong.append(f"{describe(run)}: {want} x {cells.n_stream}, llama.cpp {got} x {streams}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_output_buffer_is_llama_cpps(synthesized, arch: str) -> None:
    wrong = []
    for run in BY_ARCH[arch]:
        ours = plan_of(synthesized, run).at(run["ctx"]).bytes_of(TermKind.OUTPUT)
        if abs(ours - run["output_bytes"]) > PRINTED_RESOLUTION_BYTES:
            wrong.append(f"{describe(run)}: {ours:,} against {run['output_bytes']:,}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_compute_buffer_within_ten_percent(synthesized, arch: str) -> None:
    wrong = []
    for run in BY_ARCH[arch]:
        ours = plan_of(synthesized, run).at(run["ctx"]).bytes_of(TermKind.COMPUTE)
        theirs = run["compute_bytes"]
        if abs(ours - theirs) > 0.10 * theirs:
            wrong.append(f"{describe(run)}: {ours:,} against {theirs:,} ({ours / theirs - 1:+.1%})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_weights_are_the_tensors_bytes(synthesized, arch: str) -> None:
    """`weights_bytes` is the sum of the tensor infos' bytes; llama.cpp's mapped model
    buffer is that plus the file's alignment padding between tensors (32 bytes at most
    each), nothing more."""
    tensors = synthesized[arch].tensors
    run = BY_ARCH[arch][0]
    load = plan_of(synthesized, run).at(run["ctx"])
    assert load.weights_bytes == sum(t.nbytes for t in tensors)
    slack = run["model_bytes"] - load.weights_bytes
    assert -PRINTED_RESOLUTION_BYTES <= slack <= 32 * len(tensors) + PRINTED_RESOLUTION_BYTES


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_llama_fit_params_dry_run_row_agrees(synthesized, arch: str) -> None:
    """`llama-fit-params -fitp on` (the dry run `--fit` makes) prints whole MiB, rounded
    down, per device: model, context (the KV cache; the output buffer is not in it),
    compute.
    vramscope's host share, rounded the same way, is that row."""
    wrong = []
    for run in BY_ARCH[arch]:
        load = plan_of(synthesized, run).at(run["ctx"])
        mib = 1024 * 1024
        ours = [
            load.weights_bytes // mib,
            load.kv_bytes // mib,
            load.bytes_of(TermKind.COMPUTE) // mib,
        ]
        model, context, compute = run["fit_print_mib"]
        # The mapped model span holds the padding between tensors: it may cross a MiB.
        if (
            abs(ours[0] - model) > 1
            or ours[1] != context
            or abs(ours[2] - compute) > 0.1 * compute + 1
        ):
            wrong.append(
                f"{describe(run)}: vramscope {ours}, llama-fit-params {run['fit_print_mib']}"
            )
    assert not wrong, "\n".join(wrong)
