"""`frozen_dataclass`: `dataclass(frozen=True)`, its methods made when the class is first used.

Python 3.11's `dataclass` compiles a frozen class's six methods (`__init__`, `__repr__`,
`__eq__`, `__hash__`, `__setattr__`, `__delattr__`) with one `exec` each, as the class
is defined: about 0.5 ms a class here. Of the ~100 classes imported before the
explorer's first frame, that frame makes instances of about half; the rest (a
measurement's result, the probes' readings, the Hub's records) wait for a key or never
come. This decorator hands the class to `dataclasses.dataclass` unchanged, with the
same arguments, the first time the class is needed:

- its first instance (the class's `__init__` until then is a stand-in that makes it);
- the first look at what `dataclass` adds to the class itself (`__dataclass_fields__`,
  `__dataclass_params__`, `__match_args__`: so `dataclasses.fields(cls)`,
  `is_dataclass(cls)` and a pattern naming the class see the made class);
- a subclass decorated in turn (its bases are made first, as `dataclass` reads them).

What it makes is what `dataclass` makes (tests/core/test_frozen_dataclass.py compares
them); only the moment differs. A lock makes each class once when threads race.
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

_LOCK = threading.RLock()
_PENDING: dict[type, dict[str, Any]] = {}
"""The classes not made yet, each with the arguments `dataclass` will get."""


class _Unmade:
    """One of `_CLASS_ATTRIBUTES` on a class not made yet: reading it makes the class."""

    __slots__ = ("name", "owner")

    def __init__(self, owner: type, name: str) -> None:
        self.owner = owner
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        make(self.owner)
        return getattr(owner if owner is not None else self.owner, self.name)


def make(cls: type) -> None:
    """Run `dataclass` on `cls` now if it waits (and first on its bases that wait)."""
    if cls not in _PENDING:
        return
    with _LOCK:
        arguments = _PENDING.pop(cls, None)
        if arguments is None:  # another thread made it while this one waited
            return
        for base in cls.__mro__[1:]:
            make(base)
        # `dataclass` adds only what the class does not define itself: the stand-ins go.
        for name in (*_CLASS_ATTRIBUTES, "__init__"):
            del_if_stand_in(cls, name)
        dataclasses.dataclass(cls, **arguments)


def del_if_stand_in(cls: type, name: str) -> None:
    """Remove `name` from the class if it is one of this module's stand-ins."""
    value = cls.__dict__.get(name)
    if isinstance(value, _Unmade) or getattr(value, "_makes_dataclass", False):
        delattr(cls, name)


def _defer(cls: type[T], arguments: dict[str, Any]) -> type[T]:
    if "__init__" in cls.__dict__ or "__slots__" in cls.__dict__:
        # an own `__init__` would be taken for the stand-in's place: nothing to defer
        return dataclasses.dataclass(cls, **arguments)
    _PENDING[cls] = arguments
    for name in _CLASS_ATTRIBUTES:
        setattr(cls, name, _Unmade(cls, name))

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        make(cls)
        cls.__init__(self, *args, **kwargs)  # the one just made

    __init__._makes_dataclass = True  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = __init__  # type: ignore[method-assign,assignment]
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
