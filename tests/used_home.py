"""A home folder as a user's looks after using vramscope: made by vramscope itself.

`populate(home)` publishes a repo on the local stand-in Hub (tests/hub_server.py) and
reads it with `vramscope inspect` in a child whose environment names only HOME (no XDG
folder, no HF_HOME), so the Hub store and the catalog cache land where they land for a
user. The HF cache holds a repo with a built-in profile's name, so a suite that read
this home would see its answer change. The history and the
calibrations are written by the code that writes them for `measure` and `calibrate`,
in a child with the same environment, and the HF cache is laid out as huggingface_hub
lays it out (tests/core/catalog/catalog_fixtures.py). `listing(home)` is every path under the home
with its size and modification time, to compare before and after.

`python -m tests.used_home HOME` makes one (for a run of the suite with that HOME).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from core.catalog.profiles import load_profile
from tests.core.catalog.catalog_fixtures import HubCache
from tests.hub_server import FakeHub, sparse_from_folder
from tests.model_writers import write_skeleton

ROOT = Path(__file__).resolve().parents[1]
PROFILE_NAME = "meta-llama/Llama-3.1-8B-Instruct"
"""A built-in profile's name, in the user's HF cache."""
OWN_NAME = "used-org/used-model"

_WRITE_STATE = """
from core.calibration.builtin import builtin_calibration
from core.calibration.store import default_path, save_merged
from core.measurement.history import HistoryStore
from tests.factories import peak
store = HistoryStore.default()
for context in (640, 4224, 8320):
    assert store.append(peak(context=context)) is None
save_merged(default_path(), [builtin_calibration()], "0.0.0")
"""


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """What a user's shell hands vramscope: HOME and PATH, nothing of the tests'."""
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def populate(home: Path, scratch: Path) -> None:
    """Fill `home` (the models' files are written under `scratch`, not in the home)."""
    home.mkdir(parents=True, exist_ok=True)
    hub = FakeHub().start()
    try:
        local = write_skeleton(load_profile(PROFILE_NAME), scratch / "published")
        hub.add(OWN_NAME, sparse_from_folder(local))
        env = user_env(home, HF_ENDPOINT=hub.url, NO_PROXY="127.0.0.1,localhost")
        args = ["inspect", OWN_NAME, "--backend", "cpu", "--memory-limit", "64GB"]
        _run([sys.executable, "-m", "tui", *args], env)
        _run([sys.executable, "-m", "tui", "models"], env)  # the catalog cache
    finally:
        hub.stop()
    _run([sys.executable, "-c", _WRITE_STATE], user_env(home))
    # The HF cache as huggingface_hub lays it out (blobs, snapshots, refs), with the
    # built-in profile's name and one of the user's own.
    cache = HubCache(home / ".cache" / "huggingface" / "hub")
    cache.add_profile(PROFILE_NAME)
    cache.add_profile(PROFILE_NAME, as_repo="used-org/cached-model")


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[3:]} exited {done.returncode}: {done.stderr.strip()}")


def listing(home: Path) -> dict[str, tuple[int, int]]:
    """Every path under `home`, relative, with its size and mtime in nanoseconds."""
    out: dict[str, tuple[int, int]] = {}
    for path in sorted(home.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(home))] = (st.st_size, st.st_mtime_ns)
    return out


def main(argv: list[str]) -> int:
    home = Path(argv[0]).absolute()
    populate(home, home.parent / (home.name + "-published"))
    for path, (size, _) in listing(home).items():
        print(f"{size:>10}  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
