"""A measured peak beside the estimate, when one is given.

This is the place the measurement launcher (`hip_backend`) reports into: the
app takes a `core.measurement.MeasuredPeak` and shows it next to the estimate
for the same workload (context P + G and the run's in-flight budget) with the
margin. Without a measurement the panel stays hidden.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from core.measurement import MeasuredPeak, margin
from core.units import format_bytes
from tui.widgets.relayout import force_relayout


def measured_text(peak: MeasuredPeak, estimate_bytes: int) -> Text:
    """Peak, how it was measured, the estimate for that run, and the margin."""
    m = margin(estimate_bytes, peak.peak_bytes)
    text = Text()
    text.append("Measured peak   ", "dim")
    text.append(format_bytes(peak.peak_bytes), "bold")
    text.append(f"  ({peak.peak_kind}; {peak.device_name}")
    text.append(f", pp{peak.prompt_tokens}/tg{peak.gen_tokens}, in-flight {peak.inflight_mib} MiB")
    if peak.synthetic_weights:
        text.append(", synthetic weights")
    text.append(")\n")
    text.append("Estimate        ", "dim")
    text.append(format_bytes(estimate_bytes))
    text.append(f"  (at {peak.context_tokens} tokens, same settings)\n")
    text.append("Margin          ", "dim")
    sign = "+" if m.bytes >= 0 else "-"
    style = "green" if m.covered else "bold red"
    verdict = "estimate covers the peak" if m.covered else "estimate is BELOW the peak"
    text.append(f"{sign}{format_bytes(abs(m.bytes))} ({m.percent:+.1f}%)  {verdict}", style)
    return text


class MeasuredPanel(Static):
    """Shows a `MeasuredPeak` and its margin; hidden when there is none."""

    DEFAULT_CSS = """
    MeasuredPanel {
        height: auto;
        display: none;
        &.-shown { display: block; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__("", id=id, markup=False)
        self.peak: MeasuredPeak | None = None

    def show(self, peak: MeasuredPeak | None, estimate_bytes: int | None) -> None:
        """Show a peak against the estimate for its workload (None hides the panel)."""
        self.peak = peak
        self.set_class(peak is not None and estimate_bytes is not None, "-shown")
        if peak is not None and estimate_bytes is not None:
            self.update(measured_text(peak, estimate_bytes), layout=False)
            force_relayout(self)
