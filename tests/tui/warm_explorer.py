"""A warmed interpreter that starts `vramscope explore` by fork, for the early-signal
sweeps timed from the alternate screen and the first frame
(tests/tui/test_explorer_early_signal.py).

Each of those starts spent most of its processor time (0.4 of 0.6 s here) starting an
interpreter and importing what `python -m tui explore` imports before it builds the app
(`tui.cli`, `tui.commands.explore`, `tui.app`: Textual), before the instants the sweep
is about. This process imports those once, as `explore` does (the collector off, then
frozen), and forks a start for each request. The fork runs the command's own entry
point, `tui.cli.main()` with `explore`, from the top: the stop signals' handlers go in
there, the app is built and run, and the body's code is imported after the first frame,
as in a fresh process. The interpreter's own start-up is swept by the fresh starts
through a shell, which this does not replace.

Run as `python warm_explorer.py REQUESTS EVENTS` (two descriptors it inherits). Each
request is a JSON line {"id", "tty", "cwd", "env"}; the start runs in a session of its
own on that terminal (opened without making it the controlling one, as `Popen` with
`start_new_session` leaves it), with that environment. Events are lines
`started ID PID` (the terminal is open in the start: its opener may close its own) and
`ended ID CODE` (`Popen.returncode`'s form: -N for a death by signal N).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import sys
import traceback
from pathlib import Path

TUI_MAIN = Path(__file__).resolve().parents[2] / "tui" / "__main__.py"


def _run_explorer(tty: int, request: dict[str, object], keep: list[int]) -> None:
    """In the fork: become the start `Popen` would have made, run the command, end."""
    code = 1
    try:
        for fd in keep:
            os.close(fd)
        os.setsid()
        for fd in (0, 1, 2):
            os.dup2(tty, fd)
        os.close(tty)
        os.chdir(str(request["cwd"]))
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [str(TUI_MAIN), "explore"]  # as `python -m tui explore` sets it
        from tui.cli import main

        code = main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def serve(requests: int, events: int) -> None:
    waiting: dict[int, tuple[int, object]] = {}  # pidfd -> (pid, request id)
    pending = b""
    while True:
        ready, _, _ = select.select([requests, *waiting], [], [])
        for fd in ready:
            if fd != requests:
                pid, ident = waiting.pop(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                os.write(events, f"ended {ident} {os.waitstatus_to_exitcode(status)}\n".encode())
                continue
            data = os.read(requests, 65536)
            if not data:
                return  # the test is done (it ends whatever it started)
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                tty = os.open(request["tty"], os.O_RDWR | os.O_NOCTTY)
                pid = os.fork()
                if pid == 0:
                    _run_explorer(tty, request, [requests, events, *waiting])
                os.close(tty)
                waiting[os.pidfd_open(pid)] = (pid, request["id"])
                os.write(events, f"started {request['id']} {pid}\n".encode())


if __name__ == "__main__":
    # What `explore` imports before it builds the app, imported as it does (tui/commands/
    # explore.py: no collection meanwhile, then frozen out of the collector's walks).
    sys.path[0] = str(TUI_MAIN.parents[1])  # the tree, as `python -m tui` run there has it
    import tui.cli
    import tui.commands.explore

    gc.disable()
    import tui.app  # noqa: F401

    gc.freeze()
    serve(int(sys.argv[1]), int(sys.argv[2]))
