"""`fit --hub`'s GGUF rows (#40): every quant file of a GGUF repo, each its own row.

A repo is read once with llama.cpp's default pick (`REPO`: Q4_K_M, then Q8_0, then the
first), which keeps the repo's GGUF file list in the store (`gguf-files.json`); each
other quant in that list is then read as `REPO:QUANT` (`core.hub.gguf_remote`:
headers by Range, never the weights). A quant whose listed commit is already stored
is answered from the store without a request, and offline every stored quant answers.
Each row is `inspect REPO:QUANT`'s llama.cpp answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.display_text import clean_text
from core.errors import VramscopeError
from core.gguf.pick import is_model_file, split_name
from core.gguf_load.fit import GgufAsk, GgufFitRow, answer_row
from core.hub.gguf_remote import HubGguf, read_hub_gguf, stored_listing
from core.hub.remote import HubOptions
from core.hub.store import lookup
from core.paths import hub_store_dir


@dataclass(frozen=True)
class HubGgufRepo:
    """One GGUF repo's rows and what reading it took."""

    rows: tuple[GgufFitRow, ...]
    bytes_fetched: int
    from_store: bool
    """Every row answered from the store (no header read)."""


def quant_tags(listing: list[str]) -> list[str]:
    """One tag per model file (a split's first part) in the listing's order: the quants
    `REPO:QUANT` picks (`Q4_K_M`, `Q8_0`, `F16`)."""
    tags: list[str] = []
    for name in listing:
        info = split_name(name)
        if not is_model_file(name) or info is None or not info.tag:
            continue
        if (info.count <= 1 or info.index == 1) and info.tag not in tags:
            tags.append(info.tag)
    return tags


def _read(
    repo_id: str, tag: str, commit: str | None, timeout_s: float, env: Mapping[str, str]
) -> HubGguf:
    """The quant, from the store when the listed commit holds it, else from the Hub."""
    if commit and lookup(hub_store_dir(env), repo_id, commit) is not None:
        try:
            return read_hub_gguf(repo_id, tag, HubOptions(revision=commit, offline=True), env)
        except VramscopeError:
            pass  # this quant is not stored yet: the Hub answers
    return read_hub_gguf(repo_id, tag, HubOptions(timeout_s=timeout_s), env)


def hub_gguf_rows(
    repo_id: str, commit: str | None, ask: GgufAsk, timeout_s: float, env: Mapping[str, str]
) -> HubGgufRepo:
    """Every quant of `repo_id`, a row each (a quant that cannot be read is its row with
    the one-line reason). Raises VramscopeError when not even the default pick reads."""
    first = _read(repo_id, "", commit, timeout_s, env)
    got = [first]
    listing = stored_listing(first.read.path)
    first_tag = split_name(first.model.first.path)
    done = {first_tag.tag if first_tag is not None else ""}
    rows: list[GgufFitRow] = []
    for tag in quant_tags(listing):
        if tag in done:
            continue
        done.add(tag)
        try:
            got.append(_read(repo_id, tag, commit, timeout_s, env))
        except VramscopeError as exc:
            reason = clean_text(str(exc))
            rows.append(GgufFitRow(repo_id, f"{repo_id}:{tag}", tag, repo_id, None, reason))
    seen: set[str] = set()
    for read in got:
        path = read.model.first.path
        if path in seen:
            continue  # two tags that pick the same file: one row
        seen.add(path)
        info = split_name(path)
        tag = info.tag if info is not None and info.tag else "?"
        stored = read.read.headers_read == 0
        rows.append(
            answer_row(
                repo_id, tag, read.model, ask, f"{repo_id}:{tag}",
                hub=True, where=path, from_store=stored,
            )
        )  # fmt: skip
    fetched = sum(r.read.bytes_fetched for r in got)
    return HubGgufRepo(tuple(rows), fetched, all(r.read.headers_read == 0 for r in got))
