"""Explorer test setup: no cursor blink, so snapshots with a focused box are stable."""

from __future__ import annotations

import pytest
from textual.widgets import Input


@pytest.fixture(autouse=True)
def _no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor would make every snapshot with a focused box flaky."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
