"""Reading the variables vramscope honours, once, into plain values.

A variable whose bytes are not valid UTF-8 counts as unset, as Rust's
`std::env::var` treats it. Everything downstream takes these values as
arguments, so the estimate itself never reads the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from core.backend import Backend
from core.device.available import read_available_memory
from core.estimate.activation import ACTIVATION_MULT_ENV, resolve_activation_mult
from core.estimate.available import MEMORY_LIMIT_ENV, AvailableMemory
from core.estimate.estimate import EstimateSettings
from core.estimate.headroom import HEADROOM_FACTOR_ENV, resolve_headroom_factor
from core.estimate.inflight import (
    ROCM_MAX_INFLIGHT_ENV,
    InflightBudget,
    InflightOrigin,
    resolve_inflight_budget,
)

ENV_NAMES = (HEADROOM_FACTOR_ENV, ACTIVATION_MULT_ENV, MEMORY_LIMIT_ENV, ROCM_MAX_INFLIGHT_ENV)


def read_env(
    names: tuple[str, ...] = ENV_NAMES, environb: Mapping[bytes, bytes] | None = None
) -> dict[str, str | None]:
    """Each variable as text, or None when unset or not valid UTF-8."""
    source = os.environb if environb is None else environb
    values: dict[str, str | None] = {}
    for name in names:
        raw = source.get(name.encode())
        try:
            values[name] = raw.decode("utf-8") if raw is not None else None
        except UnicodeDecodeError:
            values[name] = None
    return values


@dataclass(frozen=True)
class ResolvedSettings:
    """Settings for the estimate plus the warning lines their fallbacks produced."""

    settings: EstimateSettings
    inflight: InflightBudget
    warnings: tuple[str, ...]


def resolve_settings(
    backend: Backend,
    env: Mapping[str, str | None],
    *,
    inflight_flag: str | None = None,
    memory_limit: int | None = None,
    available: AvailableMemory | None = None,
) -> ResolvedSettings:
    """Combine flags and environment: a flag beats its variable, invalid values fall back."""
    warnings: list[str] = []
    factor = resolve_headroom_factor(env.get(HEADROOM_FACTOR_ENV))
    mult = resolve_activation_mult(env.get(ACTIVATION_MULT_ENV))
    if inflight_flag is not None:
        inflight = resolve_inflight_budget(inflight_flag, InflightOrigin.FLAG)
    else:
        inflight = resolve_inflight_budget(env.get(ROCM_MAX_INFLIGHT_ENV))
    if available is None:
        available = read_available_memory(
            backend, cli_limit=memory_limit, env_limit=env.get(MEMORY_LIMIT_ENV)
        )
    for note in (factor.warning, mult.warning, available.warning):
        if note:
            warnings.append(note)
    if available.unread_line is not None:
        warnings.append(available.unread_line)
    # The overlay only reads the variable on ROCm; elsewhere a bad value is harmless.
    if backend.has_inflight_reserve and inflight.warning():
        warnings.append(inflight.warning() or "")
    settings = EstimateSettings(
        backend=backend,
        available=available,
        headroom_factor=factor.value,
        activation_mult=mult.value,
        inflight_mib=inflight.mib,
    )
    return ResolvedSettings(settings, inflight, tuple(warnings))
