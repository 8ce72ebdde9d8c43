"""`M`: your own command, measured beside the estimate (what `vramscope run` does).

A box for the command (prefilled with mlx-lm's generate of the model on screen at the
context on screen); Enter runs it with no terminal (its output goes nowhere), sampled
as `vramscope run` samples it (hip_backend, reached through its top level when Enter
is pressed), recorded in the history as engine `external`, and its peak shown beside
the estimate for the model on screen, in the text `vramscope run` prints
(`core.measurement.report.comparison_lines`). Esc cancels a run in flight (its process
group is killed) or closes the box.
"""

from __future__ import annotations

import contextlib
import shlex
import threading
from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from core.display_text import clean_text
from core.measurement.result import MeasuredPeak

Finish = Callable[[MeasuredPeak], MeasuredPeak]
"""The screen's estimate attached to a finished run's peak (the model on screen)."""


def suggested_command(model: str, max_tokens: int) -> str:
    """mlx-lm's generate of `model` at `max_tokens`: the engine most users run first."""
    return shlex.join(
        ["python", "-m", "mlx_lm", "generate", "--model", model, "--max-tokens", str(max_tokens)]
    )


class CommandScreen(ModalScreen[MeasuredPeak | None]):
    """Type a command, run it, read its peak beside the estimate."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "stop", "Cancel / close")]
    DEFAULT_CSS = """
    CommandScreen { align: center middle; }
    #command-box {
        width: 90%; height: auto; max-height: 90%;
        border: round $accent; padding: 0 1; background: $surface;
    }
    #command-report { height: auto; margin-top: 1; }
    """

    def __init__(
        self, suggestion: str, model: str, max_tokens: int, kv_int8: bool, finish: Finish
    ) -> None:
        super().__init__()
        self.suggestion = suggestion
        self.model, self.max_tokens, self.kv_int8 = model, max_tokens, kv_int8
        self.finish = finish
        self._group: int | None = None
        """The command's process group while it runs (0 while it starts, None: idle)."""
        self._lock = threading.Lock()
        self.peak: MeasuredPeak | None = None
        self._stopped = False

    def compose(self) -> ComposeResult:
        with Vertical(id="command-box") as box:
            box.border_title = "vramscope · your command"
            box.border_subtitle = "Enter runs · Esc cancels or closes"
            yield Input(self.suggestion, id="command-input")
            yield Static(
                "Its peak (amdgpu VRAM + GTT, NVML, else host RSS) beside the estimate for "
                "the model on screen; recorded as engine external.",
                id="command-report",
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self._group is not None:
            return  # one run at a time
        try:
            argv = shlex.split(event.value)
        except ValueError as exc:
            self._say(f"cannot read the command: {exc}")
            return
        if not argv:
            self._say("type a command to run")
            return
        self._say(f"running {clean_text(shlex.join(argv))} …")
        self._group, self._stopped = 0, False
        self.run_worker(lambda: self._run(argv), thread=True, group="command", exit_on_error=False)

    def _run(self, argv: list[str]) -> None:
        from core.measurement.command_flags import read_command
        from core.measurement.report import comparison_lines
        from core.measurement.run import MeasuredRun
        from hip_backend import check_command, external_peak, record_run, run_command

        try:
            check_command(argv)
            done = run_command(argv, quiet=True, on_start=self._started)
        except Exception as exc:  # a usage error, or a program that cannot start
            self._done(clean_text(str(exc)), None)
            return
        if done.error is not None:
            self._done(clean_text(done.error), None)
            return
        if self._stopped:  # Esc killed it: not a run to record
            self._done("cancelled: its process group was killed", None)
            return
        peak = external_peak(
            done,
            argv,
            model=self.model,
            family=read_command(argv).family.value,
            context_tokens=self.max_tokens,
            kv_int8=self.kv_int8,
            inflight_mib=0,
            estimate_for=lambda _backend: None,
        )
        peak = self.finish(peak)
        record_run(MeasuredRun((peak,)))
        self._done("\n".join(comparison_lines(peak)), peak)

    def _started(self, group: int) -> None:
        with self._lock:
            self._group = group
            stopped = self._stopped
        if stopped:  # Esc (or quitting) came while it was starting
            from hip_backend import stop_command

            stop_command(group)

    def _done(self, text: str, peak: MeasuredPeak | None) -> None:
        def show() -> None:
            self._group = None
            self.peak = peak
            self._say(text)

        with contextlib.suppress(RuntimeError):  # the app is gone: nobody to tell
            self.app.call_from_thread(show)

    def _say(self, text: str) -> None:
        self.query_one("#command-report", Static).update(text)

    def action_stop(self) -> None:
        """Esc: kill a run in flight, else close (with the last peak, if any)."""
        with self._lock:
            group = self._group
            if group is not None:
                self._stopped = True
        if group is None:
            self.dismiss(self.peak)
        elif group:  # else still starting: `_started` kills it
            from hip_backend import stop_command

            stop_command(group)

    def on_unmount(self) -> None:
        with self._lock:
            group = self._group
            self._stopped = self._stopped or group is not None
        if group:  # quitting with a run in flight: its group goes too
            from hip_backend import stop_command

            stop_command(group)
