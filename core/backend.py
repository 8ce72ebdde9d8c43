"""Which GPU backend the estimate is for (an explicit input; mlxcel decides at compile
time). Telling it from this machine's device nodes is a probe:
`core.probes.device_nodes.detect_backend`.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.kind import Kind


class Backend(Kind):
    """The backends mlxcel builds for."""

    ROCM = "rocm"
    CUDA = "cuda"
    METAL = "metal"
    CPU = "cpu"

    @property
    def label(self) -> str:
        """Display name."""
        return {"rocm": "ROCm", "cuda": "CUDA", "metal": "Metal", "cpu": "CPU"}[self.value]

    @property
    def has_inflight_reserve(self) -> bool:
        """Only ROCm builds reserve the in-flight budget."""
        return self is Backend.ROCM


BACKEND_CHOICES = ("auto", "rocm", "cuda", "metal", "cpu")


def backend_choice(text: str) -> Backend | None:
    """`--backend`'s word as its type: None for `auto` (the machine's, or a preset's,
    decides); ValueError for a word no backend has."""
    return None if text == BACKEND_CHOICES[0] else Backend.named(text, "--backend")


@dataclass(frozen=True)
class BackendChoice:
    """A backend and whether it was detected on this machine or chosen."""

    backend: Backend
    detected: bool
    reason: str
