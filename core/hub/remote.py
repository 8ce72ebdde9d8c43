"""Reading a model from the Hugging Face Hub without its weights.

Through huggingface_hub's session, headers and errors, with every request in
`core.hub.fetch` (one deadline for the whole read, capped bodies), inside the frame
every Hub read shares with a GGUF's Range reads (`core.hub.read_frame`): the model info
names the commit and the files, `config.json` and the index are fetched whole (capped),
and each shard's header with range requests. What comes back is written to the
vramscope Hub store (`core.hub.store`) as a header-only folder, which
`read_model_dir` then reads like any folder: the header bytes are stored as the
Hub served them, so the one header parser (`core.model.safetensors_header`) reads
them exactly as it reads the same file on disk. Nothing is written into the
user's Hugging Face cache: a read is whole in the store, or leaves nothing there.

huggingface_hub reads `HF_ENDPOINT` and `HF_HUB_OFFLINE` once, at import; this
module reads the environment at call time instead, passes the endpoint
explicitly and lifts the hub's offline switch only for the duration of a read
the user allowed (vramscope's own cache scan may have imported the hub offline).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from core.display_text import clean_text
from core.errors import HeaderError, HubError, HubNotFoundError, ModelError
from core.hub import store
from core.hub.fetch import Deadline, HubTimeout, get_capped, map_bounded
from core.hub.options import HubOptions
from core.hub.read_frame import (
    ReadStart,
    fetch_failure,
    info_or_reason,
    run_online,
    start_read,
    store_write,
    usable_offline,
)
from core.hub.settings import DEFAULT_ENDPOINT, hub_endpoint
from core.model.config import CONFIG_FILE, CONFIG_SIZE_CAP
from core.model.safetensors_header import header_length
from core.model.weight_files import INDEX_FILE, INDEX_SIZE_CAP, has_safetensors_extension

__all__ = [
    "DEFAULT_ENDPOINT",
    "HubOptions",
    "HubRead",
    "hub_endpoint",
    "read_hub_model",
]

MAX_SHARDS = 1024  # the largest real repos have a few hundred shards
_FIRST_RANGE = 100_001  # as huggingface_hub: bytes=0-100000 holds most headers whole
HUB_HEADER_CAP = 25_000_000
"""The largest header a Hub read fetches (huggingface_hub's own limit); on disk
mlxcel's 256 MiB cap applies, but a read is meant to stay small."""
HUB_HEADERS_TOTAL_CAP = 256 * 1024 * 1024
"""All headers of one repo together."""

T = TypeVar("T")


@dataclass(frozen=True)
class HubRead:
    """A repo read from the Hub (or answered from the store): where and at which commit."""

    repo_id: str
    revision: str
    commit: str
    endpoint: str
    path: Path
    note: str | None = None
    """One line saying the answer came from the store (offline, unreachable)."""
    headers_read: int = 0
    bytes_fetched: int = 0
    """Bytes huggingface_hub asked for: the two small files and each header's ranges."""

    @property
    def source(self) -> str:
        """The banner's `Source:` line and the JSON `source` value."""
        rev = self.revision if self.revision != self.commit else "commit"
        return f"Hugging Face Hub ({self.endpoint}), {rev} @ {self.commit}"


def read_hub_model(
    repo_id: str, options: HubOptions | None = None, env: Mapping[str, str] | None = None
) -> HubRead:
    """Read `repo_id` from the Hub into the store, or answer from the store.

    One deadline (`options.timeout_s`) bounds the whole read. Raises
    HubNotFoundError (no such repo or revision; the caller adds the closest local
    names), HubError (gated, no safetensors, unreachable, timed out, malformed
    answer), UsageError (a revision or a Hub setting that cannot be used) or
    ModelError (the store cannot be written: a local fault), each one line.
    """
    options = options or HubOptions()
    start = start_read(repo_id, options, os.environ if env is None else env)
    if start.offline is not None:
        if start.stored is None:
            raise HubNotFoundError(
                repo_id, f"never read from the Hub, and the Hub is off ({start.offline})"
            )
        return _answer_stored(
            start, f"offline ({start.offline})", f"the Hub is off ({start.offline})"
        )
    return run_online(start, options, lambda deadline: _read_online(start, options, deadline))


def _answer_stored(start: ReadStart, said: str, why: str) -> HubRead:
    """The store's copy (checked whole), with the line saying so."""
    stored = start.stored
    assert stored is not None
    usable_offline(start.repo_id, stored, why)
    note = f"{said}: answered from the copy read from the Hub at {stored.commit[:12]}"
    return HubRead(start.repo_id, start.revision, stored.commit, start.endpoint, stored.path, note)


def _read_online(start: ReadStart, options: HubOptions, deadline: Deadline) -> HubRead:
    repo_id, revision, endpoint, root = start.repo_id, start.revision, start.endpoint, start.root
    found = info_or_reason(start, options, deadline)
    if isinstance(found, str):
        return _answer_stored(start, found, found)
    commit, names = found
    again = store.lookup(root, repo_id, commit)
    if again is not None and store.verify(again.path) is None:
        # this commit was read before and is whole: nothing more to fetch
        store_write(repo_id, root, lambda: store.set_ref(root, repo_id, revision, commit))
        return HubRead(repo_id, revision, commit, endpoint, again.path)
    shards = sorted(
        (n for n in names if "/" not in n and has_safetensors_extension(n)), key=os.fsencode
    )
    if not shards:
        if any(n.endswith(".gguf") for n in names):
            raise HubError(repo_id, _gguf_files(repo_id, commit, names))
        raise HubError(repo_id, f"no *.safetensors at {commit[:12]}; {_files_it_has(names)}")
    if len(shards) > MAX_SHARDS:
        raise HubError(repo_id, f"{len(shards)} safetensors files, over the {MAX_SHARDS}-file cap")
    try:
        return _fetch(start, commit, names, shards, options, deadline)
    except (ModelError, HeaderError, HubTimeout):
        raise
    except Exception as exc:
        raise fetch_failure(start, options, exc) from None


def _files_it_has(names: Sequence[str]) -> str:
    if not names:
        return "the repo has no files"
    kinds = sorted({os.path.splitext(n)[1] or n for n in names})
    shown = ", ".join(clean_text(n)[:60] for n in names[:6])
    more = f" and {len(names) - 6} more" if len(names) > 6 else ""
    hint = ""
    if any(n.endswith(".gguf") for n in names):
        hint = "; GGUF only: vramscope reads safetensors models"
    elif any(n.endswith((".bin", ".pt", ".pth")) for n in names):
        hint = "; PyTorch weights only: vramscope reads safetensors headers"
    return f"it has {len(names)} files ({shown}{more}; kinds {' '.join(kinds)[:80]}){hint}"


def _gguf_files(repo_id: str, commit: str, names: Sequence[str]) -> str:
    """A GGUF repo named without a quant: its model files, and how to name one."""
    from core.gguf.pick import find_best_model, is_model_file, split_name

    models = [n for n in names if is_model_file(n) and (i := split_name(n)) and i.index == 1]
    shown = ", ".join(clean_text(n)[:80] for n in models[:10])
    more = f" and {len(models) - 10} more" if len(models) > 10 else ""
    best = find_best_model([n for n in names if n.endswith(".gguf")])
    info = split_name(best) if best else None
    example = f"{repo_id}:{info.tag}" if info and info.tag else f"{repo_id}:QUANT"
    return (
        f"no *.safetensors at {commit[:12]}: GGUF only, {len(models)} model files ({shown}{more}): "
        f"read one as REPO:QUANT, e.g. `{clean_text(example)}` (llama.cpp's -hf default)"
    )


def _fetch(
    start: ReadStart,
    commit: str,
    names: Sequence[str],
    shards: Sequence[str],
    options: HubOptions,
    deadline: Deadline,
) -> HubRead:
    repo_id, revision, endpoint, root = start.repo_id, start.revision, start.endpoint, start.root
    from huggingface_hub import hf_hub_url

    def url(name: str) -> str:
        return str(hf_hub_url(repo_id, name, revision=commit, endpoint=endpoint))

    files: dict[str, bytes] = {}
    fetched = 0
    for name, cap in ((CONFIG_FILE, CONFIG_SIZE_CAP), (INDEX_FILE, INDEX_SIZE_CAP)):
        if name in names:
            data = get_capped(url(name), deadline, cap + 1, ranged=False).data
            if len(data) > cap:
                raise HubError(repo_id, f"{name} is over the {cap}-byte cap")
            files[name] = data
            fetched += len(data)
    say = options.progress or (lambda _line: None)
    say(
        f"reading {len(shards)} header{'s' if len(shards) != 1 else ''} from the Hub "
        f"({repo_id} @ {commit[:12]})"
    )
    started = time.monotonic()
    total = _Tally(HUB_HEADERS_TOTAL_CAP)

    def one(shard: str) -> tuple[bytes, int]:
        data, got = _read_header(url(shard), f"{repo_id}/{shard}", deadline)
        total.add(got, repo_id)
        return data, got

    for shard, (data, got) in zip(shards, map_bounded(one, shards, 8, deadline), strict=True):
        files[shard] = data
        fetched += got
    deadline.left()  # nothing is stored once the read's time is up
    took = time.monotonic() - started
    saved = store_write(repo_id, root, lambda: store.save(root, repo_id, commit, revision, files))
    say(
        f"read {len(shards)} header{'s' if len(shards) != 1 else ''} from the Hub "
        f"({max(1, round(fetched / 1000))} KB in {took:.1f} s)"
    )
    return HubRead(repo_id, revision, commit, endpoint, saved.path, None, len(shards), fetched)


class _Tally:
    """Bytes fetched by the header threads together, against a cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.bytes = 0
        self._lock = threading.Lock()

    def add(self, n: int, repo_id: str) -> None:
        with self._lock:
            self.bytes += n
            if self.bytes > self.cap:
                raise HubError(repo_id, f"its headers are over the {self.cap}-byte cap together")


def _read_header(url: str, where: str, deadline: Deadline) -> tuple[bytes, int]:
    """A shard's length prefix and header as the Hub serves them (no data region),
    and the bytes fetched. Only the length is looked at here: the stored bytes go
    through the same parser as a file on disk, so a bad header reads the same."""
    first = get_capped(url, deadline, _FIRST_RANGE).data
    got = len(first)
    if got < 8:
        return first, got  # the parser says what is wrong with it
    n = header_length(first)
    if n > HUB_HEADER_CAP:
        raise HeaderError(
            where, f"header length {n} is over the {HUB_HEADER_CAP}-byte cap of a Hub read"
        )
    need = 8 + n
    if got >= need or got < _FIRST_RANGE:  # whole, or the file ends before the header does
        return first[:need], got
    rest = get_capped(url, deadline, need - got, start=got).data
    return first + rest, got + len(rest)
