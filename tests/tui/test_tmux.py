"""Issue 11 with a real `vramscope` in tmux: every key string sent in one write.

The same checks as tests/tui/test_trust.py, but through a terminal: the app's
own input driver splits the burst into keys, exactly as for a user who pastes
or types fast. Each test runs its own tmux server and kills it afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.measurement.engine import Engine
from core.measurement.history import HistoryStore
from core.units import format_bytes_short
from tests.tui.tmux_driver import TmuxApp, tmux_vramscope

pytestmark = [pytest.mark.child_process, pytest.mark.slow]

ARGS = ("--preset", "gfx1151", "--backend", "rocm")


def is_summary(line: str) -> bool:
    # The summary's detail at each width: `· total `, `GiB of`, or at 60 columns the
    # verdict then `8K · 7.28 GiB · ` alone.
    return " · total " in line or " GiB of " in line or line.lstrip().startswith(VERDICTS)


VERDICTS = ("FITS ", "DOES NOT FIT ", "PLAN FITS ", "PLAN DOES NOT FIT ")


def summary(screen: str) -> str:
    return next(line for line in screen.splitlines() if is_summary(line))


def started(app: TmuxApp) -> str:
    # The summary line, not only the breakdown: the model is read after the first
    # frame, and a capture can fall between the two being repainted.
    def ready(screen: str) -> bool:
        lines = [line for line in screen.splitlines() if is_summary(line)]
        return "Quit" in screen and any("FITS" in line for line in lines)

    return app.wait_for(ready, "the first estimate")


def test_bursts_apply_whole_values_and_refuse_invalid_ones() -> None:
    with tmux_vramscope((120, 40), *ARGS) as app:
        started(app)
        app.burst("t4096\r")
        app.wait_for(lambda s: "4,096 tokens" in summary(s), "4096 tokens")
        app.burst("t1.5k\ri2G\r")
        screen = app.wait_for(lambda s: "1,536 tokens" in summary(s), "1.5k = 1536 tokens")
        assert "In-flight MiB" in screen
        app.wait_for(lambda s: "Backend in-flight   2.00 GiB" in s, "2G = 2048 MiB")
        app.burst("t5000000000\r")
        # The refusal and the summary are painted in turn: wait for both, so a capture
        # between them is not read as a 9-digit prefix kept (a prefix that stays still
        # fails here, after the wait).
        app.wait_for(
            lambda s: "at most 4,294,967,296 tokens" in s and "1,536 tokens" in summary(s),
            "the refusal, with 1,536 tokens kept",
        )
        app.key("Escape")
        app.wait_for(lambda s: "at most" not in s and " 1536 " in s, "the value restored")
        app.burst("h101\r")
        # The refusal lays the controls out again: the breakdown under them comes in the
        # same frame, but a capture can fall while tmux is still reading it. Wait for
        # both (a factor that changed never shows `1.20` and fails here, after the wait).
        app.wait_for(
            # `factor 1.20…`: the load's column beside mlxcel's cuts the note at 160x48.
            lambda s: "at most 100" in s and "factor 1.20" in s,
            "the factor refused, with 1.20 kept",
        )


def test_a_burst_of_minus_5_is_refused_and_32k_is_32768_tokens() -> None:
    # `-` once fell through the slider and `5` started the entry: -5 became 5 tokens.
    with tmux_vramscope((120, 40), *ARGS) as app:
        started(app)
        app.burst("t-5\r")
        app.wait_for(
            lambda s: "must not be negative, got '-5'" in s and "8,192 tokens" in summary(s),
            "the refusal, with 8,192 tokens kept",
        )
        app.key("Escape")  # alone: an Escape in a burst reads as Alt with the next key
        app.wait_for(lambda s: "must not be negative" not in s, "the entry closed")
        app.burst("t32k\r")
        app.wait_for(lambda s: "32,768 tokens" in summary(s), "32k = 32,768 tokens")


def commands_box(screen: str) -> str:
    """The text inside the command lines' box (top right at 160x48)."""
    lines = screen.splitlines()
    top = next(i for i, line in enumerate(lines) if "Same estimate on the command line" in line)
    left = lines[top].index("╭─ Same estimate")
    inside = []
    for line in lines[top + 1 :]:
        cell = line[left:]
        if cell.startswith("╰"):
            break
        inside.append(cell.strip("│ "))
    return "\n".join(inside)


def test_the_command_lines_on_the_terminal_follow_each_token_change() -> None:
    # A token key repaints only the command lines whose text changed: the terminal must
    # show every line new, none left from before.
    with tmux_vramscope((160, 48), *ARGS) as app:
        started(app)
        # The command lines are in the body, painted after the first frame: wait for
        # them (a screen still for 0.3 s under load was the first frame alone).
        app.wait_for(
            lambda s: (
                "Same estimate on the command line" in s
                and commands_box(s).count("--max-tokens 8192") == 2
            ),
            "both command lines at 8192 tokens",
        )
        assert "8192" in commands_box(app.settle())
        for typed, tokens in (("t32k\r", "32768"), ("t4096\r", "4096"), ("t1m\r", "1048576")):
            app.burst(typed)
            screen = app.wait_for(
                lambda s, t=tokens: commands_box(s).count(f"--max-tokens {t}") == 2,
                f"both command lines at {tokens} tokens",
            )
            box = commands_box(app.settle())
            # The same lines once still (the box may grow by an empty line meanwhile: a
            # read landing late under load lengthens the controls beside it).
            assert box.split() == commands_box(screen).split()
            for old in ("8192", "32768", "4096"):
                if old != tokens:
                    assert f"--max-tokens {old}" not in box


def test_at_60x20_the_verdict_total_model_quit_and_help_are_in_view() -> None:
    with tmux_vramscope((60, 20), *ARGS) as app:
        screen = started(app)
        lines = screen.splitlines()
        assert len(lines) <= 20
        assert "FITS  8K · 7.28 GiB · …/Meta-Llama-3.1-8B-Instruct-4bit" in summary(screen)
        assert lines[-1].startswith("q Quit ? Help")
        app.burst("t1m\r")
        app.wait_for(lambda s: "DOES NOT FIT  1M! · " in summary(s), "the verdict change")


def test_a_resize_round_trip_redraws_everything() -> None:
    with tmux_vramscope((160, 48), *ARGS) as app:
        started(app)
        # Every read in: the model list's count and the calibrated verdict (gfx1151's
        # preset gets the built-in calibration), which make the breakdown taller.
        app.wait_for(lambda s: " models ─" in s and "Verdict held against" in s, "all reads")
        wide = app.settle()
        app.resize(80, 24)
        # The whole 80x24 frame: a capture may fall while the resize is being repainted.
        narrow = app.wait_for(
            lambda s: (
                len(s.splitlines()) <= 24
                and "Quit" in s
                and any(is_summary(line) for line in s.splitlines())
            ),
            "80x24",
        )
        assert "FITS" in summary(narrow)
        app.resize(160, 48)
        # The same screen again, to the character (a loaded machine may take a while to
        # repaint every widget at the width it has again).
        app.wait_for(lambda s: s == wide, "the 160x48 screen as it was")


def test_m_in_a_burst_shows_progress_then_the_measured_peak_on_the_summary(
    tiny_model: Path,
) -> None:
    """`m` on a real tiny model at 80x24, where the measure panel is below the fold:
    the summary line says the run is going, then gives the peak the child measured
    (the one appended to the history) and whether the estimate covers it."""
    with tmux_vramscope((80, 24), "-m", str(tiny_model), "--max-tokens", "32", *ARGS) as app:
        started(app)
        app.burst("m")
        running = app.wait_for(lambda s: "measuring (torch)" in summary(s), "the progress")
        done = app.wait_for(lambda s: " · measured " in summary(s), "the measured peak")
    assert "FITS" in summary(running)
    (peak,) = HistoryStore.default().read().results
    assert (peak.prompt_tokens, peak.gen_tokens, peak.engine) == (16, 16, Engine.TORCH)
    verdict = "✓ covered" if peak.estimate_bytes >= peak.peak_bytes else "✗ NOT covered"
    # 80 columns: the model name is cut to make room, and the engine at the end may be.
    assert f"measured {format_bytes_short(peak.peak_bytes)} {verdict}" in summary(done)


def test_with_memory_limit_the_arrow_keys_move_the_token_slider() -> None:
    # --memory-limit once started with focus in the Available box: the burst below
    # typed 32 KiB available and the arrows never reached the slider.
    with tmux_vramscope((120, 40), "--memory-limit", "24GB", "--backend", "rocm") as app:
        screen = started(app)
        assert "24.00 GiB" in summary(screen)
        before = summary(screen)
        app.burst("\x1b[C\x1b[C")  # two Right arrows in one write
        screen = app.wait_for(lambda s: summary(s) != before, "the context to move")
        assert "24.00 GiB" in summary(screen)
        assert "8,192 tokens" not in summary(screen)


def test_at_60x20_the_footer_is_whole_and_help_lists_the_devices_keys() -> None:
    # Issue #17: the footer ended in a stray letter (`^p palettea`) and `?` had no `d`.
    with tmux_vramscope((60, 20), *ARGS) as app:
        started(app)
        # The footer is composed once the bindings are known: wait for its keys, then for
        # the screen to stop changing, and read what stays.
        app.wait_for(lambda s: s.splitlines()[-1].startswith("q Quit ? Help"), "the footer")
        footer = app.settle().splitlines()[-1]
        assert footer.rstrip().endswith("^p palette")
        assert footer.startswith("q Quit ? Help / Models")
        app.burst("?")
        app.wait_for(lambda s: "keys and controls" in s, "the help")
        app.key("End")  # the help's end: the controls
        # End scrolls with an animation: wait for its last rows, then read the screen.
        app.wait_for(lambda s: "through mlx-lm" in s, "the help's Measure with row")
        help_text = app.settle()
        assert "Per device" in help_text and "rank order" in help_text
        assert "Measure with     torch" in help_text
        app.burst("q")
        app.wait_for(lambda s: "keys and controls" not in s, "help closed")
        # d then w in one write: two devices, measured with mlx; the footer stays whole.
        app.burst("dw")
        screen = app.wait_for(lambda s: "mlx.launch" in s or "2×TP" in s, "two devices")
        assert screen.splitlines()[-1].rstrip().endswith("^p palette")


def test_a_burst_through_tab_lands_every_character_in_the_next_box() -> None:
    # `a` then Tab and a size in one write: Tab moved focus only once it had bubbled up
    # from the picker, and the `3` that followed went to the picker: 2GB, not 32GB.
    with tmux_vramscope((160, 48), *ARGS) as app:
        started(app)
        app.burst("a\t32GB")
        app.wait_for(lambda s: "32.00 GiB available · typed size" in s, "32GB typed")
        app.burst("\x1b[Z")  # Shift+Tab, back to the picker, then on into the box again
        app.burst("\t48GB")
        app.wait_for(lambda s: "48.00 GiB available · typed size" in s, "48GB typed")


def test_a_burst_with_backspaces_edits_the_filter_in_the_order_typed() -> None:
    # A Backspace bubbled up to the app before it took effect, and the letters typed
    # after it came first: `qwex` Backspace `n` filtered by `qwex` and listed nothing.
    with tmux_vramscope((160, 48), *ARGS) as app:
        started(app)
        app.burst("/qwex\x7fn")
        # The box and the list it filters are painted in turn: wait for both.
        app.wait_for(
            lambda s: "│qwen " in s and "Qwen3" in s.split("│qwen ", 1)[1],
            "the filter reading qwen, and the list filtered by it",
        )


def test_a_plain_key_then_a_jump_in_one_burst_are_taken_in_that_order() -> None:
    # `n` (the next backend: CPU to ROCm) then the in-flight jump: Textual ran the jump
    # first, on the CPU, where the in-flight slider is inactive.
    with tmux_vramscope((160, 48), "--preset", "gfx1151", "--backend", "cpu") as app:
        started(app)
        app.burst("ni2048\r")
        app.wait_for(lambda s: "Backend in-flight   2.00 GiB" in s, "ROCm, then 2048 MiB in flight")


def test_keys_typed_with_the_one_that_opens_the_fits_view_land_in_its_filter() -> None:
    # `f/qwen` in one write: `q` reached the Fits view's table before its filter, and quit.
    with tmux_vramscope((160, 48), *ARGS) as app:
        started(app)
        app.burst("f/qwen")
        app.wait_for(
            lambda s: "What fits" in s and "│ qwen " in s and "Qwen/Qwen3" in s,
            "the Fits view filtered by qwen",
        )
