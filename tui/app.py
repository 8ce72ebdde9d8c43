"""The explorer app: wiring only. State, layout and logic live in `screens/` and `widgets/`.

`make_app` is the one way to build it; the command line, the screenshot
command, the tests and the benchmark all call it, each with its own
collaborators (`tui.deps`).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterable
from typing import Any, ClassVar

from rich.console import RenderableType
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen

from core.measurement.result import MeasuredPeak
from tui.controllers.first_reads import FirstReads
from tui.controllers.loader import DaemonExecutor
from tui.deps import AppDeps, default_deps
from tui.model.state import LaunchOptions, initial_state
from tui.out_of_memory import loop_exception_handler
from tui.screens.explorer_screen import ExplorerScreen


class VramscopeApp(App[None]):
    """vramscope's memory-budget explorer."""

    CSS_PATH = "app.tcss"
    TITLE = "vramscope"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        # Textual's default shows "Press q to quit"; a terminal program quits on Ctrl-C.
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, system=True),
    ]

    def __init__(
        self,
        deps: AppDeps,
        options: LaunchOptions,
        measured: MeasuredPeak | None = None,
    ) -> None:
        super().__init__()
        self.deps = deps
        self.options = options
        self.machine = deps.detect_backend()
        self.initial, self.env_warnings = initial_state(options, deps.env, self.machine)
        # The model and the available memory are read while Textual starts, so that the
        # first frame can show the estimate (`tui.controllers.first_reads`).
        self.first_reads = FirstReads(deps, self.initial.model, self.initial.backend)
        self.measured = measured
        self._first_frame_out = False

    def get_driver_class(self) -> type[Driver]:
        # Textual's Linux driver, made to exit cleanly on SIGTERM, SIGHUP and a closed
        # terminal (tui/terminal_driver.py); any other (Windows, TEXTUAL_DRIVER) as is.
        found = super().get_driver_class()
        try:
            from textual.drivers.linux_driver import LinuxDriver

            from tui.terminal_driver import TerminalDriver
        except ImportError:  # no termios
            return found
        return TerminalDriver if found is LinuxDriver else found

    def get_default_screen(self) -> Screen[None]:
        return ExplorerScreen(
            self.deps,
            self.initial,
            self.machine,
            self.measured,
            self.options.models_dirs,
            self.first_reads,
        )

    @property
    def explorer(self) -> ExplorerScreen:
        """The main screen (whatever is on top of it)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, ExplorerScreen)
        return screen

    def on_load(self) -> None:
        # Thread workers in daemon threads: quitting never waits for a read that hangs.
        loop = asyncio.get_running_loop()
        loop.set_default_executor(DaemonExecutor())
        # A task that ran out of memory: one line and exit 2, not a traceback and a hang.
        loop.set_exception_handler(loop_exception_handler)

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        # Textual writes every frame here. The first one written releases the explorer's
        # reads, held back so that they never delay it (`Loader.read_all`).
        super()._display(screen, renderable)
        if renderable is not None and not self._first_frame_out:
            self._first_frame_out = True
            gc.enable()  # `vramscope explore` holds it off until now (tui.commands.explore)
            self._start_held_reads()  # at once: a queued call would wait for more frames

    def _start_held_reads(self) -> None:
        if self.screen_stack and isinstance(self.screen_stack[0], ExplorerScreen):
            self.screen_stack[0].loader.start_held_reads()

    def on_mount(self) -> None:
        for line in self.env_warnings:
            self.notify(line, severity="warning", timeout=8)

    def action_help(self) -> None:
        """Show the help screen (once)."""
        from tui.screens.help_screen import HelpScreen  # like the palette: not for frame one

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        from tui.screens.palette import explorer_commands  # Ctrl+P only: not for frame one

        yield from super().get_system_commands(screen)
        yield from explorer_commands(self.explorer, self.action_help)


def make_app(
    deps: AppDeps | None = None,
    options: LaunchOptions | None = None,
    measured: MeasuredPeak | None = None,
) -> VramscopeApp:
    """Build the explorer (the real machine unless `deps` says otherwise)."""
    options = options or LaunchOptions()
    return VramscopeApp(deps or default_deps(options.models_dirs), options, measured)
