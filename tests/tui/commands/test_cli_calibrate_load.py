"""`vramscope calibrate` fits vramscope's load on the user's own runs (issue #38, item 4):
the transient's scale and a fixed part per engine, backend and device, held out model by
model, saved beside the mlxcel-form fit and used by `inspect --calibrated`.

The runs are written to the history by its one writer (`HistoryStore.append`); every
expectation is computed here from those records and mlx-lm's load of each workload.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from core.calibration.builtin import DATA_FILE, builtin_load_fit, peak_bound
from core.calibration.store import read_store
from core.catalog.profiles import load_profile, profile_snapshot
from core.load.load import TermKind
from core.load.mlx_lm import MlxLmPlan, plan_mlx_lm
from core.measurement.history import HISTORY_FILE, HistoryStore
from core.units import format_bytes
from tests.factories import peak
from tui.cli import main

MODELS = (
    "google/gemma-2-2b-it",
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
)
CONTEXTS = (640, 2048)
GEN = 128
"""`tests.factories.peak`'s generated tokens: the prompt is the context less these."""
DEVICE = "EPYC"
MIB = 1 << 20
# How each model's peaks sit against its load: a share of the transient and some bytes
# more; the fit is expected to find what covers them all, not these numbers.
SHAPES = {MODELS[0]: (60, 30 * MIB), MODELS[1]: (90, 80 * MIB), MODELS[2]: (40, 10 * MIB)}
SCALES = range(0, 401, 25)
OLD_KEYS = {
    "backend", "engine", "device", "measured_on", "target", "figure", "form", "runs",
    "models", "covered_runs", "training", "mlxcel", "cross_validated", "origin", "fitted_at",
}  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def plan_of(model: str) -> MlxLmPlan:
    profile = load_profile(model)
    tensors = list(profile.tensors) if profile.tensors is not None else None
    plan = plan_mlx_lm(profile_snapshot(profile), tensors)
    assert isinstance(plan, MlxLmPlan)
    return plan


def terms(model: str, context: int, prompt: int | None) -> tuple[int, int]:
    """(W + KV + in-flight, transient) of mlx-lm's load of the workload."""
    load = plan_of(model).at(context, prompt)
    transient = load.bytes_of(TermKind.TRANSIENT)
    return load.total_bytes - transient, transient


def predict(base: int, transient: int, scale: int, fixed: int) -> int:
    return base + -(-transient * scale // 100) + fixed


RUNS = [
    (model, ctx, terms(model, ctx, ctx - GEN))
    for model in MODELS
    for ctx in CONTEXTS
]  # fmt: skip


def peak_of(model: str, base: int, transient: int) -> int:
    share, extra = SHAPES[model]
    return base + transient * share // 100 + extra


def write_history(state: Path) -> list[tuple[str, int, int, int, int]]:
    """The runs in the history: (model, context, W + KV + I, transient, peak) each."""
    store = HistoryStore(state / "vramscope" / HISTORY_FILE)
    out = []
    for model, ctx, (base, transient) in RUNS:
        p = peak_of(model, base, transient)
        store.append(
            peak(model, inflight=0, context=ctx, engine="mlx", peak_bytes=p, device_name=DEVICE)
        )
        out.append((model, ctx, base, transient, p))
    return out


def write_csv(path: Path, runs: list[tuple[str, int, int, int, int]]) -> Path:
    lines = ["model,context,inflight_mib,backend,peak_bytes,engine,device,gen_tokens"]
    lines += [f"{m},{ctx},0,cpu,{p},mlx,{DEVICE},{GEN}" for m, ctx, _b, _t, p in runs]
    path.write_text("\n".join(lines) + "\n")
    return path


def calibrate_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, _err = run(capsys, "calibrate", *argv, "--json")
    assert code == 0
    (cal,) = json.loads(out)["calibrations"]
    assert isinstance(cal, dict)
    return cal


def test_the_history_fits_the_load_covering_every_run_with_the_least_overshoot(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = write_history(state_home)
    cal = calibrate_json(capsys)
    assert set(cal) - {"load"} == OLD_KEYS  # the mlxcel-form keys as they were
    load = cal["load"]
    assert load["form"] == "W + KV + in-flight + ceil(transient x scale) + fixed"
    assert (load["runs"], load["models"]) == (len(runs), list(MODELS))
    scale, fixed = load["transient_scale_percent"], load["fixed_bytes"]

    def fixed_at(s: int) -> int:  # every run covered: the largest excess over the rest
        return max(p - predict(b, t, s, 0) for _m, _c, b, t, p in runs)

    def overshoot(s: int) -> float:
        return sum(predict(b, t, s, fixed_at(s)) / p - 1 for _m, _c, b, t, p in runs)

    assert fixed == fixed_at(scale)
    assert overshoot(scale) == min(overshoot(s) for s in SCALES)
    predicted = [predict(b, t, scale, fixed) for _m, _c, b, t, p in runs]
    assert all(e >= p for e, (*_, p) in zip(predicted, runs, strict=True))
    assert load["covered_runs"] == load["training"]["covered"] == len(runs)
    assert load["training"]["median_overshoot"] == pytest.approx(
        statistics.median(e / r[4] - 1 for e, r in zip(predicted, runs, strict=True))
    )
    as_is = sum(b + t >= p for _m, _c, b, t, p in runs)
    assert load["load_as_is"]["covered"] == as_is < len(runs)  # the fit is needed
    assert load["mlxcel"] == cal["mlxcel"]  # mlxcel's estimate on the same runs

    # `--rows` of the same runs gives the same fit (its gen_tokens, the history's prompt)
    again = calibrate_json(capsys, "--rows", str(write_csv(state_home / "runs.csv", runs)))
    assert again["load"] == load


def test_the_held_out_figure_predicts_each_model_from_a_fit_on_the_others(
    tmp_path: Path, state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = write_history(state_home)
    held = calibrate_json(capsys)["load"]["held_out"]
    assert (held["method"], held["folds"]) == ("leave-one-model-out", len(MODELS))
    estimated: list[tuple[int, int]] = []
    for model in MODELS:
        others = [r for r in runs if r[0] != model]
        fold = calibrate_json(capsys, "--rows", str(write_csv(tmp_path / "fold.csv", others)))
        assert fold["load"]["held_out"] is None  # 2 models: not cross-validated
        s, f = fold["load"]["transient_scale_percent"], fold["load"]["fixed_bytes"]
        estimated += [(predict(b, t, s, f), p) for m, _c, b, t, p in runs if m == model]
    figures = held["vramscope"]
    assert figures["rows"] == len(runs)
    assert figures["covered"] == sum(e >= p for e, p in estimated)
    assert figures["median_overshoot"] == pytest.approx(
        statistics.median(e / p - 1 for e, p in estimated)
    )
    assert figures["worst_overshoot"] == pytest.approx(max(e / p - 1 for e, p in estimated))


def test_the_text_reports_the_load_beside_the_mlxcel_form_fit(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_history(state_home)
    code, out, err = run(capsys, "calibrate")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    at = lines.index(
        f"Load calibrated (vramscope, mlx-lm load): mlx on cpu {DEVICE}, "
        "MLX's peak (mx.get_peak_memory), 3 models"
    )
    assert lines[0].startswith("Calibrated (vramscope): mlx on cpu") and at > 0
    assert [ln.split(":")[0].strip() for ln in lines[at + 1 : at + 6]] == [
        "Form", "Load as is", "Training runs", "Held out, leave-one-model-out (3 folds)",
        "vramscope",
    ]  # fmt: skip


def test_inspect_calibrated_gives_the_load_calibrated_beside_the_calibrated_total(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = write_history(state_home)
    load = calibrate_json(capsys)["load"]
    model, ctx = MODELS[1], 4096  # a shape not measured
    base, transient = terms(model, ctx, None)  # inspect's load: the whole context a prompt
    total = predict(base, transient, load["transient_scale_percent"], load["fixed_bytes"])
    ask = ["inspect", model, "--backend", "cpu", "--max-tokens", str(ctx)]
    ask += ["--calibration-device", DEVICE, "--memory-limit", str(total)]
    code, out, _err = run(capsys, *ask, "--json")
    assert code == 0
    shown = json.loads(out)["calibrated"]["load"]
    assert (shown["total_bytes"], shown["fits"]) == (total, True)
    assert shown["load_bytes"] == base + transient
    assert shown["calibration"] == load
    code, out, _err = run(capsys, *ask)
    (line,) = [ln for ln in out.splitlines() if "Load calibrated" in ln]
    assert line.startswith(
        f"  Load calibrated (vramscope, {len(runs)} runs on {DEVICE}): "
        f"{format_bytes(total)}, fits  (mlx-lm load {format_bytes(base + transient)} with "
    )
    assert line.endswith(
        f"held-out runs {load['held_out']['vramscope']['covered']} of {len(runs)} covered, "
        f"median overshoot {100 * load['held_out']['vramscope']['median_overshoot']:+.2f}%)"
    )


def test_a_calibration_file_saved_before_the_load_still_reads(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_history(state_home)
    calibrate_json(capsys)
    path = state_home / "vramscope" / "calibration.json"
    doc = json.loads(path.read_text())
    (new,) = read_store(path).calibrations
    for cal in doc["calibrations"]:
        del cal["load"]  # as an older vramscope wrote it
    path.write_text(json.dumps(doc))
    read = read_store(path)
    assert read.warnings == ()
    (old,) = read.calibrations
    assert old.load is None and new.load is not None
    assert old.fixed_bytes == new.fixed_bytes and old.training == new.training
    code, out, err = run(
        capsys, "inspect", MODELS[0], "--backend", "cpu", "--max-tokens", "1024",
        "--calibration-device", DEVICE,
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.splitlines()[-1].startswith(f"  Calibrated (vramscope, 6 runs on {DEVICE}): ")
    assert "Load calibrated" not in out


def test_a_damaged_load_object_is_named_and_the_file_ignored(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_history(state_home)
    calibrate_json(capsys)
    path = state_home / "vramscope" / "calibration.json"
    doc = json.loads(path.read_text())
    doc["calibrations"][0]["load"]["transient_scale_percent"] = -1
    path.write_text(json.dumps(doc))
    read = read_store(path)
    assert read.calibrations == ()
    (warning,) = read.warnings
    assert "calibrations[0].load.transient_scale_percent" in warning


def test_two_models_fit_the_load_without_held_out_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], state_home: Path
) -> None:
    lines = ["model,context,inflight_mib,backend,peak_bytes,engine,device,gen_tokens"]
    names: list[str] = []
    for line in DATA_FILE.read_text().splitlines()[1:]:
        if line.startswith("#") or line.startswith("model,"):
            continue
        model, ctx, mib, centi = line.split(",")
        names += [model] if model not in names else []
        if len(names) <= 2:
            lines.append(f"{model},{ctx},{mib},rocm,{peak_bound(int(centi))},mlx,gfx1151,{GEN}")
    rows = tmp_path / "two.csv"
    rows.write_text("\n".join(lines) + "\n")
    code, out, _err = run(capsys, "calibrate", "--rows", str(rows))
    assert code == 0
    assert "  Held out:      not cross-validated (leave-one-model-out needs 3 models)" in out
    load = calibrate_json(capsys, "--rows", str(rows))["load"]
    assert load["held_out"] is None and len(load["models"]) == 2
    assert load["covered_runs"] == load["runs"] == len(lines) - 1


def test_mlxcel_s_published_rows_as_a_user_s_file_give_the_builtin_load_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], state_home: Path
) -> None:
    # mlxcel's bench generated 128 tokens; the rows in bytes, as a user would keep them
    lines = ["model,context,inflight_mib,backend,peak_bytes,engine,device,gen_tokens"]
    for line in DATA_FILE.read_text().splitlines()[1:]:
        if not (line.startswith("#") or line.startswith("model,")):
            model, ctx, mib, centi = line.split(",")
            lines.append(f"{model},{ctx},{mib},rocm,{peak_bound(int(centi))},mlx,gfx1151,128")
    rows = tmp_path / "runs.csv"
    rows.write_text("\n".join(lines) + "\n")
    load = calibrate_json(capsys, "--rows", str(rows))["load"]
    builtin = builtin_load_fit()
    assert (load["transient_scale_percent"], load["fixed_bytes"]) == (
        builtin.scale_percent,
        builtin.fixed_bytes,
    )
    assert builtin.held_out is not None
    assert load["held_out"]["vramscope"]["covered"] == builtin.held_out.covered
    assert load["training"]["median_overshoot"] == builtin.training.median_overshoot
