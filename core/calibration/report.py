"""Calibrations in words and JSON: `vramscope calibrate`'s report and `inspect`'s line.

Every figure here is vramscope's and says so; mlxcel's banner is never touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.calibration.fit import Figures
from core.calibration.groups import GroupResult
from core.calibration.load_fit import LoadFit, terms_of_load
from core.calibration.record import Calibration, CalibrationOrigin
from core.display_text import clean_text
from core.estimate.estimate import MemoryEstimate
from core.units import format_bytes, format_bytes_short

if TYPE_CHECKING:
    from core.load.load import EngineLoad


def percent(x: float) -> str:
    """`+4.05%`."""
    return f"{100 * x:+.2f}%"


def runs(n: int) -> str:
    """`1 run`, `18 runs`."""
    return f"{n} run" if n == 1 else f"{n} runs"


def figures_words(f: Figures) -> str:
    """`18 of 18 covered; overshoot median +4.05%, worst +19.24%`."""
    words = (
        f"{f.covered} of {f.rows} covered; overshoot median {percent(f.median_overshoot)}, "
        f"worst {percent(f.worst_overshoot)}"
    )
    if f.covered < f.rows:  # how far under its peak the worst-covered run was
        words += f", least {percent(f.least_overshoot)}"
    return words


def _signed_bytes(b: int) -> str:
    return ("- " if b < 0 else "+ ") + format_bytes_short(abs(b))


def calibration_lines(cal: Calibration) -> list[str]:
    """The fit and its cross-validated figures, one figure per line."""
    cv = cal.cross_validated
    lines = [
        f"Calibrated (vramscope): {clean_text(cal.key.words)}, {runs(cal.runs)} of "
        f"{len(cal.models)} models",
        f"  Fitted to:     {cal.target_words}",
        f"  Form:          W + {cal.kv_factor} x KV + in-flight "
        f"{_signed_bytes(cal.fixed_bytes)} fixed ({cal.fixed_bytes} bytes), "
        f"then + {cal.margin_words}",
        f"  Training runs: {figures_words(cal.training)}",
    ]
    if cal.mlxcel is not None:
        lines.append(f"    mlxcel:      {figures_words(cal.mlxcel)}")
    if cv is None:
        lines.append(
            f"  Held out:      not cross-validated (runs of {len(cal.models)} models; "
            "leave-one-model-out needs 3)"
        )
    else:
        lines += [
            f"  Held out, leave-one-model-out ({cv.folds} folds):",
            f"    vramscope:   {figures_words(cv.vramscope)}",
            f"    mlxcel:      {figures_words(cv.mlxcel)}",
        ]
    return lines


def group_lines(result: GroupResult) -> list[str]:
    """A fitted group: the mlxcel-form fit, then the load's beside it (or why none)."""
    cal = result.calibration
    assert cal is not None
    lines = calibration_lines(cal)
    if cal.load is not None:
        lines += load_fit_lines(cal.load, f"{clean_text(cal.key.words)}, {cal.target_words}")
    elif result.load_refused is not None:
        lines.append(
            clean_text(f"Load calibrated (vramscope, mlx-lm load): no, {result.load_refused}")
        )
    return lines


def refused_line(result: GroupResult) -> str:
    """`Not calibrated: mlx on cpu AMD EPYC (4 runs): needs runs of at least 3 models, ...`."""
    return clean_text(f"Not calibrated: {result.key.words} ({runs(result.runs)}): {result.refused}")


def refused_json(result: GroupResult) -> dict[str, Any]:
    """One refused group in `calibrate --json`."""
    key = result.key
    return {
        "engine": key.engine.value if key.engine is not None else None,
        "backend": key.backend.value,
        "device": key.device,
        "measured_on": key.device_kind.value,
        "runs": result.runs,
        "reason": result.refused,
    }


def calibrated_total(cal: Calibration, est: MemoryEstimate) -> int:
    """vramscope's calibrated total for the estimate's workload."""
    return cal.total_bytes(est.weights_bytes, est.kv_bytes, est.backend_inflight_bytes)


def held_out_words(cal: Calibration) -> str:
    """`held-out runs 18 of 18 covered, median overshoot +4.05%`, or that there are none."""
    cv = cal.cross_validated
    if cv is None:
        return f"not cross-validated: runs of {len(cal.models)} models"
    return (
        f"held-out runs {cv.vramscope.covered} of {cv.vramscope.rows} covered, "
        f"median overshoot {percent(cv.vramscope.median_overshoot)}"
    )


def calibrated_line(cal: Calibration, est: MemoryEstimate) -> str:
    """`Calibrated (vramscope, 18 runs on gfx1151): 5.83 GiB (...)  (builtin; held out: ...)`."""
    total = calibrated_total(cal, est)
    verdict = "fits" if total <= est.available_bytes else "does not fit"
    return clean_text(
        f"  Calibrated (vramscope, {cal.runs} runs on {cal.device_words}): "
        f"{format_bytes(total)}, {verdict}  ({_origin_words(cal)}; fitted to "
        f"{cal.target_words}; {held_out_words(cal)})"
    )


def calibrated_load_total(fit: LoadFit, load: EngineLoad) -> int:
    """vramscope's load calibrated: W + KV + in-flight + ceil(transient x scale) + fixed."""
    return fit.total_bytes(terms_of_load("", load, 0))


def load_held_out_words(fit: LoadFit) -> str:
    """`held-out runs 6 of 6 covered, median overshoot +4.05%`, or that there are none."""
    if fit.held_out is None:
        return f"not cross-validated: runs of {len(fit.models)} models"
    return (
        f"held-out runs {fit.held_out.covered} of {fit.held_out.rows} covered, "
        f"median overshoot {percent(fit.held_out.median_overshoot)}"
    )


def load_fit_words(fit: LoadFit) -> str:
    """`0.50 x transient + 459.1 MiB fixed`: what the load calibrated adds to the load."""
    return f"{fit.scale_percent / 100:.2f} x transient {_signed_bytes(fit.fixed_bytes)} fixed"


def calibrated_load_line(cal: Calibration, load: EngineLoad, available: int) -> str:
    """`Load calibrated (vramscope, 6 runs on cpu ...): 1.2 GiB, fits  (...)`: the load's
    total with the calibration's transient scale and fixed part (`cal.load`)."""
    fit = cal.load
    assert fit is not None
    total = calibrated_load_total(fit, load)
    verdict = "fits" if total <= available else "does not fit"
    return clean_text(
        f"  Load calibrated (vramscope, {fit.runs} runs on {cal.device_words}): "
        f"{format_bytes(total)}, {verdict}  (mlx-lm load {format_bytes(load.total_bytes)} "
        f"with {load_fit_words(fit)}; {_origin_words(cal)}; fitted to {cal.target_words}; "
        f"{load_held_out_words(fit)})"
    )


def calibrated_load_json(cal: Calibration, load: EngineLoad, available: int) -> dict[str, Any]:
    """The `calibrated_load` object of `inspect --json`: the total and the fit it used."""
    fit = cal.load
    assert fit is not None
    total = calibrated_load_total(fit, load)
    return {
        "total_bytes": total,
        "fits": total <= available,
        "load_bytes": load.total_bytes,
        "calibration": cal.to_dict()["load"],
    }


def no_calibration_line(reason: str) -> str:
    """The one line when nothing calibrates this estimate, with the reason
    (`core.calibration.select.CalibrationChoice.reason`)."""
    return clean_text(
        f"  Calibrated (vramscope): {reason}; "
        "mlxcel's estimate only (vramscope calibrate fits one from measured runs)"
    )


def _origin_words(cal: Calibration) -> str:
    if cal.origin is CalibrationOrigin.BUILTIN:
        return "built-in, mlxcel's published peaks"
    if cal.origin is CalibrationOrigin.USER:
        return "your calibration" + (f" of {cal.fitted_at}" if cal.fitted_at else "")
    return f"from {cal.origin_word}"


def calibrated_json(cal: Calibration, est: MemoryEstimate) -> dict[str, Any]:
    """The `calibrated` object of `inspect --json`."""
    total = calibrated_total(cal, est)
    d = cal.to_dict()
    return {
        "total_bytes": total,
        "fits": total <= est.available_bytes,
        "runs": cal.runs,
        "models": list(cal.models),
        "device": cal.device,
        "engine": d["engine"],
        "backend": d["backend"],
        "measured_on": d["measured_on"],
        "covered_runs": cal.covered_runs,
        "target": cal.target,
        "figure": d["figure"],
        "origin": cal.origin_word,
        "form": d["form"],
        "cross_validated": d["cross_validated"],
    }


def calibration_words(cal: Calibration) -> str:
    """`vramscope, 18 runs on gfx1151, fitted to MLX's peak (...), built-in, ...`."""
    return clean_text(
        f"vramscope, {cal.runs} runs on {cal.device_words}, fitted to {cal.target_words}, "
        f"{_origin_words(cal)}"
    )


def calibration_json(cal: Calibration) -> dict[str, Any]:
    """Which calibration, for a JSON document whose rows carry calibrated totals."""
    d = cal.to_dict()
    return {
        "backend": d["backend"],
        "engine": d["engine"],
        "device": cal.device,
        "measured_on": d["measured_on"],
        "target": cal.target,
        "figure": d["figure"],
        "origin": cal.origin_word,
        "runs": cal.runs,
        "models": list(cal.models),
        "fixed_bytes": cal.fixed_bytes,
        "fitted_at": cal.fitted_at,
    }


def load_fit_lines(fit: LoadFit, title: str) -> list[str]:
    """vramscope's load calibrated (`core.calibration.load_fit`) beside mlxcel's estimate
    on the same peaks, one figure per line."""
    lines = [
        f"Load calibrated (vramscope, mlx-lm load): {title}, {len(fit.models)} models",
        f"  Form:          W + KV + in-flight + {fit.scale_percent / 100:.2f} x transient "
        f"{_signed_bytes(fit.fixed_bytes)} fixed ({fit.fixed_bytes} bytes)",
        f"  Load as is:    {figures_words(fit.uncalibrated)}",
        f"  Training runs: {figures_words(fit.training)}",
    ]
    if fit.held_out is None:
        lines.append("  Held out:      not cross-validated (leave-one-model-out needs 3 models)")
    else:
        lines.append(f"  Held out, leave-one-model-out ({len(fit.models)} folds):")
        lines.append(f"    vramscope:   {figures_words(fit.held_out)}")
    lines.append(f"    mlxcel:      {figures_words(fit.mlxcel)}")
    return lines
