"""`M`: your own command, measured beside the estimate (what `vramscope run` does).

A box for the command (prefilled with mlx-lm's generate of the model on screen at the
context on screen); Enter runs it with no terminal (its output goes nowhere) as the
one run `vramscope run` makes of it (`hip_backend.start_command`, reached through
hip_backend's top level when Enter is pressed: every process it starts followed,
recorded in the history as engine `external` with its exit status), and its peak shown
beside the estimate for the model on screen, in the text `vramscope run` prints
(`core.measurement.report.comparison_lines`). Esc cancels a run in flight (every
process of it is killed; nothing is recorded) or closes the box; so does quitting.
"""

from __future__ import annotations

import contextlib
import shlex
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from core.display_text import clean_text
from core.measurement.result import MeasuredPeak

if TYPE_CHECKING:
    from core.measurement.run import RunEvent
    from hip_backend import CommandRun, RunHandle

STOP_WAIT_S = 10.0
"""The most quitting waits for a cancelled run to be cleaned up (it takes milliseconds)."""

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
        self,
        suggestion: str,
        model: str,
        max_tokens: int,
        kv_int8: bool,
        finish: Finish,
        *,
        note: str | None = None,
    ) -> None:
        super().__init__()
        self.suggestion = suggestion
        self.note = note
        """Why the suggestion names what it names (a Hub repo id), shown under the box."""
        self.model, self.max_tokens, self.kv_int8 = model, max_tokens, kv_int8
        self.finish = finish
        self._handle: RunHandle | None = None
        """The run in flight, or the last one."""
        self._ui_thread = 0
        self.peak: MeasuredPeak | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="command-box") as box:
            box.border_title = "vramscope · your command"
            box.border_subtitle = "Enter runs · Esc cancels or closes"
            yield Input(self.suggestion, id="command-input")
            said = (
                "Its peak (amdgpu VRAM + GTT, NVML, else host RSS) beside the estimate for "
                "the model on screen; recorded as engine external."
            )
            if self.note:
                said = f"{clean_text(self.note)}\n{said}"
            yield Static(said, id="command-report")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self._handle is not None and not self._handle.done:
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
        from hip_backend import start_command

        self._ui_thread = threading.get_ident()  # a run that cannot start ends right here

        self._handle = start_command(
            argv, lambda done: self._peak(argv, done), self._event, quiet=True
        )

    def _peak(self, argv: list[str], done: CommandRun) -> MeasuredPeak:
        """The run's peak, with the screen's estimate (on the run's thread)."""
        from core.measurement.command_flags import read_command
        from hip_backend import external_peak

        peak = external_peak(
            done,
            argv,
            model=self.model,
            family=read_command(argv).family,
            context_tokens=self.max_tokens,
            kv_int8=self.kv_int8,
            inflight_mib=0,
            estimate_for=lambda _backend: None,
        )
        return self.finish(peak)

    def _event(self, event: RunEvent) -> None:
        """The run's notices and its end (on the run's thread)."""
        from core.measurement.protocol import MeasureNotice
        from core.measurement.report import comparison_lines
        from core.measurement.run import MeasuredRun, RunEnded

        if isinstance(event, MeasureNotice):
            self._done(f"running … {clean_text(event.message)}", None, running=True)
        elif isinstance(event, RunEnded):
            outcome = event.outcome
            if isinstance(outcome, MeasuredRun):
                self._done("\n".join(comparison_lines(outcome.peak)), outcome.peak)
            else:
                self._done(clean_text(outcome.message), None)

    def _done(self, text: str, peak: MeasuredPeak | None, *, running: bool = False) -> None:
        def show() -> None:
            if not running:
                self.peak = peak if peak is not None else self.peak
            self._say(text)

        if threading.get_ident() == self._ui_thread:
            show()
            return
        with contextlib.suppress(RuntimeError):  # the app is gone: nobody to tell
            self.app.call_from_thread(show)

    def _say(self, text: str) -> None:
        self.query_one("#command-report", Static).update(text)

    def action_stop(self) -> None:
        """Esc: kill a run in flight, else close (with the last peak, if any)."""
        handle = self._handle
        if handle is None or handle.done:
            self.dismiss(self.peak)
        else:
            handle.cancel()  # every process of it: the run ends cancelled, unrecorded

    def on_unmount(self) -> None:
        handle = self._handle
        if handle is not None and not handle.done:  # quitting with a run in flight
            handle.cancel()
            handle.wait(STOP_WAIT_S)  # its processes gone and its cgroup removed
