"""Keys taken in the order they were typed, a jump key's too.

Textual runs a priority binding (the explorer's jumps: `t` `i` `b` ...) the moment the
app takes the key from its queue, but hands any other key to the focused widget, and
that key's binding runs only once it has bubbled back up to the app, a queue per
container on the way. In one burst a plain key was overtaken by a jump typed after it:
`n` then `i2048` jumped to the in-flight slider before `n` changed the backend.

`KeyOrder` holds a key that has a priority binding until every key handed out before it
has been handled. It knows that by a `KeyHandled` message posted to the same widget
right behind each key: every queue is first in, first out, so the message reaches the
app only after its key has been handled, wherever that was. Keys after a held key are
held too, and all are let go in order, one handled before the next.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.app import App
from textual.message import Message
from textual.message_pump import MessagePump
from textual.timer import Timer

HOLD_LIMIT_S = 0.5
"""The longest a key is held: a widget that goes away with a key on its queue never
answers for it, and a key must never be held for good."""


SCREEN_POLL_S = 0.005
"""How often a held key looks whether the screen a key before it opened is in."""


class KeyHandled(Message):
    """The key handed out right before this message has been handled."""


class KeyOrder:
    """Which keys the app takes now and which wait, and letting them go in order."""

    def __init__(self, app: App[Any], take: Callable[[events.Key], Awaitable[None]]) -> None:
        self._app = app
        self._take = take
        self._out = 0  # keys handed out whose KeyHandled has not come back
        self._held: deque[events.Key] = deque()
        self._screen: object = None  # the screen the held keys were typed on
        self._limit: Timer | None = None

    def hold(self, event: events.Key) -> bool:
        """Hold `event` (True) while it would overtake a key handed out before it."""
        if not self._held and not (self._out and self._jumps(event.key)):
            return False
        if not self._held:
            self._screen = self._app.screen
        self._held.append(event)
        if self._limit is None:
            self._limit = self._app.set_timer(HOLD_LIMIT_S, self._give_up)
        return True

    def handed_out(self, target: MessagePump) -> None:
        """`target` was given a key: count it until its `KeyHandled` comes back."""
        self._out += 1
        target.post_message(KeyHandled())

    async def handled(self) -> None:
        """A key handed out has been handled: let the held keys go, in order."""
        self._out = max(0, self._out - 1)
        await self._let_go()

    async def _give_up(self) -> None:
        self._limit = None
        self._out = 0  # what is still out is not coming back
        self._screen = self._app.screen  # nor is a screen that never mounted
        await self._let_go()

    async def _let_go(self) -> None:
        while self._held and not self._out:
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

    def _jumps(self, key: str) -> bool:
        """Whether `key` has a priority binding on the screen now (it would run at once)."""
        return any(
            binding.priority
            for _, bindings in self._app.screen._binding_chain
            for binding in bindings.key_to_bindings.get(key, ())
        )
