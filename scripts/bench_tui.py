"""The explorer's speed on a real pty, each figure beside a bare Textual app's in the same run.

Prints figures and ratios; asserts nothing (tests never time things). On a shared
machine only figures from the same run compare, so every measurement of vramscope
is taken in turns with the same measurement of a bare Textual app (a Static and a
Footer), and the ratio of the medians is the figure that counts (the first frame also
prints each start's ratio to the bare start just before it: a steadier view on a
machine whose speed drifts).

The targets are what a person perceives:

1. First frame: a fresh process on a pseudo-terminal (160x48), timed from just before
   it starts to the first bytes of its first frame; for vramscope also to the frame
   that shows the estimate (the summary's verdict) and to the whole first screen (the
   body, breakdown included). Target: the whole screen within 2.5x the bare app's
   first frame. The processor time each process had run by then (all its threads,
   /proc's schedstat) is printed too: on a loaded machine the wall time is mostly
   waiting for a processor.
2. Key press: both apps already on screen (160x48, then 80x24), a key to each in
   turns; a key is written to the pty and timed to the last byte the app writes in
   answer (the output then stays quiet for QUIET_S). vramscope: the token slider's
   right/left, which moves the tokens and repaints the estimate and the chart. The
   bare app: right/left update its one Static. Targets: the median within one 60 Hz
   frame (16.7 ms, on an idle machine) and within 4x the bare app's. The processor
   time each app spent on the key (all its threads, /proc's schedstat) is printed
   too: on a loaded machine the wall time is mostly waiting for a processor, the
   processor time is not.

Compiled bytecode is kept between runs (as an installed copy has it). The child
reports whether torch was ever imported (it must not be).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT = ROOT
"""Whose vramscope is started (`--checkout`: another copy, such as the code before)."""

COLD_RUNS = 11
PRESSES = 30
QUIET_S = 0.15
"""Output silent this long after a key: the repaint is over."""
SETTLE_S = 1.0
"""Silent this long after start-up: the background reads have been painted."""
WHOLE_SCREEN_TARGET = 2.5
"""The whole first screen within this many times the bare app's first frame."""
KEY_TARGET = 4.0
"""A key's repaint within this many times the bare app's."""
KEY_FRAME_S = 1 / 60
"""A key's repaint within one 60 Hz frame (median, idle machine)."""
SIZES = ((160, 48), (80, 24))

VRAMSCOPE = """
import atexit, os, sys
flag = sys.argv[1]
def tell():
    open(flag, "w").write(str("torch" in sys.modules))
atexit.register(tell)
end = os._exit  # the explorer ends with os._exit (tui.terminal_driver.end_now): no atexit
def told_end(code):
    tell()
    end(code)
os._exit = told_end
sys.argv = ["vramscope", "explore", "--preset", "gfx1151"]
from tui.cli import main
sys.exit(main())
"""

BARE = """
from textual.app import App
from textual.widgets import Footer, Static

class Bare(App[None]):
    BINDINGS = [("q", "quit", "Quit"), ("right", "step(1)", "More"), ("left", "step(-1)", "Less")]

    def compose(self):
        self.n = 0
        yield Static("bare textual app 0", id="one")
        yield Footer()

    def action_step(self, by: int) -> None:
        self.n += by
        self.query_one("#one", Static).update(f"bare textual app {self.n}")

Bare().run()
"""

# What each app paints: its first frame, (vramscope) the estimate, and the whole screen
# (the controls are in the body, mounted right after the first frame).
FIRST = {"bare": b"bare textual app", "vramscope": b"vramscope"}
READY = {"bare": b"bare textual app", "vramscope": b"FITS"}
WHOLE = {"bare": b"bare textual app", "vramscope": b"Max tokens"}
KEYS = (b"\x1b[C", b"\x1b[D")  # right, left


@dataclass
class Child:
    """An app on a pty."""

    proc: subprocess.Popen[bytes]
    master: int
    start: float
    flag: Path


def start(app: str, size: tuple[int, int], pycache: str, tmp: str) -> Child:
    master, slave = pty.openpty()
    columns, lines = size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines))
    env.pop("NO_COLOR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = pycache
    flag = Path(tmp) / f"torch-{app}"
    source = VRAMSCOPE if app == "vramscope" else BARE
    begun = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", source, str(flag)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=ROOT if app == "bare" else CHECKOUT,  # `python -c` puts it first on the path
        env=env,
        close_fds=True,
    )
    os.close(slave)
    return Child(proc, master, begun, flag)


def read_until(
    fd: int,
    markers: list[bytes],
    deadline: float,
    pid: int | None = None,
    cpu_at: dict[bytes, float] | None = None,
) -> dict[bytes, float]:
    """Read until every marker has appeared; when each first did (and, given a pid and
    `cpu_at`, the processor seconds the process had run by then)."""
    seen: dict[bytes, float] = {}
    buffer = b""
    wanted = set(markers)  # the bare app's first frame and "ready" are the same marker
    while len(seen) < len(wanted) and time.perf_counter() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        now = time.perf_counter()
        buffer += chunk
        for marker in markers:
            if marker not in seen and marker in buffer:
                seen[marker] = now
                if pid is not None and cpu_at is not None:
                    cpu_at[marker] = cpu_ns(pid) / 1e9
    return seen


def last_byte(fd: int, quiet: float, limit: float = 10.0) -> float | None:
    """Read until the output has been silent for `quiet` seconds; when the last byte
    came (None: nothing came)."""
    last = None
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        ready, _, _ = select.select([fd], [], [], quiet)
        if not ready:
            return last
        try:
            os.read(fd, 65536)
        except OSError:
            return last
        last = time.perf_counter()
    return last


def cpu_ns(pid: int) -> int:
    """Nanoseconds the process's threads have run on a processor (Linux schedstat)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def stop(child: Child) -> str:
    """Quit the app; whether it imported torch."""
    try:
        os.write(child.master, b"q")
        deadline = time.perf_counter() + 10
        while child.proc.poll() is None and time.perf_counter() < deadline:
            last_byte(child.master, 0.05, 0.2)  # keep draining
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
        child.proc.wait()
        os.close(child.master)
    return child.flag.read_text() if child.flag.exists() else "n/a"


@dataclass(frozen=True)
class Start:
    """One start-up: seconds to the first frame, to the estimate, to the whole screen."""

    first: float
    ready: float
    whole: float
    torch: str
    first_cpu: float
    whole_cpu: float
    """Processor seconds the process had run when its first frame, and its whole
    screen, were read: what a loaded machine's waits for a processor leave out."""


def first_frame(app: str, pycache: str) -> Start:
    """When the first frame, the estimate and the whole screen were on the pty."""
    with tempfile.TemporaryDirectory() as tmp:
        child = start(app, SIZES[0], pycache, tmp)
        try:
            markers = [FIRST[app], READY[app], WHOLE[app]]
            cpu_at: dict[bytes, float] = {}
            seen = read_until(child.master, markers, child.start + 30, child.proc.pid, cpu_at)
        finally:
            torch = stop(child)
        at = [seen.get(marker, float("nan")) - child.start for marker in markers]
        cpu = [cpu_at.get(marker, float("nan")) for marker in (markers[0], markers[2])]
        return Start(at[0], at[1], at[2], torch, cpu[0], cpu[1])


def key_presses(
    size: tuple[int, int], presses: int, pycache: str
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Both apps on screen at once, a key to each in turns: seconds from each key written
    to the last byte of the repaint it caused, and the processor seconds the app spent
    meanwhile (its quiet tail included). Pressing in turns, not a session of one app then
    one of the other, gives both the same moments of a host whose speed drifts."""
    times: dict[str, list[float]] = {"bare": [], "vramscope": []}
    cpu: dict[str, list[float]] = {"bare": [], "vramscope": []}
    with tempfile.TemporaryDirectory() as tmp:
        children: dict[str, Child] = {}
        try:
            for app in times:
                children[app] = start(app, size, pycache, tmp)
            for app, child in children.items():
                read_until(child.master, [READY[app]], child.start + 30)
            for child in children.values():
                last_byte(child.master, SETTLE_S, 30)
            for i in range(presses):
                for app, child in children.items():
                    before = cpu_ns(child.proc.pid)
                    sent = time.perf_counter()
                    os.write(child.master, KEYS[i % 2])
                    end = last_byte(child.master, QUIET_S)
                    times[app].append(float("nan") if end is None else end - sent)
                    cpu[app].append((cpu_ns(child.proc.pid) - before) / 1e9)
        finally:
            for child in children.values():
                stop(child)
    return times, cpu


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:7.1f} ms"


def bench_first_frame(runs: int, pycache: str) -> None:
    for app in ("bare", "vramscope"):
        first_frame(app, pycache)  # compiles the bytecode, as an install does
    results: dict[str, list[Start]] = {"bare": [], "vramscope": []}
    for _ in range(runs):  # in turns, so both see the same load
        for app in results:
            results[app].append(first_frame(app, pycache))
    bare = statistics.median(r.first for r in results["bare"])
    ours = results["vramscope"]
    print(f"first frame on a pty, 160x48, {runs} runs each in turns (medians; best in brackets)")
    best_bare = min(r.first for r in results["bare"])
    print(f"  bare Textual app (Static + Footer)     {ms(bare)}  [{ms(best_bare)}]")
    for label, times, target in (
        ("first frame", [r.first for r in ours], None),
        ("estimate painted", [r.ready for r in ours], None),
        ("whole screen painted", [r.whole for r in ours], WHOLE_SCREEN_TARGET),
    ):
        median = statistics.median(times)
        line = f"  vramscope explore: {label:<20} {ms(median)}  [{ms(min(times))}]   "
        line += f"{median / bare:.2f}x bare"
        if target is not None:
            verdict = "OK" if median / bare <= target else "OVER TARGET"
            line += f"   target <= {target}x   {verdict}"
        print(line)
        if target is not None:
            # Each start beside the bare one just before it: a drift in the machine's
            # speed moves both, so these ratios are steadier than the medians' ratio.
            pairs = sorted(t / b.first for t, b in zip(times, results["bare"], strict=True))
            print(
                f"    each start over the bare start before it: median "
                f"{statistics.median(pairs):.2f}x, {pairs[0]:.2f}-{pairs[-1]:.2f}x"
            )
    bare_cpu = statistics.median(r.first_cpu for r in results["bare"])
    whole_cpu = statistics.median(r.whole_cpu for r in ours)
    print(
        f"  processor time (medians): bare first frame {ms(bare_cpu)}, vramscope first "
        f"frame {ms(statistics.median(r.first_cpu for r in ours))}, whole screen "
        f"{ms(whole_cpu)}: {whole_cpu / bare_cpu:.2f}x bare"
    )
    torch = {r.torch for r in ours}
    print(f"  torch imported by vramscope: {', '.join(sorted(torch))}   (must be False)")


def bench_keys(presses: int, rounds: int, pycache: str) -> None:
    for size in SIZES:
        samples: dict[str, list[float]] = {"bare": [], "vramscope": []}
        spent: dict[str, list[float]] = {"bare": [], "vramscope": []}
        for _ in range(rounds):
            times, cpu = key_presses(size, presses, pycache)
            for app in samples:
                samples[app].extend(times[app])
                spent[app].extend(cpu[app])
        pairs = sorted(
            ours / bare
            for ours, bare in zip(samples["vramscope"], samples["bare"], strict=True)
            if ours == ours and bare == bare  # both repainted (no NaN)
        )
        for app in samples:
            samples[app] = [t for t in samples[app] if t == t]
        bare = statistics.median(samples["bare"])
        ours = statistics.median(samples["vramscope"])
        n = len(samples["vramscope"])
        print(
            f"\nkey to the last byte of its repaint, {size[0]}x{size[1]} on a pty, "
            f"{n} presses each ({rounds} sessions, both apps on screen, a key to each in "
            f"turns; quiet {QUIET_S * 1e3:.0f} ms ends one)"
        )
        for app, label in (
            ("bare", "bare app, one Static"),
            ("vramscope", "vramscope token slider"),
        ):
            values = samples[app]
            print(
                f"  {label:24} median {ms(statistics.median(values))}   "
                f"p90 {ms(statistics.quantiles(values, n=10)[-1])}   "
                f"processor {ms(statistics.median(spent[app]))}"
            )
        frame = "OK" if ours <= KEY_FRAME_S else "OVER (on an idle machine it must be)"
        print(f"  vramscope median {ms(ours)}   target <= {ms(KEY_FRAME_S)}   {frame}")
        verdict = "OK" if ours / bare <= KEY_TARGET else "OVER TARGET"
        print(f"  ratio {ours / bare:.2f}x   target <= {KEY_TARGET}x   {verdict}")
        print(
            f"    each key over the bare key just before it: median "
            f"{statistics.median(pairs):.2f}x, {pairs[0]:.2f}-{pairs[-1]:.2f}x"
        )
        cpu_ratio = statistics.median(spent["vramscope"]) / statistics.median(spent["bare"])
        print(f"    processor time per key over the bare app's: {cpu_ratio:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=COLD_RUNS, help="start-ups of each app")
    parser.add_argument("--presses", type=int, default=PRESSES, help="keys per session")
    parser.add_argument(
        "--rounds", type=int, default=3, help="key sessions per size (both apps started anew)"
    )
    parser.add_argument("--first-only", action="store_true", help="skip the key presses")
    parser.add_argument("--keys-only", action="store_true", help="skip the first frames")
    parser.add_argument("--checkout", type=Path, help="start the vramscope of this copy")
    args = parser.parse_args()
    global CHECKOUT  # one setting, read by start()
    CHECKOUT = (args.checkout or ROOT).resolve()
    load = os.getloadavg()
    print(
        f"vramscope explorer benchmark, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.1f} at the start; "
        f"vramscope of {CHECKOUT}\n"
    )
    with tempfile.TemporaryDirectory() as pycache:
        if not args.keys_only:
            bench_first_frame(args.runs, pycache)
        if not args.first_only:
            bench_keys(args.presses, args.rounds, pycache)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
