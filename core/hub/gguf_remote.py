"""A GGUF repo on the Hub: the picked file's header, read by HTTP Range, never its weights.

`REPO:QUANT` picks the file as `llama-server -hf REPO:QUANT` does (`core.gguf.pick`:
the quant's first part and every part of a split, and the `mmproj` llama.cpp would take
beside it); `REPO` alone takes llama.cpp's defaults (`Q4_K_M`, then `Q8_0`, then the
first model file). Each file's header is read through `core.hub.fetch` (one deadline for
the whole read, capped bodies), inside the frame every Hub read shares
(`core.hub.read_frame`: the checks, the store's copy, offline and unreachable answers,
failures typed): the first 256 KiB, then more while the parser asks
(`NeedMoreBytes`), never more than 960 KiB past what it asked for and never past
`HEADER_CAP`; the file's size comes from the answer's `Content-Range`.

The headers go to the vramscope Hub store (`core.hub.store`) as the Hub served them, up
to where the tensor data starts, beside `gguf-files.json` (the repo's GGUF files and
each stored file's full size), in the same snapshot as other reads of the same commit;
a second run, or one offline, answers from there through the same parser.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from core.errors import GgufError, HubError, HubNotFoundError, ModelError
from core.gguf.header import HEADER_CAP, NeedMoreBytes, parse_header
from core.gguf.local import assemble
from core.gguf.pick import is_model_file, pick, split_name
from core.gguf.record import GgufFile, GgufModel, SplitInfo
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
from core.hub.remote import HubRead
from core.regular_file import read_regular

GGUF_INDEX = "gguf-files.json"
"""In a stored snapshot: the repo's GGUF files, and each stored header's file size."""
FIRST_RANGE = 256 * 1024
STEP_PAST = 960 * 1024
"""A later read asks for at most this much past the end the parser asked for: with the
model info, a read stays within its headers plus 1 MiB."""
_INDEX_CAP = 8 * 1024 * 1024
MAX_GGUF_FILES = 4096


@dataclass(frozen=True)
class HubGguf:
    """A GGUF model read from the Hub (or answered from the store), and how."""

    model: GgufModel
    read: HubRead


def read_hub_gguf(
    repo_id: str,
    tag: str = "",
    options: HubOptions | None = None,
    env: Mapping[str, str] | None = None,
) -> HubGguf:
    """The GGUF model `repo_id` (with quant `tag`) holds, its headers read from the Hub
    into the store, or answered from the store offline. Raises HubNotFoundError,
    HubError, GgufError, ModelNotFoundError (no file for the quant), UsageError or
    ModelError, each one line."""
    options = options or HubOptions()
    start = start_read(repo_id, options, os.environ if env is None else env)
    if start.offline is not None:
        why = f"the Hub is off ({start.offline})"
        if start.stored is None:
            raise HubNotFoundError(repo_id, f"never read from the Hub, and {why}")
        return _answer_stored(start, tag, why)
    return run_online(start, options, lambda deadline: _read_online(start, tag, options, deadline))


def _answer_stored(start: ReadStart, tag: str, why: str) -> HubGguf:
    stored = start.stored
    assert stored is not None
    usable_offline(start.repo_id, stored, why)
    model = from_store(stored.path, start.repo_id, tag)
    if model is None:
        what = f"quant {tag!r}" if tag else "its default quant"
        raise HubError(start.repo_id, f"{what} was never read from the Hub, and {why}")
    note = f"{why}: answered from the copy read from the Hub at {stored.commit[:12]}"
    read = HubRead(start.repo_id, start.revision, stored.commit, start.endpoint, stored.path, note)
    return HubGguf(model, read)


def _read_online(start: ReadStart, tag: str, options: HubOptions, deadline: Deadline) -> HubGguf:
    repo_id, revision, endpoint, root = start.repo_id, start.revision, start.endpoint, start.root
    found = info_or_reason(start, options, deadline)
    if isinstance(found, str):
        return _answer_stored(start, tag, found)
    commit, names = found
    ggufs = [n for n in names if n.endswith(".gguf")]
    if not ggufs:
        raise HubError(repo_id, f"no *.gguf files at {commit[:12]}")
    if len(ggufs) > MAX_GGUF_FILES:
        raise HubError(repo_id, f"{len(ggufs)} GGUF files, over the {MAX_GGUF_FILES}-file cap")
    parts, projector = pick(ggufs, tag, repo_id)
    wanted = parts + ([projector] if projector else [])
    again = store.lookup(root, repo_id, commit)
    if again is not None and (model := from_store(again.path, repo_id, tag)) is not None:
        store_write(repo_id, root, lambda: store.set_ref(root, repo_id, revision, commit))
        return HubGguf(model, HubRead(repo_id, revision, commit, endpoint, again.path))
    from huggingface_hub import hf_hub_url

    say = options.progress or (lambda _line: None)
    say(
        f"reading {len(wanted)} GGUF header{'s' if len(wanted) > 1 else ''} from the Hub "
        f"({repo_id} @ {commit[:12]}: {', '.join(wanted)})"
    )

    def one(name: str) -> tuple[bytes, int, int]:
        url = str(hf_hub_url(repo_id, name, revision=commit, endpoint=endpoint))
        return read_header_bytes(url, f"{repo_id}/{name}", deadline)

    try:
        read = map_bounded(one, wanted, 4, deadline)
    except (ModelError, GgufError, HubTimeout):
        raise
    except Exception as exc:
        raise fetch_failure(start, options, exc) from None
    deadline.left()  # nothing is stored once the read's time is up
    files = (store.read_files(again.path) if again is not None else None) or {}
    index = _read_index(files.get(GGUF_INDEX))
    sizes: dict[str, int] = dict(index[1]) if index is not None else {}
    for name, (data, size, _) in zip(wanted, read, strict=True):
        files[_stored_name(name)] = data
        sizes[name] = size
    files[GGUF_INDEX] = json.dumps({"listing": ggufs, "sizes": sizes}, indent=1).encode()
    saved = store_write(
        repo_id,
        root,
        lambda: store.save(root, repo_id, commit, revision, files, replace=again is not None),
    )
    fetched = sum(got for _, _, got in read)
    say(
        f"read {len(wanted)} GGUF header{'s' if len(wanted) > 1 else ''} "
        f"({max(1, round(fetched / 1000))} KB)"
    )
    model = from_store(saved.path, repo_id, tag)
    if model is None:
        raise HubError(repo_id, "the GGUF headers just stored cannot be read back")
    info = HubRead(repo_id, revision, commit, endpoint, saved.path, None, len(wanted), fetched)
    return HubGguf(model, info)


def read_header_bytes(url: str, where: str, deadline: Deadline) -> tuple[bytes, int, int]:
    """A GGUF file's bytes up to where its tensor data starts, its full size, and the
    bytes fetched: 256 KiB first, then more while the parser asks for it."""
    body = get_capped(url, deadline, FIRST_RANGE)
    size = body.total
    if size is None:
        raise HubError(where, "the Hub gave no file size (no Content-Range) for a GGUF file")
    buf = body.data
    fetched = len(buf)
    while True:
        try:
            header = parse_header(buf, size, where)
            return buf[: header.data_offset], size, fetched
        except NeedMoreBytes as more:
            want = min(size, HEADER_CAP, max(more.end, min(2 * len(buf), more.end + STEP_PAST)))
            rest = get_capped(url, deadline, want - len(buf), start=len(buf)).data
            if not rest:
                raise GgufError(
                    where, "the Hub's answer ended before the GGUF header did"
                ) from None
            buf += rest
            fetched += len(rest)


def _stored_name(name: str) -> str:
    """The file name a header is stored under: the store is one flat folder, so a file in
    a repo's folder (`Q8_0/model-00001-of-00002.gguf`) has its slashes escaped (`%2F`),
    one name per repo path, none leaving the folder."""
    return quote(name, safe="")


def _read_index(data: bytes | None) -> tuple[list[str], dict[str, int]] | None:
    if data is None:
        return None
    try:
        index = json.loads(data)
        listing = [n for n in index["listing"] if isinstance(n, str)]
        sizes = {k: v for k, v in index["sizes"].items() if isinstance(v, int) and v >= 0}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return listing, sizes


def from_store(path: Path, repo_id: str, tag: str) -> GgufModel | None:
    """The model `tag` picks, from a stored snapshot; None when the snapshot has no
    record of GGUF files or not the picked ones' headers. Raises GgufError for a stored
    header the parser refuses (the Hub served a bad file), ModelNotFoundError when
    nothing in the repo matches `tag`."""
    try:
        index = _read_index(read_regular(path / GGUF_INDEX, _INDEX_CAP))
    except OSError:
        return None
    if index is None:
        return None
    listing, sizes = index
    parts, projector = pick(listing, tag, repo_id)
    files: list[GgufFile] = []
    for name in parts + ([projector] if projector else []):
        if name not in sizes:
            return None
        try:
            data = read_regular(path / _stored_name(name), HEADER_CAP)
        except OSError:
            return None
        try:
            files.append(parse_header(data, sizes[name], f"{repo_id}/{name}"))
        except NeedMoreBytes:
            return None  # a stored header cut short: read again
    model_files = assemble(files[: len(parts)], f"{repo_id}/{parts[0]}")
    notes = []
    models = {i.prefix for n in listing if is_model_file(n) and (i := split_name(n))}
    if not tag and len(models) > 1:
        notes.append(
            f"{len(models)} GGUF model files in {repo_id}: read {parts[0]} (llama.cpp's "
            "-hf pick: Q4_K_M, then Q8_0, then the first; name one as REPO:QUANT)"
        )
    if projector:
        notes.append(f"projector: {projector} (llama.cpp's -hf pick)")
    split = SplitInfo(len(model_files), sum(len(f.tensors) for f in model_files))
    return GgufModel(
        model_files,
        split if len(model_files) > 1 else None,
        files[len(parts)] if projector else None,
        tuple(notes),
    )


def stored_listing(path: Path) -> list[str]:
    """The repo's GGUF files as a stored snapshot records them (`gguf-files.json`): what
    `fit --hub` makes a row of each; [] when the snapshot has no such record."""
    try:
        index = _read_index(read_regular(path / GGUF_INDEX, _INDEX_CAP))
    except OSError:
        return []
    return index[0] if index is not None else []
