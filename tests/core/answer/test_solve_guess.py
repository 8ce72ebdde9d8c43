"""The guessing searches give the bisection's answer, to the token and to the MiB."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.answer.solve import (
    largest_context,
    largest_fitting,
    largest_fitting_context,
    largest_fitting_inflight,
)
from core.backend import Backend
from core.catalog.profiles import list_profile_ids, load_profile, profile_snapshot
from core.environment import read_env, resolve_settings
from core.estimate.estimate import Workload, estimate
from core.estimate.inflight import MAX_ACCEPTED_INFLIGHT_MB
from core.units import GIB


@pytest.mark.parametrize("budget", [GIB, 8 * GIB, 24_000_000_123, 80 * GIB, 192 * GIB, 4096 * GIB])
@pytest.mark.parametrize("backend", [Backend.ROCM, Backend.CPU])
def test_same_answer_as_the_bisection(budget: int, backend: Backend) -> None:
    settings = resolve_settings(backend, read_env(), memory_limit=budget).settings
    for workload in (Workload(), Workload(batch=3, kv_int8=True)):
        for repo_id in list_profile_ids():
            snap = profile_snapshot(load_profile(repo_id))
            expected = largest_fitting_context(snap, workload, settings)
            assert largest_context(snap, workload, settings) == expected, repo_id


@pytest.mark.parametrize("budget", [GIB, 8 * GIB, 24_000_000_123, 80 * GIB, 192 * GIB, 1 << 62])
def test_the_inflight_guess_gives_the_bisection_s_answer(budget: int) -> None:
    settings = resolve_settings(Backend.ROCM, read_env(), memory_limit=budget).settings
    for workload in (Workload(), Workload(max_tokens=131072, batch=3, kv_int8=True)):
        for repo_id in list_profile_ids():
            snap = profile_snapshot(load_profile(repo_id))

            def fits(mib: int) -> bool:
                at = replace(settings, inflight_mib=mib)
                return estimate(snap, workload, at).fits  # noqa: B023

            expected = largest_fitting(fits, 0, MAX_ACCEPTED_INFLIGHT_MB)
            assert largest_fitting_inflight(snap, workload, settings) == expected, repo_id


def test_the_last_answer_is_reused_only_for_another_context() -> None:
    # The explorer asks about the same model object key after key: a token key reuses
    # the last search; any other input searches again, and gives the bisection's answer.
    snap = profile_snapshot(load_profile("meta-llama/Llama-3.1-8B-Instruct"))
    rocm = resolve_settings(Backend.ROCM, read_env(), memory_limit=24 * GIB).settings
    wider = resolve_settings(Backend.ROCM, read_env(), memory_limit=48 * GIB).settings
    asked = [
        (Workload(max_tokens=8192), rocm),
        (Workload(max_tokens=16384), rocm),  # another context: the same answer
        (Workload(max_tokens=16384, batch=4), rocm),
        (Workload(max_tokens=16384, batch=4, kv_int8=True), rocm),
        (Workload(max_tokens=16384, batch=4, kv_int8=True), wider),
        (Workload(max_tokens=8192), rocm),
    ]
    found = [largest_context(snap, w, s) for w, s in asked]
    assert found == [largest_fitting_context(snap, w, s) for w, s in asked]
    assert found[0] == found[1] == found[5]
    assert len({f.value for f in found[1:5]}) == 4  # each other input moved the answer
