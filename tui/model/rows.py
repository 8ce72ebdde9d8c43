"""The breakdown as rows of data: the banner's terms, values and notes, nothing rendered.

Labels, byte values and notes are the ones `core.estimate.report.format_estimate` prints,
so a row can be checked against `vramscope inspect` line by line: the allocator
row shows `runtime_headroom - A - I` as the banner does, and the in-flight row
exists only when the term is non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.answer.solve import FitLimit
from core.answer.verdict import Scope, Verdict
from core.estimate.available import AvailableMemory
from core.estimate.estimate import MemoryEstimate
from core.kind import Kind
from core.load.load import EngineLoad, TermKind
from core.units import format_bytes_short

if TYPE_CHECKING:
    from core.answer.calibrated import CalibratedAnswer

INFLIGHT_OFF_HINT = "off: unbounded in-flight set, not modelled"


class RowKey(Kind):
    """Which line of the breakdown a row is (its value names its style:
    `breakdown--weights`, ...)."""

    WEIGHTS = "weights"
    KV = "kv"
    ACTIVATION = "activation"
    OVERHEAD = "overhead"
    INFLIGHT = "inflight"
    TOTAL = "total"
    AVAILABLE = "available"


@dataclass(frozen=True)
class BreakdownRow:
    """One term of the estimate."""

    key: RowKey
    label: str
    bytes: int
    note: str
    subnote: str = ""
    """A second note line (the KV per-token figure)."""


@dataclass(frozen=True)
class EstimateView:
    """Everything the breakdown shows for one estimate."""

    rows: tuple[BreakdownRow, ...]
    verdict: Verdict
    """The answer's verdict (`Answer.verdict`: one device, mlxcel's)."""
    context_limit: str
    inflight_limit: str
    warnings: tuple[str, ...] = ()
    sizing: str = ""
    """What mlxcel would size from this estimate (`tui.model.sizing.sizing_line`)."""
    calibrated: CalibratedAnswer | None = None
    """vramscope's calibrated total and verdict, when a calibration applies (the answer's)."""
    calibration_note: str = ""
    """Why no calibration applies to this device, when there were some to choose from."""
    held_against_calibrated: bool = False
    """The verdict shown (colour, summary) is the calibrated one (`v`); mlxcel's otherwise."""
    load: LoadColumn | None = None
    """vramscope's load for the engine, beside mlxcel's rows (None: no load for this
    model or question)."""

    @property
    def calibrated_basis(self) -> bool:
        """True when the verdict on show is vramscope's calibrated one."""
        return self.held_against_calibrated and self.calibrated is not None


TERM_KEYS = (RowKey.WEIGHTS, RowKey.KV, RowKey.ACTIVATION, RowKey.OVERHEAD, RowKey.INFLIGHT)
"""The rows that are terms of the total (a bar each, a part of the total's bar)."""


def breakdown_rows(est: MemoryEstimate, available: AvailableMemory) -> list[BreakdownRow]:
    """The banner's terms in order, then the total and the available memory."""
    wl = est.workload
    per_token = ""
    if est.kv.available and est.kv.per_token_bytes > 0:
        b = est.kv.per_token_bytes
        per_token = f"{format_bytes_short(b)} ({b:,} bytes) per token at steady state, same dtype"
    rows = [
        BreakdownRow(RowKey.WEIGHTS, "Weights", est.weights_bytes, est.weights_source.text_label),
        BreakdownRow(RowKey.KV, "KV cache", est.kv.bytes, est.kv.detail, per_token),
        BreakdownRow(
            RowKey.ACTIVATION,
            "Activation",
            est.activation_bytes,
            f"batch {wl.batch} × ≤512 prefill tokens × (hidden+intermediate) + logits",
        ),
        BreakdownRow(
            RowKey.OVERHEAD,
            "Allocator ovhd",
            est.shown_overhead_bytes,
            f"factor {est.headroom_factor:.2f}x on weights+kv",
        ),
    ]
    if est.backend_inflight_bytes > 0:
        rows.append(
            BreakdownRow(
                RowKey.INFLIGHT,
                "Backend in-flight",
                est.backend_inflight_bytes,
                "MLX_ROCM_MAX_INFLIGHT_MB",
            )
        )
    rows.append(BreakdownRow(RowKey.TOTAL, "Total estimate", est.total_bytes, ""))
    rows.append(BreakdownRow(RowKey.AVAILABLE, "Available", est.available_bytes, available.source))
    return rows


def inflight_limit_text(limit: FitLimit | None, backend_label: str) -> str:
    """`Largest in-flight budget that fits` in words."""
    if limit is None:
        return f"n/a ({backend_label} builds reserve none)"
    if limit.value is None:
        return "none: it does not fit even with the bound off (0)"
    if limit.unbounded:
        return f"any (up to {limit.value:,} MiB)"
    return f"{limit.value:,} MiB"


# Which of the load's terms each of mlxcel's rows stands beside. mlxcel's allocator
# overhead has no counterpart: the load counts what the engine allocates, no factor.
LOAD_TERMS_BY_ROW: dict[RowKey, tuple[TermKind, ...]] = {
    RowKey.WEIGHTS: (TermKind.WEIGHTS, TermKind.PROJECTOR),
    RowKey.KV: (TermKind.KV,),
    RowKey.ACTIVATION: (TermKind.TRANSIENT, TermKind.COMPUTE, TermKind.OUTPUT),
    RowKey.OVERHEAD: (),
    RowKey.INFLIGHT: (TermKind.INFLIGHT,),
}


@dataclass(frozen=True)
class LoadCell:
    """The load's figure on one of mlxcel's rows: its bytes and its terms' words."""

    bytes: int | None
    """None where the load has no such term (mlxcel's allocator overhead)."""
    detail: str = ""


@dataclass(frozen=True)
class LoadColumn:
    """vramscope's load (one engine's, term by term) beside mlxcel's breakdown, and its
    own verdict against the same available memory."""

    load: EngineLoad
    available: int
    mlxcel_fits: bool
    """mlxcel's verdict, to say when the two disagree."""

    @property
    def heading(self) -> str:
        """`mlx-lm load`: whose column it is."""
        return f"{self.load.engine.label} load"

    def cell(self, key: RowKey) -> LoadCell:
        """The load's figure on mlxcel's row `key` (`total`: what the device holds;
        `available`: the same memory mlxcel's is held against)."""
        if key is RowKey.TOTAL:
            return LoadCell(self.load.device_bytes, self._total_detail())
        if key is RowKey.AVAILABLE:
            return LoadCell(self.available)
        kinds = LOAD_TERMS_BY_ROW.get(key, ())
        terms = [t for t in self.load.terms if t.kind in kinds]
        if not terms:
            return LoadCell(0 if kinds else None)
        detail = "; ".join(t.detail for t in terms if t.detail)
        return LoadCell(sum(t.bytes for t in terms), detail)

    def _total_detail(self) -> str:
        host = self.load.total_bytes - self.load.device_bytes
        return f"the host holds {format_bytes_short(host)} more" if host > 0 else ""

    @property
    def fits(self) -> bool:
        """The load fits the available memory."""
        return self.load.device_bytes <= self.available

    @property
    def verdict(self) -> Verdict:
        """FITS with what is left, or DOES NOT FIT with the bytes over."""
        return Verdict.of_total(self.load.device_bytes, self.available, Scope.LOAD)

    @property
    def disagrees(self) -> bool:
        """The load and mlxcel's estimate give different verdicts."""
        return self.fits != self.mlxcel_fits

    @property
    def disagreement(self) -> str:
        """Why the two verdicts differ, in words ("" when they agree)."""
        engine = self.load.engine.label
        if not self.disagrees:
            return ""
        if self.fits:  # the advice's words (`core.answer.advice`) for mlx-lm's load
            return f"mlxcel's preflight would refuse this; {engine} loads it"
        return f"mlxcel's estimate fits, but {engine} would hold more than is available"
