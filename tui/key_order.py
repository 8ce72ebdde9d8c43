"""Keys taken in the order they were typed.

Textual hands a key to the focused widget, and the key's binding runs only once it has
bubbled back up to the app, a queue per container on the way; a printable key in a
text box and a priority binding (the explorer's jumps: `t` `i` `b` ...) take effect at
once. In one burst the keys typed later overtook the earlier ones: `ni2048` jumped to
the in-flight slider before `n` changed the backend, and three Backspaces and `2` in a
box holding `8192` left `81` (a bare Textual 8.2.8 app does the same).

`KeyOrder` hands out one key at a time: the next waits until the one before has been
handled. It knows that by a `KeyHandled` message posted to the same widget right
behind the key: every queue is first in, first out, so the message reaches the app
only after its key has been handled, wherever that was. A key typed alone, after the
one before is done, goes at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.app import App
from textual.message import Message
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.timer import Timer

HOLD_LIMIT_S = 0.5
"""The longest a key is held without progress, whatever happened to the one before."""

SCREEN_POLL_S = 0.005
"""How often a held key looks whether the screen a key before it opened is in."""


class KeyHandled(Message):
    """The key handed out right before this message has been handled."""


class KeyOrder:
    """Which keys the app takes now and which wait, and letting them go in order."""

    def __init__(self, app: App[Any], take: Callable[[events.Key], Awaitable[None]]) -> None:
        self._app = app
        self._take = take
        self._out: MessagePump | None = None  # where the key in flight went
        self._held: deque[events.Key] = deque()
        self._screen: Screen[Any] | None = None  # the screen the held keys were typed on
        self._limit: Timer | None = None

    def hold(self, event: events.Key) -> bool:
        """Hold `event` (True) while a key before it is still being handled."""
        if self._out is not None and not self._out.is_attached:
            self._out = None  # its widget went away (a screen closed): no answer is coming
        if not self._held and self._out is None:
            return False
        if not self._held:
            self._screen = self._app.screen
        self._held.append(event)
        if self._limit is None:
            self._limit = self._app.set_timer(HOLD_LIMIT_S, self._give_up)
        return True

    def handed_out(self, target: MessagePump) -> None:
        """`target` was given a key: the next waits until its `KeyHandled` comes back."""
        self._out = target
        target.post_message(KeyHandled())

    async def handled(self) -> None:
        """The key handed out has been handled: let the held keys go, in order."""
        self._out = None
        await self._let_go()

    async def _give_up(self) -> None:
        self._limit = None
        self._out = None  # what is still out is not coming back
        self._screen = self._app.screen  # nor is a screen that never mounted
        await self._let_go()

    async def _let_go(self) -> None:
        if self._held and self._out is None:
            screen = self._app.screen
            if screen is not self._screen:
                # A key let go opened a screen (`f`, `?`), and the keys after it name its
                # widgets (`f/qwen`: the Fits view's filter). They mount on the screen's
                # own task, and what its mount asks of the app (a focus) waits on the
                # app's queue: go on from the end of that queue once the screen is in.
                if screen.is_mounted:
                    self._screen = screen
                    self._app.call_later(self._let_go)
                else:
                    self._app.set_timer(SCREEN_POLL_S, self._let_go)
                return
            await self._take(self._held.popleft())
        # The limit runs from the last key let go: it counts time without progress.
        if self._limit is not None:
            self._limit.stop()
            self._limit = None
        if self._held:
            self._limit = self._app.set_timer(HOLD_LIMIT_S, self._give_up)
