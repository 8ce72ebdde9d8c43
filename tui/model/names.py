"""How a model is named: repo ids (`org/name`) wherever a model is named, paths only where
a path is what the user typed.

A Hugging Face cache snapshot lives at `…/models--org--name/snapshots/<hash>`;
its name is `org/name`, never the hash.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from core.catalog.entry import ORIGIN_FOLDER, ORIGIN_GGUF, CatalogEntry
from core.display_text import clean_text

_HF_SNAPSHOT = re.compile(r"(?:^|/)models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/[^/]+/?$")


def model_arg(entry: CatalogEntry) -> str:
    """What to type after `inspect` to get this entry: the folder, or the name."""
    if entry.origin in (ORIGIN_FOLDER, ORIGIN_GGUF) and entry.path is not None:
        return str(entry.path)
    return entry.name


def hf_repo_id(path: str) -> str | None:
    """`org/name` for a Hugging Face cache snapshot folder, else None."""
    m = _HF_SNAPSHOT.search(path.replace("\\", "/"))
    return f"{m.group('org')}/{m.group('name')}" if m else None


def short_model(name: str) -> str:
    """A model named for people: a cache snapshot by its repo id, a folder by its last part,
    a profile or repo id as it is."""
    repo = hf_repo_id(name)
    if repo is not None:
        return clean_text(repo)
    if name.startswith(("/", ".", "~")):
        return clean_text(PurePath(name).name or name)
    return clean_text(name)


def fit_name(name: str, room: int) -> str:
    """`name` in at most `room` cells, cutting the org before the model's own name:
    `mlx-community/Meta-Llama-3.1-8B-Instruct-4bit` in 34 is
    `…/Meta-Llama-3.1-8B-Instruct-4bit`, and the name's end goes only when even that
    does not fit."""
    if len(name) <= room:
        return name
    org, sep, own = name.partition("/")
    if sep and len(own) + 2 <= room:
        keep = room - len(own) - 2  # the org's start, while it fits
        return (org[:keep] if keep >= 3 else "") + "…/" + own
    if sep and room >= 8:
        return "…/" + own[: room - 3] + "…"
    return name[: max(room - 1, 0)] + "…"
