"""The solvers agree with the real estimate at the boundary, to the token and the MiB."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.answer.solve import (
    CONTEXT_SEARCH_LIMIT,
    FitLimit,
    largest_fitting,
    largest_fitting_context,
    largest_fitting_inflight,
)
from core.backend import Backend
from core.catalog.profiles import load_profile, profile_snapshot
from core.estimate.available import AvailableMemory
from core.estimate.estimate import EstimateSettings, Workload, estimate
from core.estimate.inflight import MAX_ACCEPTED_INFLIGHT_MB
from core.estimate.snapshot import ModelSnapshot, snapshot_from_config
from core.estimate.weights import WeightsSource, WeightsTerm
from core.units import GIB, U64_MAX

LLAMA_4BIT = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
GFX1151_LIMIT = 82_463_372_083


def llama() -> ModelSnapshot:
    return profile_snapshot(load_profile(LLAMA_4BIT))


def settings(
    backend: Backend = Backend.ROCM, available: int = GFX1151_LIMIT, inflight_mib: int = 1024
) -> EstimateSettings:
    return EstimateSettings(backend, AvailableMemory(available, "test"), inflight_mib=inflight_mib)


def fits_at_tokens(model: ModelSnapshot, wl: Workload, st: EstimateSettings, n: int) -> bool:
    return estimate(model, replace(wl, max_tokens=n), st).fits


def fits_at_mib(model: ModelSnapshot, wl: Workload, st: EstimateSettings, mib: int) -> bool:
    return estimate(model, wl, replace(st, inflight_mib=mib)).fits


@pytest.mark.parametrize(
    ("backend", "available", "batch", "int8"),
    [
        (Backend.ROCM, GFX1151_LIMIT, 1, False),
        (Backend.ROCM, 16 * GIB, 1, False),
        (Backend.ROCM, 24 * GIB, 4, True),
        (Backend.CUDA, 19 * GIB, 2, False),
        (Backend.METAL, 8 * GIB, 1, True),
    ],
)
def test_largest_context_is_the_exact_boundary(
    backend: Backend, available: int, batch: int, int8: bool
) -> None:
    model, wl = llama(), Workload(batch=batch, kv_int8=int8)
    st = settings(backend, available)
    limit = largest_fitting_context(model, wl, st)
    assert limit.value is not None
    assert not limit.unbounded
    assert fits_at_tokens(model, wl, st, limit.value)
    assert not fits_at_tokens(model, wl, st, limit.value + 1)


def test_largest_context_on_gfx1151_is_a_kv_step_multiple() -> None:
    # The KV term grows in 256-token steps, so the last fitting context ends a step.
    limit = largest_fitting_context(llama(), Workload(), settings())
    assert limit.value is not None
    assert limit.value % 256 == 0
    assert limit.value > 131072  # the whole trained context fits in 76.80 GiB


def test_nothing_fits_when_the_weights_alone_overflow() -> None:
    assert largest_fitting_context(llama(), Workload(), settings(available=GIB)) == FitLimit(None)


def test_context_without_a_kv_term_is_unbounded() -> None:
    weights = WeightsTerm(1000, WeightsSource.FALLBACK, ())
    model = snapshot_from_config("no-config", None, weights)
    limit = largest_fitting_context(model, Workload(), settings(available=2 * GIB))
    assert limit == FitLimit(CONTEXT_SEARCH_LIMIT, unbounded=True)


@pytest.mark.parametrize("max_tokens", [256, 8192, 131072])
def test_largest_inflight_is_the_exact_boundary(max_tokens: int) -> None:
    model, wl, st = llama(), Workload(max_tokens=max_tokens), settings(available=40 * GIB)
    limit = largest_fitting_inflight(model, wl, st)
    assert limit is not None
    assert limit.value is not None
    assert fits_at_mib(model, wl, st, limit.value)
    assert not fits_at_mib(model, wl, st, limit.value + 1)


@pytest.mark.parametrize("max_tokens", [256, 131072])
@pytest.mark.parametrize(
    "available",
    [4 * GIB, 40 * GIB, 40 * GIB + 1, 40 * GIB - 1, 82_463_372_083, 1 << 50, U64_MAX - 1, U64_MAX],
)
def test_the_inflight_search_ends_at_the_available_memory_with_the_same_answer(
    available: int, max_tokens: int
) -> None:
    # The search stops above the available memory instead of at 2^44 MiB: the answer
    # must be the whole range's, to the MiB, and "unbounded" only where it was.
    model, wl, st = llama(), Workload(max_tokens=max_tokens), settings(available=available)
    whole = largest_fitting(
        lambda mib: fits_at_mib(model, wl, st, mib), 0, MAX_ACCEPTED_INFLIGHT_MB
    )
    assert largest_fitting_inflight(model, wl, st) == whole


def test_inflight_is_not_counted_off_rocm() -> None:
    for backend in (Backend.CUDA, Backend.METAL, Backend.CPU):
        assert largest_fitting_inflight(llama(), Workload(), settings(backend)) is None


def test_inflight_none_when_it_does_not_fit_even_when_off() -> None:
    st = settings(available=4 * GIB)
    assert largest_fitting_inflight(llama(), Workload(), st) == FitLimit(None)


def test_inflight_unbounded_only_when_available_is_the_u64_ceiling() -> None:
    # The total saturates at U64_MAX, which fits an available of U64_MAX.
    limit = largest_fitting_inflight(llama(), Workload(), settings(available=U64_MAX))
    assert limit == FitLimit(MAX_ACCEPTED_INFLIGHT_MB, unbounded=True)


def test_largest_fitting_over_a_plain_predicate() -> None:
    assert largest_fitting(lambda x: x <= 37, 0, 100) == FitLimit(37)
    assert largest_fitting(lambda x: x <= 0, 0, 100) == FitLimit(0)
    assert largest_fitting(lambda x: x <= 99, 0, 100) == FitLimit(99)
    assert largest_fitting(lambda x: False, 0, 100) == FitLimit(None)
    assert largest_fitting(lambda x: True, 5, 100) == FitLimit(100, unbounded=True)
