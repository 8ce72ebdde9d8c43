"""Typed errors of a measurement run; the child turns each into a failure line."""

from __future__ import annotations

from core.measurement.result import FailureKind, MeasurementFailure


class MeasureError(Exception):
    """A run cannot go on; `kind` says why, the message says what, in one line."""

    kind = FailureKind.INTERNAL

    def failure(self) -> MeasurementFailure:
        """The typed outcome for the protocol."""
        return MeasurementFailure(self.kind, str(self))


class NoTorchError(MeasureError):
    """torch cannot be imported in the measuring interpreter."""

    kind = FailureKind.NO_TORCH


class NoMlxError(MeasureError):
    """mlx or mlx-lm cannot be imported in the measuring interpreter (`--engine mlx`)."""

    kind = FailureKind.NO_MLX


class EngineLoadError(MeasureError):
    """The engine's package is installed but failed to load (a broken build, a library
    that does not link)."""

    kind = FailureKind.ENGINE_FAILED_TO_LOAD


_MEMORY_WORDS = ("failed to map segment", "cannot allocate memory", "out of memory")
"""What the dynamic loader says when a library does not fit the address space."""


def import_failure(
    module: str, exc: BaseException, not_installed: type[MeasureError], hint: str
) -> MeasureError:
    """The one wording of an engine module that cannot be imported (`torch`, `mlx`):
    `not_installed` only when the module is not there; out of memory when loading it ran
    out; otherwise that it failed to load, and why. `hint` says how to install it."""
    import sys

    python = sys.executable
    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    missing = (
        isinstance(exc, ModuleNotFoundError)
        and (exc.name or "").split(".")[0] == (module.split(".")[0])
    )
    if missing:
        return not_installed(f"{module} cannot be imported by {python} ({why}); {hint}")
    if isinstance(exc, MemoryError) or any(w in why.lower() for w in _MEMORY_WORDS):
        return OutOfMemoryError(
            f"{module} is installed but failed to load in {python}: out of memory ({why}); "
            "raise the memory limit (ulimit -v) or free memory"
        )
    return EngineLoadError(f"{module} is installed but failed to load in {python} ({why})")


class NoDeviceError(MeasureError):
    """The device asked for is not there (or this torch build cannot reach it)."""

    kind = FailureKind.NO_DEVICE


class UnsupportedDeviceError(MeasureError):
    """This torch build has no kernels for the GPU's architecture."""

    kind = FailureKind.UNSUPPORTED_DEVICE


class UnsupportedModelError(MeasureError):
    """The estimate works for this model, the engine cannot run it."""

    kind = FailureKind.UNSUPPORTED_MODEL


class BadModelError(MeasureError):
    """The model's files are inconsistent (shapes, offsets, missing tensors)."""

    kind = FailureKind.BAD_MODEL


class OutOfMemoryError(MeasureError):
    """An allocation failed on the device or the host."""

    kind = FailureKind.OUT_OF_MEMORY
