"""A real `vramscope` process in tmux: keys sent as one burst, the screen read as text.

Pilot hands keys over one at a time with a pause after each; a user pasting or
typing fast does not. Here the whole string goes to the terminal at once
(`tmux send-keys -l`), and `capture-pane -p` reads what a user would see.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import TERMINAL_ENV

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60.0
"""Longest wait for the screen to show something; a limit against hangs, not a timing."""


class TmuxApp:
    """One tmux session running `python -m tui ARGS` at a given size."""

    def __init__(self, name: str) -> None:
        self.name = name
        """Both the session's name and its private server's socket (`tmux -L`)."""

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.name, *args], capture_output=True, text=True, check=True, timeout=30
        )
        return out.stdout

    def screen(self) -> str:
        """The pane's text, one line per row."""
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def burst(self, text: str) -> None:
        """Send `text` to the terminal in one write (`\\r` is Enter)."""
        self._tmux("send-keys", "-t", self.name, "-l", text)

    def key(self, name: str) -> None:
        """One named key (`Escape`, `Enter`)."""
        self._tmux("send-keys", "-t", self.name, name)

    def resize(self, width: int, height: int) -> None:
        """Resize the window (the app sees a terminal resize)."""
        self._tmux("resize-window", "-t", self.name, "-x", str(width), "-y", str(height))

    def wait_for(self, condition: Callable[[str], bool], what: str) -> str:
        """The screen once `condition(screen)` holds; fails naming `what` if it never does."""
        deadline = time.monotonic() + WAIT_S
        while True:
            text = self.screen()
            if condition(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting for {what}; the screen:\n{text}")
            time.sleep(0.1)

    def settle(self, what: str = "the screen to stop changing") -> str:
        """The screen once two captures 0.3 s apart agree."""
        last = ""

        def same(text: str) -> bool:
            nonlocal last
            stable, last = text == last, text
            if not stable:
                time.sleep(0.3)
            return stable

        return self.wait_for(same, what)


@contextmanager
def tmux_vramscope(
    size: tuple[int, int], *args: str, env: Mapping[str, str] | None = None
) -> Iterator[TmuxApp]:
    """Run the explorer in a fresh tmux session on a private server (always killed afterwards).

    The private server starts from this process's environment, so the test's clean
    estimator variables, empty HF cache and private history reach the app.
    """
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    name = f"vramscope-tui-test-{uuid.uuid4().hex[:8]}"
    width, height = size
    app_command = shlex.join([sys.executable, "-m", "tui", "explore", *args])
    # Under load a fresh server has been seen to hand the pane tmux's default 80x24
    # first: the app then drew at that size. The shell waits (at most 10 s) until the
    # pane has the size asked for, then becomes the app.
    command = (
        f'i=0; while [ "$(stty size)" != "{height} {width}" ] && [ $i -lt 200 ]; '
        f"do sleep 0.05; i=$((i+1)); done; exec {app_command}"
    )
    full_env = {**os.environ, "TERM": "xterm-256color", **(env or {})}
    # Textual takes COLUMNS and LINES over the terminal's own size, and pytest-xdist's
    # workers export COLUMNS=80 LINES=24: under -n the app drew at 80x24 in a 160x48 pane.
    for variable in ("TMUX", *TERMINAL_ENV):
        full_env.pop(variable, None)
    session = ["new-session", "-d", "-s", name, "-x", str(width), "-y", str(height)]
    subprocess.run(
        ["tmux", "-L", name, "-f", os.devnull, *session, "-c", str(ROOT), "sh", "-c", command],
        check=True,
        env=full_env,
        timeout=30,
    )
    app = TmuxApp(name)
    app.resize(width, height)  # the size again, in case the pane began at the default
    try:
        yield app
    finally:
        subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, timeout=30)
        socket_dir = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (socket_dir / name).unlink(missing_ok=True)  # the private server's socket file
