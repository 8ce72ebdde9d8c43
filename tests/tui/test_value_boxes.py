"""The explorer's boxes read core.value_grammar's forms, as the CLI flags do, and refuse
the rest with the reason shown (never clamped, never sign-stripped)."""

from __future__ import annotations

from textual.widgets import Input, Static

from core.units import GIB
from tests.tui.helpers import build_app, handled, settle, type_keys
from tui.app import VramscopeApp
from tui.model.presets import CUSTOM
from tui.model.state import MemoryChoice
from tui.widgets.memory_field import MemoryField
from tui.widgets.slider_field import SliderField
from tui.widgets.status_line import SummaryLine


def tokens(app: VramscopeApp) -> SliderField:
    return app.screen.query_one("#tokens", SliderField)


def summary(app: VramscopeApp) -> str:
    return app.screen.query_one(SummaryLine).text


def memory_reason(app: VramscopeApp) -> str:
    hint = app.screen.query_one(MemoryField).query_one(".field-hint", Static)
    return str(hint.render()) if hint.display and hint.has_class("-shown") else ""


async def test_32k_typed_on_the_token_slider_is_32768_tokens() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, "t32k\r")
        assert app.explorer.state.max_tokens == 32_768
        assert "32,768 tokens" in summary(app)


async def test_minus_5_on_the_token_slider_is_refused_not_read_as_5() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await type_keys(pilot, "t-5")
        field = tokens(app)
        assert field.input.value == "-5"
        assert field.typed_note == "must not be negative, got '-5'"
        assert app.explorer.state.max_tokens == 8192
        await type_keys(pilot, "\r")  # Enter refuses it and keeps the entry open
        assert app.explorer.state.max_tokens == 8192
        assert field.typed_note == "must not be negative, got '-5' · Esc restores 8192"
        assert "8,192 tokens" in summary(app)


async def test_minus_5_typed_in_the_token_box_itself_is_refused() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.click("#tokens Input")
        tokens(app).input.value = ""  # a click places the cursor; it selects nothing
        await type_keys(pilot, "-5")
        assert tokens(app).input.value == "-5"
        assert tokens(app).typed_note == "must not be negative, got '-5'"
        assert app.explorer.state.max_tokens == 8192


async def test_24gib_in_the_available_box_is_24_gib_and_0_is_refused_with_why() -> None:
    app = build_app(preset="gfx1151")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.click("#memory Input")
        box = app.screen.query_one("#memory Input", Input)
        box.value = ""  # a click places the cursor; it selects nothing
        await type_keys(pilot, "24GiB")
        assert app.explorer.state.memory == MemoryChoice(CUSTOM, 24 * GIB)
        assert "of 24.00 GiB" in summary(app)
        assert memory_reason(app) == ""
        box.value = ""
        await type_keys(pilot, "0")
        await handled(pilot)
        assert memory_reason(app) == (
            "Available must be more than 0 bytes, got '0'; pick This machine to detect it"
        )
        assert box.has_class("-invalid")
        assert app.explorer.state.memory == MemoryChoice(CUSTOM, 24 * GIB)  # the last size kept
        box.value = ""
        await type_keys(pilot, "-24GB")
        assert memory_reason(app) == "Available must not be negative, got '-24GB'"
        assert app.explorer.state.memory == MemoryChoice(CUSTOM, 24 * GIB)
