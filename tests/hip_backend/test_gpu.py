"""On a ROCm or CUDA machine: the same engine, real stream events, torch allocator peaks.

Skipped where torch sees no GPU (as on the CPU CI machine).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backend import Backend
from core.measurement.request import MeasureRequest
from core.measurement.result import MeasuredPeak
from core.measurement.run import peak_or_failure
from hip_backend import measure
from tests.installed import Later, needs

torch = Later("torch")

pytestmark = [pytest.mark.gpu, needs("torch")]


@pytest.fixture(autouse=True, scope="module")
def a_gpu() -> None:
    """Asked when the module's first test runs, not at collection (torch's import)."""
    if not torch.cuda.is_available():
        pytest.skip("no ROCm or CUDA device")


def gpu_run(
    model: Path, budget: int, *, p: int = 64, g: int = 4, emulate: str = "auto"
) -> MeasuredPeak:
    request = MeasureRequest(
        str(model),
        prompt_tokens=p,
        gen_tokens=g,
        warmup_tokens=1,
        inflight=budget,
        device="auto",
        emulate=emulate,
    )
    outcome = peak_or_failure(measure(request, record_history=False))
    assert isinstance(outcome, MeasuredPeak), outcome
    return outcome


def test_a_gpu_run_reports_allocator_and_device_figures(tiny_llama: Path) -> None:
    result = gpu_run(tiny_llama, 64)
    assert result.device_kind in (Backend.ROCM, Backend.CUDA)
    assert result.arch
    assert result.runtime_version
    assert result.peak_bytes >= (result.weights_bytes or 0)
    assert result.reserved_peak_bytes is not None
    assert result.reserved_peak_bytes >= result.peak_bytes
    assert result.device_used_source


def test_gpu_logits_match_the_cpu_engine(tiny_llama: Path) -> None:
    from hip_backend.model.source import ModelSource, resolve_source
    from hip_backend.torch_engine.inflight import InflightQueue, LaggingEvent
    from hip_backend.torch_engine.loader import build_model

    resolved = resolve_source(ModelSource(folder=tiny_llama))
    rows = []
    for device in (torch.device("cpu"), torch.device("cuda")):
        model = build_model(resolved.arch, resolved.plan, device)
        queue = InflightQueue(0, LaggingEvent)
        with torch.no_grad():
            ids = torch.tensor([[3, 41, 7, 200, 9]], device=device)
            rows.append(model.forward(ids, model.new_cache(queue), queue).float().cpu())
    assert float((rows[0] - rows[1]).abs().max()) <= 0.03


def test_on_a_gpu_the_bound_keeps_the_peak_below_the_unbounded_one(sweep_model: Path) -> None:
    bounded = gpu_run(sweep_model, 16, p=256, emulate="rocm")
    unbounded = gpu_run(sweep_model, 0, p=256, emulate="rocm")
    assert bounded.peak_bytes < unbounded.peak_bytes
    assert bounded.margin is not None
    assert bounded.margin.covered


def test_the_queue_is_emulated_only_where_mlx_has_it(tiny_llama: Path) -> None:
    result = gpu_run(tiny_llama, 64)
    expected = "rocm" if result.device_kind is Backend.ROCM else "none"
    assert result.extra["inflight_emulation"] == expected
    assert result.extra["sdpa_backend"]["first_chunk"] != "unknown"
    if expected == "none":
        assert result.extra["inflight_max_held_bytes"] == 0


def test_on_rocm_the_process_own_drm_memory_is_read_by_bus_id(tiny_llama: Path) -> None:
    from hip_backend.torch_engine.device import select_device
    from hip_backend.torch_engine.gpu_memory import read_process_drm_memory

    device, info = select_device("auto")
    if info.kind != "rocm":
        pytest.skip("fdinfo drm-memory is amdgpu's")
    before = read_process_drm_memory(bus_id=info.bus_id)
    block = torch.empty(256 << 20, dtype=torch.uint8, device=device)
    block.fill_(1)
    torch.cuda.synchronize()
    after = read_process_drm_memory(bus_id=info.bus_id)
    assert before is not None
    assert after is not None
    assert after.total_bytes - before.total_bytes >= 256 << 20
    result = gpu_run(tiny_llama, 64)
    assert (result.device_used_source or "").startswith("fdinfo")
    assert result.extra["pci_bus_id"] == info.bus_id
