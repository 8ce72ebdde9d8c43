"""One verdict carried by the answer (one device, a split plan, the calibrated total,
a listing's bound) and one function that words it: every surface reads the same one."""

from __future__ import annotations

from core.answer.answer import Answer
from core.answer.device import Device
from core.answer.question import Split
from core.answer.verdict import Scope, Verdict, amount_words, verdict_words
from core.backend import Backend
from core.calibration.builtin import builtin_calibration
from core.estimate.available import AvailableMemory
from core.parallel.sharding import ParallelKind
from core.units import GIB
from tests.core.answer.test_answer import ask, facts
from tui.model.parallel_view import parallel_view
from tui.render.fit_table import verdict_cell

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "mlx-community/Qwen2.5-7B-Instruct-4bit"


def device(gib: float) -> Device:
    return Device(Backend.ROCM, "test", AvailableMemory(int(gib * GIB), f"{gib} GiB"))


def test_one_device_is_mlxcel_s_verdict_with_its_slack_or_overflow() -> None:
    roomy, tight = ask(LLAMA, 8192, device(64)), ask(LLAMA, 8192, device(8))
    est = roomy.estimate
    assert roomy.verdict == Verdict(Scope.DEVICE, True, est.available_bytes - est.total_bytes)
    assert tight.verdict.fits is False and tight.fits is False
    assert tight.verdict.bytes == tight.estimate.total_bytes - tight.estimate.available_bytes
    assert (verdict_words(roomy.verdict), verdict_words(tight.verdict)) == ("FITS", "DOES NOT FIT")
    assert amount_words(tight.verdict).endswith(f"({tight.verdict.bytes:,} bytes) over")


def test_a_plan_names_its_failing_ranks_and_every_surface_words_it_alike() -> None:
    # Four ranks of 1.2 GiB for a 4-bit 7B model (4.3 GB of weights) at 32k tokens:
    # some ranks are over, each named.
    plan = ask(QWEN, 32768, device(1.2), Split(ParallelKind.PIPELINE, 4))
    verdict = plan.verdict
    assert verdict.scope is Scope.PLAN and verdict.ranks == 4
    failing = tuple(r.rank for r in plan.ranks if not r.fits)
    assert failing and verdict.fits is False and verdict.failing_ranks == failing
    view = parallel_view(plan)
    assert view.verdict.startswith(verdict_words(verdict, detail=True))
    rank_cells = dict(view.rows)["Verdict"]
    assert [c == "FITS" for c in rank_cells] == [r.fits for r in plan.ranks]
    roomy = ask(QWEN, 4096, device(64), Split(ParallelKind.PIPELINE, 2))
    assert verdict_words(roomy.verdict, detail=True) == "PLAN FITS: all 2 ranks"
    assert verdict_words(roomy.verdict) == "PLAN FITS"


def test_the_calibrated_verdict_is_the_calibrated_total_against_the_same_memory() -> None:
    gfx1151 = Device(
        Backend.ROCM, "test", AvailableMemory(int(12 * GIB), "12 GiB"), target="gfx1151"
    )
    from core.answer.answer import answer
    from core.answer.question import Question
    from core.estimate.estimate import Workload

    found = answer(
        facts(LLAMA), Question(Workload(max_tokens=8192), gfx1151), [builtin_calibration()]
    )
    assert isinstance(found, Answer)
    cal = found.calibrated
    assert cal is not None and cal.total_bytes is not None
    available = found.estimate.available_bytes
    assert cal.verdict.scope is Scope.CALIBRATED
    assert cal.verdict.fits is (cal.total_bytes <= available) and cal.fits is cal.verdict.fits
    assert cal.verdict.bytes == abs(available - cal.total_bytes)


def test_no_verdict_is_no_words_and_a_bound_only_says_what_it_knows() -> None:
    assert verdict_words(Verdict(Scope.PLAN, None)) == ""
    assert verdict_words(Verdict(Scope.BOUND, None)) == ""
    assert verdict_words(Verdict(Scope.BOUND, False, 1)) == "≈ DOES NOT FIT"
    assert verdict_words(Verdict(Scope.DEVICE, False, GIB), detail=True) == "OVER 1.00 GiB"


def test_the_fit_table_words_the_row_s_answer_verdict() -> None:
    from core.answer.fit import FitRow
    from core.answer.quantization import Quantization

    tight = ask(LLAMA, 8192, device(8))
    row = FitRow(LLAMA, Quantization.STORED, "BF16", "test", tight)
    assert row.verdict is tight.verdict and verdict_cell(row) == "DOES NOT FIT"
