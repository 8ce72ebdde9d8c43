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
    """The engine's runtime is installed but its import raised (a broken build, a missing
    shared library, an address-space limit too small to map it)."""

    kind = FailureKind.ENGINE_FAILED_TO_LOAD


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
