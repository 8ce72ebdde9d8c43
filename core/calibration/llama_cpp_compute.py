"""`calibrate --engine llama.cpp`: llama.cpp's compute buffer against vramscope's (#40).

llama.cpp's compute buffer has no closed form (`graph_reserve` at `n_ubatch`), so
vramscope's is fitted per architecture to llama.cpp's own dry runs
(`core.load.llama_cpp_compute`). A `vramscope run` of a llama.cpp command records both
figures for the same flags (`ExternalFields.llama_cpp_buffers`, with the architecture
and flash attention). This fits, per architecture and flash attention, the one factor
that carries vramscope's compute term onto llama.cpp's over those runs (least squares
through the origin: `sum(l * v) / sum(v * v)`), and holds it out: each run is predicted
by the factor fitted on the group's other runs. Reported, not saved or applied: the
load's compute term stays the one fitted to llama.cpp's dry runs, and a factor from a
few runs of one machine says how far that is from this machine's llama.cpp.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.load.llama_cpp_log import LlamaCppBufferKind
from core.measurement.fields import ExternalFields
from core.measurement.result import MeasuredPeak

HELD_OUT_BOUND = 0.10
"""A held-out prediction within this fraction of llama.cpp's figure is covered (the
issue's bound for the compute term)."""


@dataclass(frozen=True)
class ComputeRun:
    """One llama.cpp run's compute buffers: llama.cpp's and vramscope's, every place summed."""

    arch: str
    flash_attn: bool
    llama_cpp_bytes: int
    vramscope_bytes: int
    where: str
    """`history:N` (the record's line)."""


def compute_runs(
    peaks: Iterable[MeasuredPeak], *, include_failed: bool = False
) -> tuple[list[ComputeRun], int]:
    """The history's llama.cpp runs with both compute figures, and how many llama.cpp
    runs were left out (a failed run unless `include_failed`, no log read, no
    architecture recorded)."""
    out: list[ComputeRun] = []
    left_out = 0
    for n, peak in enumerate(peaks, start=1):
        fields = peak.fields
        if not isinstance(fields, ExternalFields) or fields.llama_cpp_buffers is None:
            continue
        compute = [b for b in fields.llama_cpp_buffers if b.kind is LlamaCppBufferKind.COMPUTE]
        theirs = [b.llama_cpp_bytes for b in compute]
        ours = sum(b.vramscope_bytes for b in compute)
        arch, flash = fields.llama_cpp_arch, fields.llama_cpp_flash_attn
        read = bool(theirs) and all(t is not None and t > 0 for t in theirs) and ours > 0
        if arch is None or flash is None or not read or not (include_failed or fields.completed):
            left_out += 1
            continue
        out.append(
            ComputeRun(
                arch,
                flash,
                sum(t or 0 for t in theirs),
                ours,
                f"history:{n}",
            )
        )
    return out, left_out


def _factor(runs: Sequence[ComputeRun]) -> float:
    num = sum(r.llama_cpp_bytes * r.vramscope_bytes for r in runs)
    den = sum(r.vramscope_bytes * r.vramscope_bytes for r in runs)
    return num / den


@dataclass(frozen=True)
class ComputeFactor:
    """The factor fitted for one architecture with flash attention on or off."""

    arch: str
    flash_attn: bool
    runs: tuple[ComputeRun, ...]
    factor: float
    """llama.cpp's compute over vramscope's, fitted on every run of the group."""
    as_is: tuple[float, ...]
    """Per run: vramscope's compute against llama.cpp's (`v / l - 1`), uncorrected."""
    held_out: tuple[float, ...] | None
    """Per run: the factor fitted on the others times vramscope's, against llama.cpp's;
    None with one run (nothing to hold it against)."""

    @property
    def covered(self) -> int | None:
        """Held-out predictions within `HELD_OUT_BOUND` (None: not held out)."""
        if self.held_out is None:
            return None
        return sum(abs(e) <= HELD_OUT_BOUND for e in self.held_out)

    def to_dict(self) -> dict[str, object]:
        return {
            "architecture": self.arch,
            "flash_attn": self.flash_attn,
            "runs": [r.where for r in self.runs],
            "factor": round(self.factor, 6),
            "as_is_errors": [round(e, 6) for e in self.as_is],
            "held_out_errors": (
                [round(e, 6) for e in self.held_out] if self.held_out is not None else None
            ),
            "held_out_covered": self.covered,
            "held_out_bound": HELD_OUT_BOUND,
        }


def fit_compute(runs: Sequence[ComputeRun]) -> list[ComputeFactor]:
    """One factor per (architecture, flash attention), in name order."""
    groups: dict[tuple[str, bool], list[ComputeRun]] = {}
    for r in runs:
        groups.setdefault((r.arch, r.flash_attn), []).append(r)
    out = []
    for (arch, flash), group in sorted(groups.items()):
        held: tuple[float, ...] | None = None
        if len(group) > 1:
            held = tuple(
                _factor([o for j, o in enumerate(group) if j != i])
                * r.vramscope_bytes
                / r.llama_cpp_bytes
                - 1
                for i, r in enumerate(group)
            )
        out.append(
            ComputeFactor(
                arch,
                flash,
                tuple(group),
                _factor(group),
                tuple(r.vramscope_bytes / r.llama_cpp_bytes - 1 for r in group),
                held,
            )
        )
    return out


def _span(errors: Sequence[float]) -> str:
    lo, hi = min(errors), max(errors)
    return f"{lo:+.1%}" if lo == hi else f"{lo:+.1%} to {hi:+.1%}"


def factor_lines(fit: ComputeFactor) -> list[str]:
    """The fit in words: the factor, vramscope's figure as is, and held out."""
    fa = "on" if fit.flash_attn else "off"
    n = len(fit.runs)
    lines = [
        f"llama.cpp compute, {fit.arch}, flash attention {fa}: {n} run(s); llama.cpp's "
        f"compute buffer / vramscope's fitted = {fit.factor:.4f}",
        f"  vramscope's compute term as is: {_span(fit.as_is)} against llama.cpp's",
    ]
    if fit.held_out is None:
        lines.append("  not held out: one run (each run needs the group's others to predict it)")
    else:
        lines.append(
            f"  held out (each run predicted from the other {n - 1}): {_span(fit.held_out)}; "
            f"{fit.covered} of {n} within {HELD_OUT_BOUND:.0%}"
        )
    return lines
