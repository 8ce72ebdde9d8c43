"""The in-flight budget sweep on the CPU, through the real launcher and child process.

The model's weight copies per prefill (668 MiB of bf16 dequantized copies, 4 MiB
each) dwarf every budget, so transients decide the peak, as in mlxcel's sweep on
gfx1151: the peak grows with the budget, the bound switched off gives the largest
peak of all (one the estimate does not model), and with the bound on the estimate
at context P + G covers every measured peak.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.measurement.history import HistoryStore
from core.measurement.request import MeasureRequest
from core.measurement.result import MeasuredPeak
from core.measurement.run import peak_or_failure
from hip_backend import measure, prepare
from tests.installed import needs

pytestmark = needs("torch")


BUDGETS_MIB = (16, 256, 0)
"""The sweep's ends and the bound off: each budget is a child of 4.4 s of processor time
(torch's import, the 188 MB load, three passes of 668 MiB of copies). 64 MiB, between
them, read between them in every sweep (docs/benchmark_results/cpu-sweep-2026-12-01.md)
and the in-flight queue's own tests hold each of 16, 64 and 256 (test_inflight.py)."""
MIB = 1 << 20


@pytest.fixture(scope="module")
def sweep(sweep_model: Path) -> dict[int, tuple[MeasuredPeak, int]]:
    """Peak and estimate (with the bound off: without the in-flight term) per budget."""
    out = {}
    for budget in BUDGETS_MIB:
        request = MeasureRequest(
            str(sweep_model),
            prompt_tokens=32,  # short passes: the peak is set by the prefill's copies
            gen_tokens=1,
            warmup_tokens=1,
            inflight=budget,
            device="cpu",
        )
        outcome = peak_or_failure(measure(request, record_history=False))
        assert isinstance(outcome, MeasuredPeak), outcome
        out[budget] = (outcome, prepare(request).estimate.total_bytes)
    return out


def test_real_weights_were_loaded_and_transients_dwarf_the_budgets(
    sweep: dict[int, tuple[MeasuredPeak, int]],
) -> None:
    off, _ = sweep[0]
    assert not off.synthetic_weights
    assert off.weights_bytes == 187_958_272  # the safetensors header sum of the folder
    assert off.peak_bytes - (off.weights_bytes or 0) > 2 * 256 * MIB


def test_peak_grows_with_the_budget_and_is_largest_with_the_bound_off(
    sweep: dict[int, tuple[MeasuredPeak, int]],
) -> None:
    peaks = [sweep[b][0].peak_bytes for b in BUDGETS_MIB]
    assert peaks == sorted(peaks)
    assert len(set(peaks)) == len(peaks)


def test_estimate_at_p_plus_g_covers_every_peak_with_the_bound_on(
    sweep: dict[int, tuple[MeasuredPeak, int]],
) -> None:
    for budget in BUDGETS_MIB[:-1]:
        result, estimate = sweep[budget]
        assert result.estimate_bytes == estimate  # the launcher attached the same estimate
        assert result.margin is not None
        assert result.margin.covered, (budget, result.peak_bytes, estimate)


def test_with_the_bound_off_the_estimate_is_below_the_peak(
    sweep: dict[int, tuple[MeasuredPeak, int]],
) -> None:
    """mlxcel's estimate does not model MLX_ROCM_MAX_INFLIGHT_MB=0 (20.60 GB for the 8B)."""
    result, estimate = sweep[0]
    assert estimate < result.peak_bytes


def test_the_host_waited_only_with_the_bound_on(
    sweep: dict[int, tuple[MeasuredPeak, int]],
) -> None:
    assert sweep[0][0].extra["inflight_waits"] == 0
    assert all(sweep[b][0].extra["inflight_waits"] > 0 for b in BUDGETS_MIB[:-1])


def test_a_run_is_recorded_in_the_history(tiny_llama: Path, state_home: Path) -> None:
    """The default launcher path appends the result to the store (and nothing else)."""
    request = MeasureRequest(
        str(tiny_llama), prompt_tokens=4, gen_tokens=1, warmup_tokens=0, device="cpu"
    )
    outcome = peak_or_failure(measure(request))
    assert isinstance(outcome, MeasuredPeak)
    read = HistoryStore.default().read()
    assert read.results == [outcome]
