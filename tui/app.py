"""The explorer app: wiring only. State, layout and logic live in `screens/` and `widgets/`.

`make_app` is the one way to build it; the command line, the screenshot
command, the tests and the benchmark all call it, each with its own
collaborators (`tui.deps`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen

from tui.controllers.first_reads import FirstReads
from tui.controllers.loader import DaemonExecutor
from tui.deps import AppDeps, default_deps
from tui.key_order import KeyHandled, KeyOrder
from tui.model.state import LaunchOptions, initial_state
from tui.out_of_memory import loop_exception_handler
from tui.screens.explorer_screen import ExplorerScreen

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from core.measurement.result import MeasuredPeak


BODY_WAIT_S = 5.0
"""The longest a key waits for the explorer's body (it takes about 0.1 s)."""


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
        self.key_order = KeyOrder(self, self._take_key)

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

    def ready_to_exit(self) -> bool:
        """Whether a stop signal may ask the app to exit (the terminal driver's
        question): only once the explorer's body is in; before, the driver restores
        the terminal and ends the process itself (a half-built screen's exit failed)."""
        explorer = self.screen_stack[0] if self.screen_stack else None
        return isinstance(explorer, ExplorerScreen) and explorer.body_ready.is_set()

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

    def on_ready(self) -> None:
        # Textual posts Ready once its first frame is on screen (Screen's first layout
        # writes it, then posts this). That frame (the explorer's top lines) lets the
        # explorer mount its body, then start the reads held back so that they never
        # delay it (`Loader.read_all`).
        explorer = self.screen_stack[0] if self.screen_stack else None
        if isinstance(explorer, ExplorerScreen):
            # at once: a queued call would wait for more frames
            explorer.call_next(self._after_first_frame, explorer)
        else:
            gc.enable()

    async def _after_first_frame(self, explorer: ExplorerScreen) -> None:
        try:
            await explorer.mount_body()
        finally:
            # `vramscope explore` holds the collector off until now (tui.commands.explore);
            # the body's code and widgets live as long as the app: out of its walks.
            if not gc.isenabled():  # the command's doing (a test's process keeps its own)
                gc.freeze()
                gc.enable()

    async def on_event(self, event: events.Event) -> None:
        # Keys (and clicks, pastes) wait until the explorer's body is in: a burst typed
        # as the first frame appears lands in the sliders and fields it was meant for.
        # Ctrl+C quits at once, body or not.
        quit_now = isinstance(event, events.Key) and event.key == "ctrl+c"
        if isinstance(event, events.InputEvent) and not event.is_forwarded and not quit_now:
            await self._body_in()
            # A key that would overtake one typed before it waits (tui/key_order.py).
            if isinstance(event, events.Key):
                if not self.key_order.hold(event):
                    await self._take_key(event)
                return
        await super().on_event(event)

    async def _take_key(self, event: events.Key) -> None:
        """Textual's handling of a key (a priority binding, else to the focused widget),
        followed by the message that says when it has been handled."""
        target = self.focused or self.screen
        await super().on_event(event)
        self.key_order.handed_out(target)

    def on_key_handled(self, message: KeyHandled) -> None:
        message.stop()
        self.key_order.handled(message.number)

    async def _body_in(self) -> None:
        explorer = self.screen_stack[0] if self.screen_stack else None
        if isinstance(explorer, ExplorerScreen) and not explorer.body_ready.is_set():
            with contextlib.suppress(TimeoutError):  # never hold keys for ever
                await asyncio.wait_for(explorer.body_ready.wait(), BODY_WAIT_S)

    @asynccontextmanager
    async def run_test(self, *args: Any, **kwargs: Any) -> AsyncIterator[Pilot[None]]:
        """Textual's, ready once the explorer's body is in (as a user's keys are)."""
        async with super().run_test(*args, **kwargs) as pilot:
            await self._body_in()
            await pilot.pause()
            yield pilot

    def on_mount(self) -> None:
        for line in self.env_warnings:
            self.notify(line, severity="warning", timeout=8)
        for line in self.options.notes:
            self.notify(line, timeout=8)

    def action_help(self) -> None:
        """Show the help screen (once)."""
        from tui.screens.help_screen import HelpScreen  # like the palette: not for frame one

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.explorer.state.llama_cpp))

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
