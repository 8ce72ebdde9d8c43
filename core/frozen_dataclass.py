"""`frozen_dataclass`: `dataclass(frozen=True)`, its methods made when the class is first used.

Python 3.11's `dataclass` compiles a frozen class's six methods (`__init__`, `__repr__`,
`__eq__`, `__hash__`, `__setattr__`, `__delattr__`) with one `exec` each, as the class
is defined: about 0.5 ms a class here. Of the ~100 classes imported before the
explorer's first frame, that frame makes instances of about half; the rest (a
measurement's result, the probes' readings, the Hub's records) wait for a key or never
come. This decorator hands the class to `dataclasses.dataclass` unchanged, with the
same arguments, the first time the class is needed:

- its first instance (made through the class's `__new__`, a stand-in that makes it);
- the first look at what `dataclass` adds to the class itself (`__dataclass_fields__`,
  `__dataclass_params__`, `__match_args__`: so `dataclasses.fields(cls)`,
  `is_dataclass(cls)` and a pattern naming the class see the made class), or at its
  signature (`inspect.signature(cls)`);
- a subclass decorated in turn (its bases are made first, as `dataclass` reads them).

What it makes is what `dataclass` makes (tests/core/test_frozen_dataclass.py compares
them), but for a `__new__` that only calls `object.__new__` (about 0.15 us an instance).
A lock makes each class once when threads race.
`slots=True` needs a new class object, so it has no lazy form: use `dataclass`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_CLASS_ATTRIBUTES = ("__dataclass_fields__", "__dataclass_params__", "__match_args__")
"""What `dataclass` sets on the class itself: each makes the class when first read."""
_TRIGGERS = (*_CLASS_ATTRIBUTES, "__signature__")
"""Read first on the class: each makes it (`__signature__`: what `inspect` reads first)."""

_LOCK = threading.RLock()
_PENDING: dict[type, dict[str, Any]] = {}
"""The classes not made yet, each with the arguments `dataclass` will get."""


class _Unmade:
    """One of `_TRIGGERS` on a class not made yet: reading it makes the class."""

    __slots__ = ("name", "owner")

    def __init__(self, owner: type, name: str) -> None:
        self.owner = owner
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        make(self.owner)
        return getattr(owner if owner is not None else self.owner, self.name)


def make(cls: type) -> None:
    """Run `dataclass` on `cls` now if it waits (and first on its bases that wait)."""
    if cls not in _PENDING:  # made, and the class whole: it leaves `_PENDING` last
        return
    with _LOCK:
        arguments = _PENDING.get(cls)
        if arguments is None:  # another thread made it while this one waited
            return
        for base in cls.__mro__[1:]:
            make(base)
        # `dataclass` adds only what the class does not define itself: the stand-ins go.
        for name in _TRIGGERS:
            if isinstance(cls.__dict__.get(name), _Unmade):
                delattr(cls, name)
        dataclasses.dataclass(cls, **arguments)
        cls.__new__ = staticmethod(_made_new(cls))  # type: ignore[method-assign]
        del _PENDING[cls]


def _made_new(cls: type) -> Callable[..., Any]:
    """The `__new__` a made class keeps in place of the stand-in's."""

    def __new__(kind: type, /, *args: Any, **kwargs: Any) -> Any:
        return object.__new__(kind)

    __new__.__qualname__ = f"{cls.__qualname__}.__new__"
    # `inspect.signature(cls)` reads `__new__` before `__init__`: this leads it on to the
    # parameters `dataclass` made.
    __new__.__wrapped__ = cls.__dict__["__init__"]  # type: ignore[attr-defined]
    __new__.stands_in = True  # type: ignore[attr-defined]
    return __new__


def _own_new(cls: type) -> bool:
    """True if the class defines a `__new__` other than this module's."""
    new = cls.__dict__.get("__new__")
    return new is not None and not getattr(getattr(new, "__func__", None), "stands_in", False)


def _defer(cls: type[T], arguments: dict[str, Any]) -> type[T]:
    if (
        not cls.__dict__.get("__doc__")  # `dataclass` writes it from the signature
        or "__slots__" in cls.__dict__
        or any(_own_new(base) for base in cls.__mro__[:-1])
    ):
        return dataclasses.dataclass(cls, **arguments)  # made now
    _PENDING[cls] = arguments
    for name in _TRIGGERS:
        setattr(cls, name, _Unmade(cls, name))

    # Every instance begins in `__new__`: this stand-in makes the class there, before
    # `type.__call__` looks `__init__` up (so it finds the one `dataclass` made), and
    # also for an instance made without `__init__` (`pickle`, `copy`). It stays: a
    # class's own `__new__` cannot be taken back in CPython (the slot would keep calling
    # `object.__new__` with the arguments): once the class is made, a plain one takes
    # its place (`_made_new`). Removing an `__init__` stand-in instead would open a moment in
    # which another thread's `cls(...)` met `object.__init__`.
    def __new__(kind: type, /, *args: Any, **kwargs: Any) -> Any:
        make(cls)
        return object.__new__(kind)

    __new__.__qualname__ = f"{cls.__qualname__}.__new__"
    __new__.stands_in = True  # type: ignore[attr-defined]
    cls.__new__ = staticmethod(__new__)  # type: ignore[assignment]
    return cls


@overload
def frozen_dataclass(cls: type[T], /) -> type[T]: ...


@overload
def frozen_dataclass(*, eq: bool = True, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen_dataclass(
    cls: type[T] | None = None, /, *, eq: bool = True, kw_only: bool = False
) -> type[T] | Callable[[type[T]], type[T]]:
    """`@dataclass(frozen=True)` (with `eq` and `kw_only` as `dataclass` takes them),
    made when the class is first used."""
    arguments: dict[str, Any] = {"frozen": True, "eq": eq, "kw_only": kw_only}
    if cls is None:
        return lambda c: _defer(c, arguments)
    return _defer(cls, arguments)
