"""Words for a measurement: its progress, its result beside the estimate, its failure.

Pure Rich text over `core.measurement` values; the measured panel and the history
screen paint what these return. The words about a peak itself (what it counts, its
device, its queue) are `core.measurement.report`'s, shared with the CLI.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from core.backend import Backend
from core.measurement.comparison import margin
from core.measurement.report import (
    budget_text,
    covered_words,
    device_words,
    margin_short,
    peak_what,
)
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from core.units import format_bytes_short
from tui.model.names import short_model

LABEL_WIDTH = 16


Rows = list[tuple[str, Text]]
"""Label and value; the value wraps under itself (`rows_table`)."""


def rows_table(rows: Rows) -> Table:
    """Labels in a fixed column, values beside them wrapping with a hanging indent."""
    table = Table.grid(padding=0, expand=True)
    table.add_column(width=LABEL_WIDTH, no_wrap=True, style="dim")
    table.add_column(ratio=1)
    for label, value in rows:
        table.add_row(label, value)
    return table


def rows_plain(rows: Rows) -> str:
    """The rows as plain lines (for tests and screen readers)."""
    return "\n".join(f"{label:<{LABEL_WIDTH}}{value.plain}" for label, value in rows)


def workload_words(prompt: int, gen: int, inflight_mib: int) -> str:
    """`pp512 + tg128 = 640 tokens, in-flight 1024 MiB`."""
    budget = f"{inflight_mib} MiB" if inflight_mib else "0 (bound off)"
    return f"pp{prompt} + tg{gen} = {prompt + gen:,} tokens, in-flight {budget}"


def running_rows(request: MeasureRequest, seconds: float) -> Rows:
    """While a run is in flight: what is measured, and for how long so far."""
    inflight = request.inflight if isinstance(request.inflight, int) else 0
    workload = f"{workload_words(request.prompt_tokens, request.gen_tokens, inflight)}"
    return [
        (
            "Measuring",
            Text().append(short_model(request.model), "bold").append(f"  {seconds:.1f} s"),
        ),
        (
            "Workload",
            Text(f"{workload}, batch 1, fp16 KV, device {request.device}, engine {request.engine}"),
        ),
    ]


def result_rows(
    peak: MeasuredPeak, estimate_bytes: int, differs: tuple[tuple[str, str], ...] = ()
) -> Rows:
    """Peak, estimate and margin (short size and exact bytes, in columns) with ✓ / ✗, then
    the run: its workload, device and speed. `differs` names the run's settings that the
    screen no longer has (the run's words, the screen's): the estimate and the verdict are
    then the run's, and a row says so."""
    m = margin(estimate_bytes, peak.peak_bytes)
    sizes = (
        format_bytes_short(peak.peak_bytes),
        format_bytes_short(estimate_bytes),
        margin_short(m),
    )
    exact = (f"{peak.peak_bytes:,}", f"{estimate_bytes:,}", f"{m.bytes:+,}")
    size_w, bytes_w = max(map(len, sizes)), max(map(len, exact))
    cells = [f"{s:>{size_w}}  {b:>{bytes_w}} bytes" for s, b in zip(sizes, exact, strict=True)]
    measured = Text().append(cells[0], "bold")
    measured.append(f"  {peak.engine} engine · {peak_what(peak)}", "dim")
    if peak.synthetic_weights:
        measured.append(" · synthetic weights", "italic")
    formula = peak.estimate_backend
    held_against = "the run's settings" if differs else "same settings"
    if formula is not Backend.ROCM:
        held_against = f"{formula.label} formula (no in-flight term)"
    estimate = Text(cells[1]).append(f"  at {peak.context_tokens:,} tokens, {held_against}", "dim")
    covered = m.covered and peak.failed_status is None  # a failed run covers nothing
    style = "bold green" if covered else "bold red"
    verdict = Text(f"{cells[2]}  {m.percent:+.1f}%  ", style)
    verdict.append(covered_words(m, marked=True, failed=peak.failed_status), style)
    if peak.failed_status is not None:
        verdict.append(f" (the run failed: {peak.failed_status})", style)
    run_parts = [budget_text(peak, "in-flight"), peak.attention_label, device_words(peak)]
    run = (
        f"pp{peak.prompt_tokens} + tg{peak.gen_tokens}, batch 1, {peak.kv_cache_mode} KV, "
        + " · ".join(part for part in run_parts if part)
    )
    speed = (
        f"prefill {peak.prefill_tokens_per_s:,.1f} tok/s · decode "
        f"{peak.decode_tokens_per_s:,.1f} tok/s · load {peak.load_seconds:.2f} s"
    )
    rows: Rows = [
        ("Measured peak", measured),
        ("Estimate", estimate),
        ("Margin", verdict),
    ]
    if differs:
        runs, screens = zip(*differs, strict=True)
        rows.append(
            (
                "Not on screen",
                Text(
                    f"the run had {', '.join(runs)}; the screen has {', '.join(screens)}: "
                    "the margin is the run's, not the breakdown's",
                    "yellow",
                ),
            )
        )
    rows += [("Run", Text(run, "dim")), ("Speed", Text(speed, "dim"))]
    return rows


def failure_text(model: str, failure: MeasurementFailure) -> Text:
    """The failure's kind and its one-line message, for the place the result would be."""
    text = Text()
    if failure.kind is FailureKind.CANCELLED:
        text.append("Measurement cancelled", "bold yellow")
    else:
        text.append(f"✗ Measurement failed: {failure.kind.label}", "bold red")
    text.append(f"  ({short_model(model)})\n", "dim")
    text.append(failure.message)
    return text
