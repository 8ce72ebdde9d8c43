"""A saved calibration: its key, its fitted part, its figures, and a checked JSON form."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from core.calibration.fit import (
    KV_FACTOR,
    MARGIN_BASIS_POINTS,
    CrossValidation,
    Figures,
    Fit,
    predict,
)
from core.calibration.targets import DEFAULT_TARGET, TARGET_LABELS


@dataclass(frozen=True)
class Calibration:
    """vramscope's calibrated estimate for one (engine, backend, device)."""

    backend: str
    engine: str | None
    """None: fitted on runs of any engine (or none named) on the backend."""
    device: str | None
    """None: fitted on runs of any device (or none named) on the backend."""
    fixed_bytes: int
    runs: int
    models: tuple[str, ...]
    covered_runs: int
    training: Figures
    cross_validated: CrossValidation
    target: str = DEFAULT_TARGET
    origin: str = "user"
    """`builtin`, `user` (the latest `vramscope calibrate`) or the file it was read from."""
    fitted_at: str = ""
    kv_factor: int = KV_FACTOR
    margin_basis_points: int = MARGIN_BASIS_POINTS

    @classmethod
    def from_fit(
        cls,
        fit: Fit,
        *,
        backend: str,
        engine: str | None,
        device: str | None,
        origin: str = "user",
        fitted_at: str = "",
        target: str = DEFAULT_TARGET,
    ) -> Calibration:
        """The calibration of a fit, for the key its rows share."""
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
        )

    def total_bytes(self, weights: int, kv: int, inflight: int) -> int:
        """The calibrated total for a workload whose mlxcel terms are given."""
        return predict(weights, kv, inflight, self.fixed_bytes, self.margin_basis_points)

    @property
    def target_words(self) -> str:
        """What the calibration fitted, in words."""
        return TARGET_LABELS.get(self.target, self.target)

    @property
    def device_words(self) -> str:
        """`gfx1151`, or the backend when the calibration covers every device."""
        return self.device if self.device else f"any {self.backend} device"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the store's and `--json`'s)."""
        return {
            "backend": self.backend,
            "engine": self.engine,
            "device": self.device,
            "target": self.target,
            "form": {
                "weights_factor": 1,
                "kv_factor": self.kv_factor,
                "inflight_factor": 1,
                "fixed_bytes": self.fixed_bytes,
                "margin_basis_points": self.margin_basis_points,
            },
            "runs": self.runs,
            "models": list(self.models),
            "covered_runs": self.covered_runs,
            "training": _figures_dict(self.training),
            "cross_validated": {
                "method": "leave-one-model-out",
                "folds": self.cross_validated.folds,
                "vramscope": _figures_dict(self.cross_validated.vramscope),
                "mlxcel": _figures_dict(self.cross_validated.mlxcel),
            },
            "origin": self.origin,
            "fitted_at": self.fitted_at,
        }

    @classmethod
    def from_dict(cls, data: Any, origin: str) -> Calibration:
        """A checked calibration from untrusted JSON; ValueError naming the bad field."""
        d = _obj(data, "calibration")
        form = _obj(d.get("form"), "form")
        cv = _obj(d.get("cross_validated"), "cross_validated")
        if form.get("weights_factor") != 1 or form.get("inflight_factor") != 1:
            raise ValueError("form: only weights_factor 1 and inflight_factor 1 are known")
        models = d.get("models")
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise ValueError("models: expected a list of names")
        return cls(
            backend=_choice(d.get("backend"), "backend", ("rocm", "cuda", "metal", "cpu")),
            engine=_opt_str(d.get("engine"), "engine"),
            device=_opt_str(d.get("device"), "device"),
            fixed_bytes=_int(form.get("fixed_bytes"), "form.fixed_bytes", -(2**63)),
            runs=_int(d.get("runs"), "runs", 1),
            models=tuple(models),
            covered_runs=_int(d.get("covered_runs"), "covered_runs", 0),
            training=_figures(d.get("training"), "training"),
            cross_validated=CrossValidation(
                folds=_int(cv.get("folds"), "cross_validated.folds", 0),
                vramscope=_figures(cv.get("vramscope"), "cross_validated.vramscope"),
                mlxcel=_figures(cv.get("mlxcel"), "cross_validated.mlxcel"),
            ),
            target=_choice(d.get("target", DEFAULT_TARGET), "target", tuple(TARGET_LABELS)),
            origin=origin,
            fitted_at=_opt_str(d.get("fitted_at"), "fitted_at") or "",
            kv_factor=_int(form.get("kv_factor"), "form.kv_factor", 0, 16),
            margin_basis_points=_int(
                form.get("margin_basis_points"), "form.margin_basis_points", 0, 10_000
            ),
        )


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


def _choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(choices)}")
    return str(value)


def _figures(value: Any, name: str) -> Figures:
    d = _obj(value, name)
    return Figures(
        rows=_int(d.get("rows"), f"{name}.rows", 0),
        covered=_int(d.get("covered"), f"{name}.covered", 0),
        median_overshoot=_float(d.get("median_overshoot"), f"{name}.median_overshoot"),
        worst_overshoot=_float(d.get("worst_overshoot"), f"{name}.worst_overshoot"),
        least_overshoot=_float(d.get("least_overshoot"), f"{name}.least_overshoot"),
    )
