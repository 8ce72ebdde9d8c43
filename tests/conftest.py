"""Shared test setup: a clean estimator environment for every test."""

from __future__ import annotations

import pytest

ESTIMATOR_ENV = (
    "MLXCEL_HEADROOM_FACTOR",
    "MLXCEL_ACTIVATION_MULT",
    "MLXCEL_MEMORY_LIMIT",
    "MLX_ROCM_MAX_INFLIGHT_MB",
    "VRAMSCOPE_MODELS_DIR",
    "NO_COLOR",
)


@pytest.fixture(autouse=True)
def _clean_estimator_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """mlxcel's tests clear these too: the estimate must not depend on the caller's shell."""
    for name in ESTIMATOR_ENV:
        monkeypatch.delenv(name, raising=False)
