"""Where vramscope keeps and finds files: one place for every cache, state and search path.

- vramscope's cache: `$XDG_CACHE_HOME/vramscope` (catalog and fit caches, the Hub store);
- vramscope's state: `$XDG_STATE_HOME/vramscope` (measurement history, calibrations);
- the Hugging Face cache, resolved as huggingface_hub resolves it;
- the extra model folders of `VRAMSCOPE_MODELS_DIR`.

The XDG layout holds on every platform, as documented (docs/environment-variables.md):
a variable that is unset, empty or relative counts as unset, and the folder falls back
under the home folder. Read from the process's environment, platformdirs' XDG rule
(`platformdirs.unix.Unix`, the same rule) gives the folder; a mapping handed in (a
test, a child's environment) is read by the same rule here, since platformdirs reads
only `os.environ`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

APP = "vramscope"
MODELS_DIR_ENV = "VRAMSCOPE_MODELS_DIR"
"""Extra folders of models, separated like PATH (`os.pathsep`)."""
HF_MODEL_PREFIX = "models--"


def _xdg_folder(variable: str, home_default: str, env: Mapping[str, str] | None) -> Path:
    if env is None:
        from platformdirs.unix import Unix  # lazily: `import core` stays light

        dirs = Unix(APP, appauthor=False)
        return Path(dirs.user_cache_dir if variable == "XDG_CACHE_HOME" else dirs.user_state_dir)
    base = env.get(variable, "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / home_default
    return root / APP


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/vramscope`, or `~/.cache/vramscope` when unset or relative."""
    return _xdg_folder("XDG_CACHE_HOME", ".cache", env)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/vramscope`, or `~/.local/state/vramscope` when unset or relative."""
    return _xdg_folder("XDG_STATE_HOME", os.path.join(".local", "state"), env)


def hub_store_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/vramscope/hub` (default `~/.cache/vramscope/hub`)."""
    return cache_dir(env) / "hub"


def models_dirs_from_env(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders in VRAMSCOPE_MODELS_DIR (separated by os.pathsep; `~` expanded)."""
    raw = (os.environ if env is None else env).get(MODELS_DIR_ENV, "")
    return [Path(os.path.expanduser(p)) for p in raw.split(os.pathsep) if p.strip()]


_VAR = re.compile(r"\$(\w+)|\$\{([^}]*)\}")


def _expand(path: str, env: Mapping[str, str]) -> str:
    """`os.path.expanduser` then `expandvars`, but reading `env` instead of os.environ."""
    if path == "~" or path.startswith("~/"):
        path = (env.get("HOME") or os.path.expanduser("~")) + path[1:]
    elif path.startswith("~"):
        path = os.path.expanduser(path)  # ~user comes from the password database

    def var(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, match.group(0))

    return _VAR.sub(var, path)


def hf_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The hub cache folder huggingface_hub would use, from `env` (default os.environ).

    Same order as `huggingface_hub.constants`: `HF_HUB_CACHE`, the legacy
    `HUGGINGFACE_HUB_CACHE`, `$HF_HOME/hub`, `$XDG_CACHE_HOME/huggingface/hub`,
    `~/.cache/huggingface/hub`; `~` and `$VARS` are expanded. Computed at call time
    (huggingface_hub reads it once, at import).
    """
    env = os.environ if env is None else env
    # Step by step as the hub's constants module does it (an empty value counts as set).
    default_home = os.path.join(_expand("~", env), ".cache")
    hf_home = _expand(
        env.get("HF_HOME", os.path.join(env.get("XDG_CACHE_HOME", default_home), "huggingface")),
        env,
    )
    legacy = env.get("HUGGINGFACE_HUB_CACHE", os.path.join(hf_home, "hub"))
    return Path(_expand(env.get("HF_HUB_CACHE", legacy), env))


def repo_folder_name(repo_id: str) -> str:
    """`models--org--name` for `org/name`, as the hub names cache folders (ours too)."""
    return HF_MODEL_PREFIX + repo_id.replace("/", "--")
