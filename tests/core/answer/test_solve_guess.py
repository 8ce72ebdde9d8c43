"""The guessing search gives the bisection's answer, to the token."""

from __future__ import annotations

import pytest

from core.answer.solve import largest_context, largest_fitting_context
from core.backend import Backend
from core.catalog.profiles import list_profile_ids, load_profile, profile_snapshot
from core.environment import read_env, resolve_settings
from core.estimate.estimate import Workload
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
