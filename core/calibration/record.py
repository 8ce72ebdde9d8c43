"""A saved calibration: its key, its fitted part, its figures, and a checked JSON form."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from core.backend import Backend
from core.calibration.fit import (
    KV_FACTOR,
    MARGIN_BASIS_POINTS,
    CrossValidation,
    Figures,
    Fit,
    predict,
)
from core.calibration.key import CalibrationKey
from core.calibration.load_fit import LoadFit
from core.calibration.targets import DEFAULT_TARGET, TARGET_NAMES, target_named, target_words
from core.kind import Kind
from core.measurement.engine import ENGINE_NAMES, Engine

MARGIN_CHOSEN = "leave-one-model-out"
"""The form's `margin` when it was chosen from the held-out misses (`fit.chosen_margin`)."""
MARGIN_STATED = "stated"
"""The form's `margin` of calibrations saved before it was chosen: a stated 1%."""


class CalibrationOrigin(Kind):
    """Where a calibration came from; the word is what JSON says (a file's path for
    `FILE`)."""

    BUILTIN = "builtin"
    USER = "user"
    FILE = "file"


@dataclass(frozen=True)
class Calibration:
    """vramscope's calibrated estimate for one (engine, backend, device)."""

    backend: Backend
    """The formula whose terms it calibrates: estimates for this backend."""
    engine: Engine | None
    """None: fitted on runs of any engine (or none named) on the backend."""
    device: str | None
    """None: fitted on runs of any device (or none named) on the backend."""
    fixed_bytes: int
    runs: int
    models: tuple[str, ...]
    covered_runs: int
    training: Figures
    cross_validated: CrossValidation | None
    """None: fitted on runs of 2 models, which cannot be cross-validated."""
    target: str = DEFAULT_TARGET
    origin: CalibrationOrigin = CalibrationOrigin.USER
    """Built in, the user's own (the latest `vramscope calibrate`) or a file named with
    `--calibration`."""
    origin_file: str | None = None
    """The file it was read from, for `CalibrationOrigin.FILE`."""
    fitted_at: str = ""
    kv_factor: int = KV_FACTOR
    margin_basis_points: int = MARGIN_BASIS_POINTS
    margin_chosen: bool = False
    """True: the margin is the largest leave-one-model-out miss (at least 1%); False: a
    stated 1% (calibrations saved before it was chosen)."""
    mlxcel: Figures | None = None
    """mlxcel's estimate on the training runs (None in calibrations saved before)."""
    measured_on: Backend | None = None
    """The kind of device the runs ran on, where it is not `backend`."""
    load: LoadFit | None = None
    """vramscope's mlx-lm load calibrated on the same runs (`core.calibration.load_fit`);
    None in calibrations saved before, or where a run's model had no load."""

    @classmethod
    def from_fit(
        cls,
        fit: Fit,
        *,
        backend: Backend,
        engine: Engine | None,
        device: str | None,
        measured_on: Backend | None = None,
        origin: CalibrationOrigin = CalibrationOrigin.USER,
        fitted_at: str = "",
        target: str = DEFAULT_TARGET,
        load: LoadFit | None = None,
    ) -> Calibration:
        """The calibration of a fit (and the load's, when fitted), for the key its rows
        share."""
        return cls(
            backend=backend,
            engine=engine,
            device=device,
            fixed_bytes=fit.fixed_bytes,
            runs=fit.runs,
            models=fit.models,
            covered_runs=fit.training.covered,
            training=fit.training,
            cross_validated=fit.cross_validated,
            target=target,
            origin=origin,
            fitted_at=fitted_at,
            margin_basis_points=fit.margin_basis_points,
            margin_chosen=True,
            mlxcel=fit.training_mlxcel,
            measured_on=measured_on if measured_on is not backend else None,
            load=load,
        )

    @property
    def origin_word(self) -> str:
        """`builtin`, `user` or the file's path: JSON's `origin`, as it always read."""
        if self.origin is CalibrationOrigin.FILE and self.origin_file:
            return self.origin_file
        return self.origin.value

    @property
    def key(self) -> CalibrationKey:
        """What it is for: (engine, backend, device, the kind of device measured on)."""
        return CalibrationKey(self.engine, self.backend, self.device, self.measured_on)

    @property
    def device_kind(self) -> Backend:
        """The kind of device its runs ran on."""
        return self.measured_on or self.backend

    def total_bytes(self, weights: int, kv: int, inflight: int) -> int:
        """The calibrated total for a workload whose mlxcel terms are given."""
        return predict(weights, kv, inflight, self.fixed_bytes, self.margin_basis_points)

    @property
    def target_words(self) -> str:
        """What the calibration fitted, in words: the figure its engine recorded on its
        device ("the torch engine's peak resident memory (RSS) over its baseline")."""
        return target_words(self.target, self.engine, self.device_kind)

    @property
    def device_words(self) -> str:
        """`gfx1151`, or the backend when the calibration covers every device."""
        return self.device if self.device else f"any {self.backend.value} device"

    @property
    def margin_words(self) -> str:
        """`3.41% margin (the largest miss of a model held out)`: a model's runs predicted
        by the fixed part of a fit on the other models; `1% margin (stated)`."""
        pct = f"{self.margin_basis_points / 100:g}%"
        if not self.margin_chosen:
            return f"{pct} margin (stated)"
        if self.margin_basis_points <= MARGIN_BASIS_POINTS:
            return f"{pct} margin (the least; no model held out missed by more)"
        return f"{pct} margin (the largest miss of a model held out)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the store's and `--json`'s): kinds as their names."""
        cv = self.cross_validated
        return {
            "backend": self.backend.value,
            "engine": self.engine.value if self.engine is not None else None,
            "device": self.device,
            "measured_on": self.device_kind.value,
            "target": self.target,
            "figure": self.target_words,
            "form": {
                "weights_factor": 1,
                "kv_factor": self.kv_factor,
                "inflight_factor": 1,
                "fixed_bytes": self.fixed_bytes,
                "margin_basis_points": self.margin_basis_points,
                "margin": MARGIN_CHOSEN if self.margin_chosen else MARGIN_STATED,
            },
            "runs": self.runs,
            "models": list(self.models),
            "covered_runs": self.covered_runs,
            "training": _figures_dict(self.training),
            "mlxcel": _figures_dict(self.mlxcel) if self.mlxcel is not None else None,
            "cross_validated": (
                {
                    "method": "leave-one-model-out",
                    "folds": cv.folds,
                    "vramscope": _figures_dict(cv.vramscope),
                    "mlxcel": _figures_dict(cv.mlxcel),
                }
                if cv is not None
                else None
            ),
            "load": _load_dict(self.load) if self.load is not None else None,
            "origin": self.origin_word,
            "fitted_at": self.fitted_at,
        }

    def checked(self) -> Calibration:
        """This calibration as the reader reads it back (ValueError naming the field the
        reader would refuse): the one validator, shared by the store's reader and writer."""
        return Calibration.from_dict(self.to_dict(), self.origin, self.origin_file)

    @classmethod
    def from_dict(
        cls, data: Any, origin: CalibrationOrigin, origin_file: str | None = None
    ) -> Calibration:
        """A checked calibration from untrusted JSON (any version's); ValueError naming
        the bad field."""
        d = _obj(data, "calibration")
        form = _obj(d.get("form"), "form")
        if form.get("weights_factor") != 1 or form.get("inflight_factor") != 1:
            raise ValueError("form: only weights_factor 1 and inflight_factor 1 are known")
        models = d.get("models")
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise ValueError("models: expected a list of names")
        backend = _backend(d.get("backend"), "backend")
        measured = d.get("measured_on")
        measured_on = _backend(measured, "measured_on") if measured is not None else None
        margin = form.get("margin", MARGIN_STATED)
        if margin not in (MARGIN_CHOSEN, MARGIN_STATED):
            raise ValueError(f"form.margin: expected {MARGIN_CHOSEN} or {MARGIN_STATED}")
        mlxcel = d.get("mlxcel")
        target = d.get("target", DEFAULT_TARGET)
        if target not in TARGET_NAMES:
            raise ValueError(f"target: expected one of {', '.join(TARGET_NAMES)}")
        return cls(
            backend=backend,
            engine=_engine(d.get("engine")),
            device=_opt_str(d.get("device"), "device"),
            fixed_bytes=_int(form.get("fixed_bytes"), "form.fixed_bytes", -(2**63)),
            runs=_int(d.get("runs"), "runs", 1),
            models=tuple(models),
            covered_runs=_int(d.get("covered_runs"), "covered_runs", 0),
            training=_figures(d.get("training"), "training"),
            cross_validated=_cross_validation(d.get("cross_validated")),
            target=target_named(str(target)),
            origin=origin,
            origin_file=origin_file,
            fitted_at=_opt_str(d.get("fitted_at"), "fitted_at") or "",
            kv_factor=_int(form.get("kv_factor"), "form.kv_factor", 0, 16),
            margin_basis_points=_int(
                form.get("margin_basis_points"), "form.margin_basis_points", 0, 10_000
            ),
            margin_chosen=margin == MARGIN_CHOSEN,
            mlxcel=_figures(mlxcel, "mlxcel") if mlxcel is not None else None,
            measured_on=measured_on if measured_on is not backend else None,
            load=_load(d.get("load")),
        )


LOAD_FORM = "W + KV + in-flight + ceil(transient x scale) + fixed"


def _load_dict(fit: LoadFit) -> dict[str, Any]:
    """The load's calibration, `load` beside the mlxcel-form keys (which never change)."""
    return {
        "form": LOAD_FORM,
        "transient_scale_percent": fit.scale_percent,
        "fixed_bytes": fit.fixed_bytes,
        "runs": fit.runs,
        "models": list(fit.models),
        "covered_runs": fit.training.covered,
        "load_as_is": _figures_dict(fit.uncalibrated),
        "training": _figures_dict(fit.training),
        "mlxcel": _figures_dict(fit.mlxcel),
        "held_out": (
            {
                "method": "leave-one-model-out",
                "folds": len(fit.models),
                "vramscope": _figures_dict(fit.held_out),
            }
            if fit.held_out is not None
            else None
        ),
    }


def _load(value: Any) -> LoadFit | None:
    """The load's calibration from untrusted JSON; absent (older files) or null: None."""
    if value is None:
        return None
    d = _obj(value, "load")
    if d.get("form") != LOAD_FORM:
        raise ValueError(f"load.form: expected {LOAD_FORM!r}")
    models = d.get("models")
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise ValueError("load.models: expected a list of names")
    held = d.get("held_out")
    return LoadFit(
        scale_percent=_int(
            d.get("transient_scale_percent"), "load.transient_scale_percent", 0, 10_000
        ),
        fixed_bytes=_int(d.get("fixed_bytes"), "load.fixed_bytes", -(2**63)),
        models=tuple(models),
        training=_figures(d.get("training"), "load.training"),
        uncalibrated=_figures(d.get("load_as_is"), "load.load_as_is"),
        mlxcel=_figures(d.get("mlxcel"), "load.mlxcel"),
        held_out=(
            _figures(_obj(held, "load.held_out").get("vramscope"), "load.held_out.vramscope")
            if held is not None
            else None
        ),
    )


def _cross_validation(value: Any) -> CrossValidation | None:
    if value is None:
        return None
    cv = _obj(value, "cross_validated")
    return CrossValidation(
        folds=_int(cv.get("folds"), "cross_validated.folds", 0),
        vramscope=_figures(cv.get("vramscope"), "cross_validated.vramscope"),
        mlxcel=_figures(cv.get("mlxcel"), "cross_validated.mlxcel"),
    )


def _backend(value: Any, name: str) -> Backend:
    try:
        return Backend.named(value)
    except ValueError:
        raise ValueError(f"{name}: expected one of {', '.join(b.value for b in Backend)}") from None


def _engine(value: Any) -> Engine | None:
    if value is None:
        return None
    try:
        return Engine.named(value)
    except ValueError:
        raise ValueError(f"engine: expected one of {', '.join(ENGINE_NAMES)} or null") from None


def _figures_dict(f: Figures) -> dict[str, Any]:
    return {
        "rows": f.rows,
        "covered": f.covered,
        "median_overshoot": f.median_overshoot,
        "worst_overshoot": f.worst_overshoot,
        "least_overshoot": f.least_overshoot,
    }


def _obj(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{name}: expected an object")
    return value


def _int(value: Any, name: str, low: int, high: int = 2**64 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name}: expected an integer in [{low}, {high}]")
    return value


def _float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number")
    return float(value)


def _opt_str(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 200:
        raise ValueError(f"{name}: expected a short string or null")
    return value


def _figures(value: Any, name: str) -> Figures:
    d = _obj(value, name)
    return Figures(
        rows=_int(d.get("rows"), f"{name}.rows", 0),
        covered=_int(d.get("covered"), f"{name}.covered", 0),
        median_overshoot=_float(d.get("median_overshoot"), f"{name}.median_overshoot"),
        worst_overshoot=_float(d.get("worst_overshoot"), f"{name}.worst_overshoot"),
        least_overshoot=_float(d.get("least_overshoot"), f"{name}.least_overshoot"),
    )
