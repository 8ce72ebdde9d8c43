"""One memory pool as a probe reads it: what it holds and what is in use."""

from __future__ import annotations

from dataclasses import dataclass

from core.units import sat_sub


@dataclass(frozen=True)
class PoolReading:
    """One memory pool: what it holds and what is in use."""

    total: int
    used: int

    @property
    def free(self) -> int:
        """Total less used (0 when used reads above total)."""
        return sat_sub(self.total, self.used)
