"""`vramscope run` in a terminal (#41 item 3): the command runs in the terminal's
foreground as if alone, in a real pseudo-terminal. It can open `/dev/tty`, Ctrl-C
reaches the command first (its own handler runs and its status is passed through),
Ctrl-Z stops it as an interactive shell's job (`fg` continues it), and the terminal's
foreground is the shell's again afterwards."""

from __future__ import annotations

import os
import pty
import select
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
SCRIPT = (
    'cd "$ROOT" && "$PY" -m tui run --no-history -- "$PY" -c "$CMD"; echo "status=$?"; '
    '"$PY" -c "import os; print(\'foreground\', os.tcgetpgrp(0) == os.getpgrp())"'
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


class Terminal:
    """A program as the session leader of a new pseudo-terminal (by default `sh -c
    SCRIPT` running `command` under `vramscope run`)."""

    def __init__(
        self, home: Path, command: str = "", argv: tuple[str, ...] = ("sh", "-c", SCRIPT)
    ) -> None:
        env = dict(os.environ, ROOT=str(ROOT), PY=PY, CMD=command, PS1="$ ", TERM="dumb")
        # Its own home, and no shell history written anywhere.
        env |= {"HOME": str(home), "HISTFILE": os.devnull, "XDG_STATE_HOME": str(home)}
        pid, fd = pty.fork()
        if pid == 0:  # the child: its controlling terminal is the pty
            os.chdir(ROOT)
            os.execve(f"/bin/{argv[0]}", list(argv), env)
        self.pid, self.fd, self.seen = pid, fd, ""

    def wait_for(self, text: str | None, limit_s: float = 60) -> str:
        """Read until `text` was written, or (None) to the end of the output (the limit
        only stops a broken run from hanging the suite)."""
        deadline = time.monotonic() + limit_s
        while (text is None or text not in self.seen) and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # every process of the terminal has closed it
                    break
                if not chunk:
                    break
                self.seen += chunk.decode("utf-8", "replace")
        return self.seen

    def close(self) -> tuple[int, str]:
        """The shell's status once it ended, and all it wrote."""
        seen = self.wait_for(None)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status), seen


def test_the_command_has_the_terminal_and_the_shell_gets_it_back(tmp_path: Path) -> None:
    command = (
        "import os\n"
        "fd = os.open('/dev/tty', os.O_RDWR)\n"
        "os.write(fd, b'tty opened\\n')\n"
        "print('in the foreground', os.tcgetpgrp(fd) == os.getpgrp(), flush=True)\n"
        "import time; time.sleep(0.4)\n"
    )
    status, seen = Terminal(tmp_path, command).close()
    assert status == 0, seen
    assert "tty opened" in seen, seen
    assert "in the foreground True" in seen, seen
    assert "foreground True" in seen.split("status=0")[1], seen  # the shell's again


def test_ctrl_c_reaches_the_command_first(tmp_path: Path) -> None:
    command = (
        "import signal, subprocess, sys, time\n"
        "kept = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        "def caught(*_):\n"
        "    print('caught Ctrl-C', flush=True)\n"
        "    sys.exit(5)\n"
        "signal.signal(signal.SIGINT, caught)\n"
        "print(f'ready {kept.pid} .', flush=True)\n"
        "time.sleep(30)\n"
    )
    term = Terminal(tmp_path, command)
    kept = int(term.wait_for(" .").split("ready ", 1)[1].split()[0])  # its setsid child
    os.write(term.fd, b"\x03")  # Ctrl-C, typed
    status, seen = term.close()
    assert not alive(kept)  # the run's end took the setsid child with it
    assert status == 0, seen
    assert "caught Ctrl-C" in seen, seen  # the command's own handler ran
    assert "status=5" in seen, seen  # and vramscope passed its status through
    assert "Traceback" not in seen, seen
    assert "foreground True" in seen, seen


def test_ctrl_z_stops_the_run_as_a_job_and_fg_continues_it(tmp_path: Path) -> None:
    # The command says "resumed" once the flag file exists: made while the job is
    # stopped, it is seen only after `fg` (a command left running would say it at once).
    flag = tmp_path / "go"
    script = tmp_path / "command.py"
    script.write_text(
        "import os, sys, time\n"
        "print('ready', flush=True)\n"
        "while not os.path.exists(sys.argv[1]):\n"
        "    time.sleep(0.02)\n"
        "print('resumed', flush=True)\n"
    )
    term = Terminal(tmp_path, argv=("bash", "--norc", "--noprofile", "-i"))  # job control
    term.wait_for("$ ")
    os.write(term.fd, f"{PY} -m tui run --no-history -- {PY} {script} {flag}\n".encode())
    term.wait_for("ready")
    os.write(term.fd, b"\x1a")  # Ctrl-Z, typed
    term.wait_for("Stopped")
    flag.touch()
    # A command left running says it within its 20 ms poll; a stopped one never can, so
    # this wait only lets a defect show (a slow machine can hide it, never invent it).
    stopped = term.wait_for("resumed", 1.0)
    os.write(term.fd, b"fg\n")
    seen = term.wait_for("Run: ")
    os.write(term.fd, b"exit\n")
    term.close()
    assert "Stopped" in stopped, stopped  # the shell saw its job stop
    assert "resumed" not in stopped, stopped  # and the command was stopped with it
    after = seen.split("Stopped", 1)[1]
    assert "resumed" in after and "exit status 0" in after, seen  # `fg` went on
    assert "is stopped" not in after, seen  # the shell said it: vramscope does not
