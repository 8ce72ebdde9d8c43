"""`frozen_dataclass` makes what `dataclass(frozen=True)` makes, when the class is first used."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import subprocess
import sys
import threading
import time
from dataclasses import FrozenInstanceError, asdict, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from core.frozen_dataclass import frozen_dataclass

ROOT = Path(__file__).resolve().parents[2]


def fresh_interpreter(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """`code` run by a new Python in the checkout, which must end well."""
    run = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def made(cls: type) -> bool:
    return "__eq__" in cls.__dict__ or "__repr__" in cls.__dict__


def pair(**arguments: Any) -> tuple[type, type]:
    """The same class body, once through `dataclass(frozen=True)` and once lazily."""

    def body(decorate: Any) -> type:
        @decorate
        class Point:
            """A point with a label."""

            x: int
            y: int = 0
            tags: tuple[str, ...] = field(default_factory=tuple)
            note: str = field(default="", compare=False, repr=False)

            def __post_init__(self) -> None:
                if self.x < 0:
                    raise ValueError("x must not be negative")

            @property
            def norm(self) -> int:
                return abs(self.x) + abs(self.y)

        return Point

    eager = body(dataclasses.dataclass(frozen=True, **arguments))
    lazy = body(frozen_dataclass(**arguments) if arguments else frozen_dataclass)
    return eager, lazy


def test_nothing_is_made_until_the_class_is_first_used() -> None:
    _, lazy = pair()
    assert not made(lazy)
    lazy(1)
    assert made(lazy)


@pytest.mark.parametrize("arguments", [{}, {"eq": False}, {"kw_only": True}])
def test_the_made_class_behaves_as_a_frozen_dataclass(arguments: dict[str, Any]) -> None:
    eager, lazy = pair(**arguments)
    kw = arguments.get("kw_only", False)

    def build(cls: type, x: int, y: int, **more: Any) -> Any:
        return cls(x=x, y=y, **more) if kw else cls(x, y, **more)

    a, b = build(eager, 1, 2, tags=("t",)), build(lazy, 1, 2, tags=("t",))
    assert repr(a).replace("Point", "") == repr(b).replace("Point", "")
    assert [f.name for f in fields(a)] == [f.name for f in fields(b)]
    assert str(inspect.signature(eager)) == str(inspect.signature(lazy))
    assert lazy.__doc__ == "A point with a label."
    assert asdict(b) == asdict(a)
    assert b.norm == 3
    same = build(lazy, 1, 2, tags=("t",), note="other")
    if arguments.get("eq", True):
        assert b == same and hash(b) == hash(same)
        assert (a == build(eager, 1, 2, tags=("t",), note="other")) is True
    else:
        assert b != same and b == b
    assert replace(b, y=5).y == 5 and b.y == 2
    with pytest.raises(FrozenInstanceError):
        b.x = 3
    with pytest.raises(FrozenInstanceError):
        del b.y
    with pytest.raises(ValueError, match="negative"):
        build(lazy, -1, 0)
    with pytest.raises(TypeError):
        lazy(1, 2, 3, 4, 5)
    assert lazy.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_fields_and_is_dataclass_see_a_class_never_instantiated() -> None:
    eager, lazy = pair()
    assert str(inspect.signature(lazy)) == str(inspect.signature(eager))
    _, lazy = pair()
    assert is_dataclass(lazy)
    assert [f.name for f in fields(lazy)] == ["x", "y", "tags", "note"]
    assert made(lazy)


def test_a_pattern_names_the_fields_before_any_instance() -> None:
    _, lazy = pair()
    assert lazy.__match_args__ == ("x", "y", "tags", "note")  # type: ignore[attr-defined]
    match lazy(4, 5):
        case lazy(x, y):  # type: ignore[misc]
            assert (x, y) == (4, 5)
        case _:
            pytest.fail("the pattern did not match")


def test_subclasses_read_their_bases_made() -> None:
    _, base = pair()

    @frozen_dataclass
    class Labelled(base):  # type: ignore[misc,valid-type]
        """A point with a name."""

        name: str = "p"

    assert not made(base)
    item = Labelled(1, 2, name="q")
    assert made(base) and item.norm == 3
    assert [f.name for f in fields(item)] == ["x", "y", "tags", "note", "name"]

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted(pair()[1]):  # type: ignore[misc]
        """A base the slotted class reads with `dataclass` itself."""

        z: int = 0

    assert Slotted(1, z=3).z == 3

    class Plain(pair()[1]):  # type: ignore[misc]
        """Not a dataclass: inherits the made `__init__`."""

        def __init__(self, x: int) -> None:
            super().__init__(x, x)

    assert Plain(2).y == 2

    made_base = pair()[1]
    made_base(0)

    @frozen_dataclass
    class Later(made_base):  # type: ignore[misc,valid-type]
        """Defined after its base was made: waits all the same."""

        z: int = 1

    assert not made(Later) and Later(1, z=4).z == 4 and made(Later)


def test_threads_racing_to_use_a_class_make_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[type] = []
    real = dataclasses.dataclass

    def counted(cls: type, **arguments: Any) -> type:
        calls.append(cls)
        time.sleep(0.05)  # the others arrive while the class is being made
        return real(cls, **arguments)

    _, lazy = pair()
    monkeypatch.setattr(dataclasses, "dataclass", counted)  # the one `make` calls
    start = threading.Barrier(8)
    out: list[Any] = []

    def use() -> None:
        start.wait()
        out.append(lazy(1, 1))

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [lazy]
    assert len(out) == 8 and all(item == lazy(1, 1) for item in out)


UNPICKLE = r"""
import pickle, sys
from core.backend import Backend, BackendChoice
assert "__eq__" not in BackendChoice.__dict__  # not made in this interpreter yet
choice = pickle.loads(bytes.fromhex(sys.argv[1]))
shown = repr(choice)  # before any other instance is made
print("__eq__" in BackendChoice.__dict__, choice == BackendChoice(Backend.ROCM, True, "kfd"), shown)
"""


@pytest.mark.child_process
def test_an_instance_unpickled_first_is_one_of_the_made_class() -> None:
    """Unpickling makes an instance without `__init__`: the class is made all the same."""
    from core.backend import Backend, BackendChoice

    data = pickle.dumps(BackendChoice(Backend.ROCM, True, "kfd"))
    run = fresh_interpreter(UNPICKLE, data.hex())
    assert run.stdout.split(" ", 2)[:2] == ["True", "True"], run.stdout
    assert "BackendChoice(backend=" in run.stdout


CODEBASE_CHECK = r"""
NEW = "__new__"  # the stand-in's, which the made class keeps
import dataclasses, importlib, inspect, pkgutil, sys
import core, tui, hip_backend
from core import frozen_dataclass as lazy
for package in (core, tui, hip_backend):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.name.endswith(".__main__"):  # a child's entry point runs on import
            importlib.import_module(info.name)
pending = list(lazy._PENDING.items())
checked = 0
for cls, arguments in pending:
    for base in cls.__mro__[1:]:
        lazy.make(base)
    body = {
        name: value for name, value in cls.__dict__.items()
        if name not in ("__dict__", "__weakref__")
        and not isinstance(value, lazy._Unmade)
        and not getattr(getattr(value, "__func__", None), "stands_in", False)
    }
    twin = dataclasses.dataclass(type(cls.__name__, cls.__bases__, body), **arguments)
    lazy.make(cls)
    def shape(c):
        return (
            [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare, f.kw_only)
             for f in dataclasses.fields(c)],
            str(inspect.signature(c)),
            repr(c.__dataclass_params__),
            c.__match_args__,
            sorted(n for n in vars(c) if n.startswith("__") and n not in ("__qualname__", NEW)),
        )
    a, b = shape(cls), shape(twin)
    if a != b:
        sys.exit(f"{cls.__module__}.{cls.__qualname__}: {a} != {b}")
    checked += 1
print(checked, len(lazy._PENDING))
"""


@pytest.mark.child_process
def test_every_class_in_the_codebase_is_made_as_dataclass_makes_it() -> None:
    """In a fresh interpreter: every module imported, every class not made yet compared,
    field for field, with `dataclass` run on the same class body."""
    run = fresh_interpreter(CODEBASE_CHECK)
    checked, left = map(int, run.stdout.split())
    assert checked >= 100 and left == 0
