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

A widget that takes a key itself and stops it (a slider's arrows) may send the
`KeyHandled` behind it straight to the app: no queue above it holds that key.

Only the answer for the key out lets the next go: each `KeyHandled` carries its key's
number. Time never lets a key go while the one before can still answer (its widget is
still in the app): on a loaded machine `s` of `dswp24GB` once sat in the slider's queue
past a half-second limit, `w` and then `p` were let go behind it, `p` moved focus into
a text box, and Textual runs no screen binding of a printable key under a text box:
`s` and `w` were lost. A key whose widget went away is given up on at once; one whose
widget stays but never answers, after `GIVE_UP_S` (a hang guard; Textual's queues do
not drop a message of a widget that stays).
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

CHECK_S = 0.5
"""How often held keys look whether the key out can still answer (its widget there)."""

GIVE_UP_S = 10.0
"""The longest keys are held behind one whose widget stays but never answers."""

SCREEN_POLL_S = 0.005
"""How often a held key looks whether the screen a key before it opened is in."""


class KeyHandled(Message):
    """The key handed out right before this message has been handled."""

    def __init__(self, number: int) -> None:
        super().__init__()
        self.number = number
        """Which key (`KeyOrder.taken` when it was handed out)."""


class KeyOrder:
    """Which keys the app takes now and which wait, and letting them go in order."""

    def __init__(self, app: App[Any], take: Callable[[events.Key], Awaitable[None]]) -> None:
        self._app = app
        self._take = take
        self._out: MessagePump | None = None  # where the key in flight went
        self._held: deque[events.Key] = deque()
        self._screen: Screen[Any] | None = None  # the screen the held keys were typed on
        self._limit: Timer | None = None
        self._waited_s = 0.0  # held without progress, in CHECK_S steps
        self.taken = 0
        """Keys given to Textual so far (held ones once let go)."""

    @property
    def idle(self) -> bool:
        """No key held and none out (or its widget gone): every key typed so far has
        been handled."""
        return not self._held and (self._out is None or not self._out.is_attached)

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
            self._arm(0.0)
        return True

    def handed_out(self, target: MessagePump) -> None:
        """`target` was given a key: the next waits until its `KeyHandled` comes back."""
        self.taken += 1
        self._out = target
        target.post_message(KeyHandled(self.taken))

    def handled(self, number: int) -> None:
        """Key `number` has been handled: if it is the one out, let the held keys go, in
        order (a late answer for a key given up on lets nothing go)."""
        if number != self.taken:
            return
        self._out = None
        # From the end of the app's queue: what the key's action asked of the app is
        # queued there (a focus: `/` in the Fits view focuses its filter), and the next
        # key must find it done. Taken at once, under load `q` of `f/qwen` reached the
        # table before the filter had focus, and quit.
        self._app.call_later(self._let_go)

    def _arm(self, waited_s: float) -> None:
        self._waited_s = waited_s
        self._limit = self._app.set_timer(CHECK_S, self.check_held)

    async def check_held(self) -> None:
        """The hold's timer: lets the held keys go once what is out has answered, gone,
        or been waited on for GIVE_UP_S."""
        self._limit = None
        out = self._out
        waited_s = self._waited_s + CHECK_S
        if self._closing():
            return
        screen = self._app.screen
        coming = out.is_attached if out is not None else not screen.is_mounted
        if coming and waited_s < GIVE_UP_S:
            # Still on its way (a slow widget, a loaded machine), or a screen a key
            # opened still mounting: only time has passed.
            self._arm(waited_s)
            return
        self._out = None  # what is still out is not coming back
        if waited_s >= GIVE_UP_S:
            self._screen = screen  # nor is a screen that never mounted
        # Else a screen a key opened is in: `_let_go` goes on from the end of the queue
        # its mount used (taking a key here, under load, ran `/` of `f/qwen` before the
        # Fits view focused its table, and `q` on the table quit).
        await self._let_go()

    def _closing(self) -> bool:
        """The app is ending (its screens already gone): the held keys go nowhere. A
        timer armed before the quit still fires; `app.screen` would raise."""
        if self._app.screen_stack:
            return False
        self._held.clear()
        self._out = None
        return True

    async def _let_go(self) -> None:
        if self._closing():
            return
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
            self._arm(0.0)
