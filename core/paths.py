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

A mapping handed in is the whole environment: its HOME stands for the home folder, and
when it names neither the folder's variable nor HOME, no folder is assumed (the
process's own home would be someone's real one): `NoHomeError`, one line, or for the
readers that list what exists (the catalog) no folder at all (`*_or_none`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from core.errors import NoHomeError

APP = "vramscope"
MODELS_DIR_ENV = "VRAMSCOPE_MODELS_DIR"
"""Extra folders of models, separated like PATH (`os.pathsep`)."""
HF_MODEL_PREFIX = "models--"


def _own(env: Mapping[str, str] | None) -> bool:
    """The process's own environment (None, or os.environ passed on by a caller)."""
    return env is None or env is os.environ


def _home(env: Mapping[str, str], needed_for: str) -> str:
    """The home folder of a mapping handed in: its HOME (absolute), never the process's."""
    home = env.get("HOME", "")
    if not home or not os.path.isabs(home):
        raise NoHomeError(needed_for, "unset and the environment handed in has no absolute HOME")
    return home


def _xdg_folder(variable: str, home_default: str, env: Mapping[str, str] | None) -> Path:
    if env is None or env is os.environ:
        from platformdirs.unix import Unix  # lazily: `import core` stays light

        dirs = Unix(APP, appauthor=False)
        return Path(dirs.user_cache_dir if variable == "XDG_CACHE_HOME" else dirs.user_state_dir)
    base = env.get(variable, "")
    if base and os.path.isabs(base):
        return Path(base) / APP
    return Path(_home(env, variable)) / home_default / APP


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/vramscope`, or `~/.cache/vramscope` when unset or relative.

    NoHomeError for a mapping with neither an absolute XDG_CACHE_HOME nor HOME."""
    return _xdg_folder("XDG_CACHE_HOME", ".cache", env)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/vramscope`, or `~/.local/state/vramscope` when unset or relative.

    NoHomeError for a mapping with neither an absolute XDG_STATE_HOME nor HOME."""
    return _xdg_folder("XDG_STATE_HOME", os.path.join(".local", "state"), env)


def hub_store_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/vramscope/hub` (default `~/.cache/vramscope/hub`)."""
    return cache_dir(env) / "hub"


def hub_store_dir_or_none(env: Mapping[str, str] | None = None) -> Path | None:
    """The Hub store, or None when a mapping handed in names no folder for it."""
    try:
        return hub_store_dir(env)
    except NoHomeError:
        return None


def models_dirs_from_env(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders in VRAMSCOPE_MODELS_DIR (separated by os.pathsep; `~` expanded).

    In a mapping handed in, `~/x` is under its HOME; without one such a folder is left
    out (it names no folder of that environment)."""
    if _own(env):
        raw = os.environ.get(MODELS_DIR_ENV, "")
        return [Path(os.path.expanduser(p)) for p in raw.split(os.pathsep) if p.strip()]
    assert env is not None
    out: list[Path] = []
    for part in env.get(MODELS_DIR_ENV, "").split(os.pathsep):
        if part.strip():
            try:
                out.append(Path(_expand_user(part, env)))
            except NoHomeError:
                continue
    return out


_VAR = re.compile(r"\$(\w+)|\$\{([^}]*)\}")


def _expand_user(path: str, env: Mapping[str, str]) -> str:
    """`os.path.expanduser` reading `env`'s HOME (NoHomeError without one)."""
    if path == "~" or path.startswith("~/"):
        return _home(env, "HOME") + path[1:]
    if path.startswith("~"):
        return os.path.expanduser(path)  # ~user comes from the password database
    return path


def _expand(path: str, env: Mapping[str, str]) -> str:
    """`os.path.expanduser` then `expandvars`, but reading `env` instead of os.environ
    (the process's own: its home as the standard library finds it)."""
    path = os.path.expanduser(path) if _own(env) else _expand_user(path, env)

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
    # Step by step as the hub's constants module does it (an empty value counts as set),
    # and the home only when nothing before it names the folder: a mapping handed in
    # without HOME but with HF_HUB_CACHE has a cache; without both, NoHomeError.
    chosen = env.get("HF_HUB_CACHE", env.get("HUGGINGFACE_HUB_CACHE"))
    if chosen is not None:
        return Path(_expand(chosen, env))
    if "HF_HOME" in env:
        hf_home = env["HF_HOME"]
    else:
        default_home = env.get("XDG_CACHE_HOME")
        if default_home is None:
            default_home = os.path.join(_expand("~", env), ".cache")
        hf_home = os.path.join(default_home, "huggingface")
    return Path(_expand(os.path.join(_expand(hf_home, env), "hub"), env))


def repo_folder_name(repo_id: str) -> str:
    """`models--org--name` for `org/name`, as the hub names cache folders (ours too)."""
    return HF_MODEL_PREFIX + repo_id.replace("/", "--")
