"""Every figure of vramscope's calibrated estimate on mlxcel's 18 published gfx1151 peaks.

Per run: the peak, mlxcel's estimate, vramscope's leave-one-model-out estimate (fixed part
and margin chosen on the other two models) and the fit on all three, with their
overshoots; then the summary, and the candidate forms docs/calibration.md compares, each
held out with its stated margin.

    python scripts/bench_calibration.py [--out docs/benchmark_results/calibration-gfx1151-DATE.md]

Pure arithmetic over the built-in profiles: no GPU, no download, well under a second.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.calibration.builtin import builtin_calibration, builtin_rows  # noqa: E402
from core.calibration.fit import chosen_margin, fit_fixed_bytes, row_prediction  # noqa: E402
from core.calibration.report import percent  # noqa: E402
from core.calibration.rows import CalibrationRow  # noqa: E402

Feature = Callable[[CalibrationRow], float]


def short(model: str) -> str:
    return model.split("/")[-1]


def per_run_table(rows: Sequence[CalibrationRow]) -> list[str]:
    cal = builtin_calibration()
    held = {}
    for m in {r.model for r in rows}:
        rest = [r for r in rows if r.model != m]
        held[m] = (fit_fixed_bytes(rest), chosen_margin(rest))
    out = [
        "| Model | Context | Budget (MiB) | Peak bound (bytes) | mlxcel (bytes) | mlxcel over "
        "| vramscope held out (bytes) | held out over | vramscope all three (bytes) | over |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lomo = row_prediction(r, *held[r.model])
        allf = row_prediction(r, cal.fixed_bytes, cal.margin_basis_points)
        out.append(
            f"| {short(r.model)} | {r.context} | {r.inflight_mib} | {r.peak_bytes:,} "
            f"| {r.mlxcel_total_bytes:,} | {percent(r.mlxcel_total_bytes / r.peak_bytes - 1)} "
            f"| {lomo:,} | {percent(lomo / r.peak_bytes - 1)} "
            f"| {allf:,} | {percent(allf / r.peak_bytes - 1)} |"
        )
    return out


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    n = len(a)
    m = [[*row[:], v] for row, v in zip(a, b, strict=True)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        if abs(m[p][i]) < 1e-12:
            return None
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [x - f * y for x, y in zip(m[r], m[i], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def lp_fit(train: Sequence[CalibrationRow], feats: Sequence[Feature], kv: float) -> list[float]:
    """Least total relative overshoot subject to covering every row (vertex enumeration;
    coefficients after the first, the fixed part, are >= 0). Exploration only."""
    cons = [([g(r) for g in feats], (r.peak_bytes - base(r, kv)) / 1e9) for r in train]
    cons += [
        ([1.0 if j == i else 0.0 for j in range(len(feats))], 0.0) for i in range(1, len(feats))
    ]
    best: tuple[float, list[float]] | None = None
    for combo in itertools.combinations(cons, len(feats)):
        th = _solve([c[0] for c in combo], [c[1] for c in combo])
        if th is None or any(
            sum(t * x for t, x in zip(th, f, strict=True)) < v - 1e-9 for f, v in cons
        ):
            continue
        obj = sum(raw(r, feats, th, kv) / r.peak_bytes for r in train)
        if best is None or obj < best[0]:
            best = (obj, th)
    assert best is not None
    return best[1]


def base(r: CalibrationRow, kv: float) -> float:
    return r.weights_bytes + kv * r.kv_bytes + r.inflight_bytes


def raw(r: CalibrationRow, feats: Sequence[Feature], th: Sequence[float], kv: float) -> float:
    return base(r, kv) + 1e9 * sum(t * g(r) for t, g in zip(th, feats, strict=True))


def held_out(
    rows: Sequence[CalibrationRow],
    kv: float,
    margin: Callable[[float], float],
    feats: Sequence[Feature] = (lambda r: 1.0,),
) -> tuple[int, float, float]:
    over = []
    for m in sorted({r.model for r in rows}):
        train = [r for r in rows if r.model != m]
        th = lp_fit(train, feats, kv)
        over += [margin(raw(r, feats, th, kv)) / r.peak_bytes - 1 for r in rows if r.model == m]
    return sum(o >= 0 for o in over), statistics.median(over), max(over)


def candidates(rows: Sequence[CalibrationRow]) -> list[str]:
    pct = lambda p: p * 1.01  # noqa: E731
    none = lambda p: p  # noqa: E731
    fixed = lambda r: 1.0  # noqa: E731
    forms = [
        ("`W + K + I + fixed`", 1.0, pct, "1%", [fixed]),
        ("`W + 1.5 K + I + fixed`", 1.5, pct, "1%", [fixed]),
        ("**`W + 2 K + I + fixed`** (chosen)", 2.0, pct, "1%", [fixed]),
        ("`W + 2 K + I + fixed`", 2.0, none, "none", [fixed]),
        ("`W + 2.5 K + I + fixed`", 2.5, pct, "1%", [fixed]),
        (
            "`W + (1 + k) K + I + fixed`, k fitted",
            1.0,
            pct,
            "1%",
            [fixed, lambda r: r.kv_bytes / 1e9],
        ),
        (
            "`W + K + I + fixed + w W`, w fitted",
            1.0,
            pct,
            "1%",
            [fixed, lambda r: r.weights_bytes / 1e9],
        ),
        ("`W + K + I + fixed`", 1.0, lambda p: p + 128 * 2**20, "128 MiB", [fixed]),
    ]
    out = [
        "| Form (`s =`) | margin | held-out covered | median overshoot | worst overshoot |",
        "|---|---|---:|---:|---:|",
    ]
    for name, kv, margin, words, feats in forms:
        cov, med, worst = held_out(rows, kv, margin, feats)
        out.append(
            f"| {name} | {words} | {cov} / {len(rows)} | {percent(med)} | {percent(worst)} |"
        )
    return out


def summary() -> list[str]:
    cal = builtin_calibration()
    cv = cal.cross_validated
    assert cv is not None  # three models
    line = "| {} | {} / {} | {} | {} | {} |"
    return [
        "| 18 gfx1151 runs, 3 models | covered | median overshoot | worst | least |",
        "|---|---:|---:|---:|---:|",
        line.format(
            "mlxcel's estimate",
            cv.mlxcel.covered,
            cv.mlxcel.rows,
            percent(cv.mlxcel.median_overshoot),
            percent(cv.mlxcel.worst_overshoot),
            percent(cv.mlxcel.least_overshoot),
        ),
        line.format(
            "vramscope, fitted on all three",
            cal.training.covered,
            cal.training.rows,
            percent(cal.training.median_overshoot),
            percent(cal.training.worst_overshoot),
            percent(cal.training.least_overshoot),
        ),
        line.format(
            "vramscope, leave-one-model-out",
            cv.vramscope.covered,
            cv.vramscope.rows,
            percent(cv.vramscope.median_overshoot),
            percent(cv.vramscope.worst_overshoot),
            percent(cv.vramscope.least_overshoot),
        ),
        "",
        f"Fixed part fitted on all three: {cal.fixed_bytes:,} bytes; {cal.margin_words}; "
        f"KV counted {cal.kv_factor} times. Held out, each model's fixed part and margin "
        "come from the other two models only.",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    args = parser.parse_args()
    rows = builtin_rows()
    text = "\n".join(
        [
            "## vramscope's calibrated estimate on mlxcel's 18 gfx1151 peaks",
            "",
            f"Generated {datetime.date.today().isoformat()} by `scripts/bench_calibration.py` "
            "from `core/calibration/data/gfx1151_rocm.csv` (mlxcel's published rows) and the "
            'built-in profiles. Overshoot = estimate / peak - 1; "held out" = fixed part and '
            "margin chosen on the other two models only.",
            "",
            *summary(),
            "",
            "### Every run",
            "",
            *per_run_table(rows),
            "",
            "### Candidate forms, each held out the same way",
            "",
            *candidates(rows),
            "",
        ]
    )
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
