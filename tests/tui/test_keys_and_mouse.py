"""Keyboard alone and mouse alone: focus order, slider keys, clicks, drags, help, palette, quit."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.widget import Widget
from textual.widgets import Input

from core.backend import Backend
from core.measurement.result import MeasuredPeak
from core.units import MIB
from tests.factories import burst
from tests.tui.helpers import (
    LLAMA,
    breakdown_bytes,
    build_app,
    fixed_deps,
    handled,
    settle,
    wait_for,
    widget_lines,
)
from tui.app import make_app
from tui.model.state import LaunchOptions
from tui.screens.help_screen import HelpScreen
from tui.widgets.controls import Controls
from tui.widgets.measured_panel import MeasuredPanel
from tui.widgets.model_list import ModelList
from tui.widgets.segmented import Segmented
from tui.widgets.slider_field import SliderField
from tui.widgets.stop_slider import StopSlider


def focused_name(app) -> str:  # type: ignore[no-untyped-def]
    """Which control has focus, as `field-id/part`."""
    widget = app.focused
    assert widget is not None
    for ancestor in widget.ancestors_with_self:
        if ancestor.id is not None:
            return f"{ancestor.id}/{type(widget).__name__}"
    return type(widget).__name__


async def test_tab_walks_the_controls_in_the_order_they_are_listed() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        order = [focused_name(app)]
        for _ in range(16):
            await pilot.press("tab")
            order.append(focused_name(app))
        # Focus starts on the token slider; the model list and the scrolling main area
        # come next (they sit first in the layout, so the chain wraps to them).
        assert order == [
            "tokens/StopSlider",
            "tokens/ValueInput",
            "inflight/StopSlider",
            "inflight/ValueInput",
            "batch/StopSlider",
            "batch/ValueInput",
            "kv/Segmented",
            "factor/StopSlider",
            "factor/ValueInput",
            "backend/Segmented",
            "memory/Select",
            "memory/BoxInput",
            "engine/Segmented",
            "model-filter/BoxInput",
            "model-options/KeptOptionList",
            "main/KeptScroll",
            "tokens/StopSlider",
        ]


async def test_the_panel_holding_the_focus_has_the_accent_border() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        accent = Color.parse(app.theme_variables["accent"])
        controls, models = app.screen.query_one(Controls), app.screen.query_one(ModelList)

        def colour(widget: Widget) -> Color:
            return widget.styles.border_top[1]

        assert colour(controls) == accent  # focus starts on the token slider
        assert colour(models) != accent
        await pilot.press("slash")
        await pilot.pause()
        assert colour(models) == accent
        assert colour(controls) != accent
        await pilot.press("escape", "tab", "tab")  # from one control to another
        await pilot.pause()
        assert focused_name(app) == "inflight/StopSlider"
        assert colour(controls) == accent
        await pilot.resize_terminal(80, 24)  # narrow: the controls have no border at all
        await pilot.pause()
        assert controls.styles.border_top[0] in ("", "none")
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert colour(controls) == accent


async def test_slider_keys_page_home_and_end() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        state = lambda: app.explorer.state  # noqa: E731
        await pilot.press("home")
        assert state().max_tokens == 256
        await pilot.press("pageup")
        assert state().max_tokens == 512  # four stops per octave
        await pilot.press("right")
        assert state().max_tokens == 640
        await pilot.press("end")
        assert state().max_tokens == 131072  # the model's max_position_embeddings
        await pilot.press("pagedown", "left")
        assert state().max_tokens == 57344
        await pilot.press("b", "right", "right")
        assert state().batch == 3
        await pilot.press("h", "right")
        assert state().headroom_factor == 1.25


async def test_a_slider_key_moves_it_as_its_binding_does() -> None:
    # The slider takes its own keys in `on_key` (not by bubbling up to the app's binding
    # check): each key of its BINDINGS must do what the binding's action does.
    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield StopSlider(40, 20.0)

    app = One()
    async with app.run_test() as pilot:
        slider = app.query_one(StopSlider)
        slider.focus()
        for binding in StopSlider.BINDINGS:
            assert isinstance(binding, Binding)
            for start in (0.0, 20.0, 39.0):
                slider.set_position(start)
                await app.run_action(binding.action, slider)
                by_action = slider.position
                slider.set_position(start)
                await pilot.press(binding.key)
                assert slider.position == by_action, binding.key
        assert slider.position != 20.0  # the keys moved it


async def test_mouse_click_and_drag_on_a_slider() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        slider = app.screen.query_one("#inflight", SliderField).slider
        await pilot.click(slider, offset=(0, 0))
        await handled(pilot)
        assert app.explorer.state.inflight_mib == 0
        assert "Backend in-flight" not in breakdown_bytes(app)
        last = slider.content_region.width - 1
        await pilot.click(slider, offset=(last, 0))
        await handled(pilot)
        assert app.explorer.state.inflight_mib == 8192
        tokens = app.screen.query_one("#tokens", SliderField).slider
        await pilot.mouse_down(tokens, offset=(0, 0))
        await handled(pilot)
        assert app.explorer.state.max_tokens == 256
        await pilot.hover(tokens, offset=(tokens.content_region.width - 1, 0))
        await pilot.mouse_up(tokens, offset=(tokens.content_region.width - 1, 0))
        await handled(pilot)
        assert app.explorer.state.max_tokens == 131072
        assert app.mouse_captured is None


async def test_mouse_click_picks_options_and_models() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        kv = app.screen.query_one("#kv", Segmented)
        await pilot.click(kv, offset=(8, 0))  # " fp16 " then a gap, then " int8 "
        assert app.explorer.state.kv_int8
        backend = app.screen.query_one("#backend", Segmented)
        await pilot.click(backend, offset=(16, 0))  # ROCm, CUDA, then Metal
        assert app.explorer.state.backend is Backend.METAL
        options = app.screen.query_one("#model-options")
        await pilot.click(options, offset=(4, 2))  # the first row under the group heading
        await settle(pilot)
        assert app.explorer.state.model == "deepseek-ai/DeepSeek-V2-Lite"


async def test_help_opens_on_question_mark_and_closes_again() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")  # q closes the help; it does not quit
        assert not isinstance(app.screen, HelpScreen)
        assert app.is_running
        await pilot.press("question_mark", "escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_palette_entries_drive_the_controls() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title in (
            "Backend: CUDA",
            "KV dtype: int8",
            "In-flight budget: 4096 MiB",
            "In-flight budget: off (0): unbounded, not modelled",
            "Available memory: Instinct MI300X 192 GiB",
            "Copy the mlxcel command",
            "Keys and controls",
        ):
            assert title in commands
        commands["In-flight budget: 4096 MiB"].callback()
        await pilot.pause()
        assert breakdown_bytes(app)["Backend in-flight"] == 4096 * MIB
        assert app.screen.query_one("#inflight", SliderField).input.value == "4096"
        commands["Backend: CUDA"].callback()
        await pilot.pause()
        assert app.explorer.state.backend is Backend.CUDA


async def test_c_copies_the_command_lines(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    app = build_app(preset="gfx1151")
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c", "C")
    assert copied[0].startswith(f"vramscope inspect {LLAMA} --max-tokens 8192 --backend rocm")
    assert copied[1].startswith("MLX_ROCM_MAX_INFLIGHT_MB=1024 ")


async def test_a_given_measured_peak_is_shown_beside_the_estimate() -> None:
    peak = MeasuredPeak(
        model=LLAMA,
        device_kind="rocm",
        device_name="Radeon 8060S (gfx1151)",
        peak_bytes=6_000_000_000,
        peak_kind="torch allocator peak",
        inflight_mib=1024,
        prompt_tokens=512,
        gen_tokens=128,
        synthetic_weights=True,
        load_seconds=1.0,
        prefill_tokens_per_s=100.0,
        decode_tokens_per_s=10.0,
        torch_version="2.13.0",
    )
    app = make_app(fixed_deps(), LaunchOptions(preset="gfx1151"), peak)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(MeasuredPanel)
        text = "\n".join(widget_lines(panel.query_one("#measured-text")))
        # mlxcel's worked example: 6,653,428,633 bytes at 640 tokens with the default budget;
        # the screen is at 8,192 tokens, and the panel says the estimate is the run's.
        assert (
            "Estimate          6.20 GiB  6,653,428,633 bytes  at 640 tokens, the run's settings"
            in text
        )
        assert "the run had 640 tokens; the screen has 8,192 tokens" in text
        assert "Margin          +623.2 MiB   +653,428,633 bytes  +10.9%  ✓ covered" in text
        assert "synthetic weights" in text


async def test_a_peak_handed_over_later_appears_and_can_be_cleared() -> None:
    peak = MeasuredPeak(
        LLAMA, "cpu", "cpu", 7 * 1024**3, "peak RSS", 0, 512, 128, True, 0, 0, 0, ""
    )
    app = make_app(fixed_deps(), LaunchOptions(preset="gfx1151"))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(MeasuredPanel)
        assert not panel.display
        app.explorer.measure.show(peak)
        await pilot.pause()
        assert panel.display
        assert "✗ NOT covered" in "\n".join(widget_lines(panel.query_one("#measured-text")))
        app.explorer.measure.show(None)
        await pilot.pause()
        assert not panel.display


async def test_a_measured_peak_for_another_model_stays_hidden() -> None:
    peak = MeasuredPeak("other/model", "cpu", "cpu", 1, "rss", 0, 1, 0, True, 0, 0, 0, "2.13.0")
    app = make_app(fixed_deps(), LaunchOptions(preset="gfx1151"), peak)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one(MeasuredPanel).display


async def test_a_digit_on_a_slider_starts_typing_in_its_box() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert isinstance(app.focused, StopSlider)
        await pilot.press("3", "2", "k", "enter")
        assert app.explorer.state.max_tokens == 32768
        assert isinstance(app.focused, StopSlider)


@pytest.mark.parametrize(
    "options",
    [{"memory_limit": 24 << 30}, {"preset": "rtx4090"}, {"backend": Backend.CUDA}, {}],
    ids=["memory-limit", "preset", "backend", "none"],
)
async def test_focus_starts_on_the_token_slider_whatever_the_flags(options: dict) -> None:
    # `vramscope --memory-limit 24GB` started in the Available box: typing 32768 set
    # 32 KiB available, and the arrow keys never reached the slider.
    from tui.widgets.stop_slider import StopSlider

    app = build_app(**options)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert isinstance(app.focused, StopSlider)
        before = app.explorer.state.max_tokens
        await pilot.press("right")
        await settle(pilot)
        assert app.explorer.state.max_tokens > before
        if "memory_limit" in options:
            assert app.explorer.state.memory.custom_bytes == 24 << 30


async def test_the_key_of_an_inactive_control_says_why_and_what_follows_changes_nothing(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    # On the CPU the in-flight slider is inactive: `i` left focus on the token slider,
    # and `i2048` Enter set the token count to 2048.
    app = build_app(backend=Backend.CPU)
    told: list[str] = []
    real_notify = app.notify

    def notify(message: str, **kw) -> None:  # type: ignore[no-untyped-def]
        told.append(message)
        real_notify(message, **kw)

    monkeypatch.setattr(app, "notify", notify)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "i2048\r")
        await handled(pilot)
        s = app.explorer.state
        assert (s.max_tokens, s.inflight_mib) == (8192, 1024)
        assert told == [
            "In-flight MiB is inactive on CPU: only ROCm builds reserve it (n changes the backend)"
        ]
        # n: the next backend (ROCm), where it counts. In one burst: `i` is a priority
        # binding, which Textual ran before the plain `n` typed ahead of it.
        burst(app, "ni2048\r")
        await handled(pilot)
        s = app.explorer.state
        assert (s.backend, s.max_tokens, s.inflight_mib) == (Backend.ROCM, 8192, 2048)


async def test_a_held_key_goes_even_if_the_one_before_never_says_it_was_handled(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    # A key whose answer never comes while its widget stays (which Textual's queues do
    # not do) must not hold the keys behind it for ever: tui/key_order.py's hang guard,
    # shortened here, lets them go, in order.
    from tui import key_order
    from tui.app import VramscopeApp
    from tui.key_order import KeyHandled

    monkeypatch.setattr(key_order, "GIVE_UP_S", 1.0)
    real = VramscopeApp.on_key_handled
    lost: list[int] = []

    def lose_the_first(app: VramscopeApp, message: KeyHandled) -> None:
        if lost:
            real(app, message)
        else:
            message.stop()
            lost.append(message.number)

    monkeypatch.setattr(VramscopeApp, "on_key_handled", lose_the_first)
    app = build_app(backend=Backend.CPU)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        keys = "ni2048\r"
        burst(app, keys)
        order = app.key_order
        await wait_for(pilot, lambda: order.taken == len(keys) and order.idle, "the keys")
        assert lost == [1], "the first key's answer was lost"
        s = app.explorer.state
        assert (s.backend, s.max_tokens, s.inflight_mib) == (Backend.ROCM, 8192, 2048)


async def test_keys_after_one_that_opens_a_screen_land_in_that_screen() -> None:
    # `f` opens the Fits view; `/` and `qwen` typed with it name its filter. Held until
    # `f` was handled, `/` still ran before the view's own focus (on its table, asked for
    # as it mounted), and `q` on the table quit the app.
    from tui.screens.fits_screen import FitsScreen

    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        burst(app, "f/qwen")
        for _ in range(3):
            await handled(pilot)
        assert isinstance(app.screen, FitsScreen)
        assert app.screen.query_one("#fits-filter", Input).value == "qwen"
        assert app.is_running
