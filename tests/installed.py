"""Whether an optional library is installed, asked without importing it, and a module
imported only when a test first reads from it.

Every worker of `make test` imports every test module to collect it. Test modules that
imported torch and mlx-lm (and through it transformers) at the top made each of the
four workers' collection take 7.3 s of processor time and the first 16 s of the run;
without them, 3.3 s and 7 s. `pytest.importorskip` imports too: a test that only asked
whether its child could run imported torch into its worker for nothing.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from types import ModuleType
from typing import Any

import pytest


def installed(*names: str) -> bool:
    """Whether each of these top-level packages can be found (none is imported)."""
    return all(find_spec(name) is not None for name in names)


def missing_reason(*names: str) -> str:
    return " and ".join(n.replace("_", "-") for n in names if find_spec(n) is None) + (
        " not installed"
    )


def need(*names: str) -> None:
    """Skip the calling test (or fixture) when one of these is not installed."""
    if not installed(*names):
        pytest.skip(missing_reason(*names))


def needs(*names: str) -> pytest.MarkDecorator:
    """A mark that skips when one of these is not installed (for `pytestmark`)."""
    ok = installed(*names)
    return pytest.mark.skipif(not ok, reason="" if ok else missing_reason(*names))


class Later:
    """A module imported when an attribute is first read from it: `torch = Later("torch")`
    at a test module's top, and collection imports nothing.

    Private names are not the module's: pytest reads markers of its own (such as
    `_fixture_function_marker`) from every name a test module holds while collecting.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def _module(self) -> ModuleType:
        return import_module(self._name)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._module(), attr)
