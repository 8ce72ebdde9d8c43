"""Reading a model from the Hugging Face Hub without its weights.

Through huggingface_hub's session, headers and errors, with every request in
`core.hub.fetch` (one deadline for the whole read, capped bodies): the model info
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from core.display_text import clean_text
from core.errors import (
    HeaderError,
    HubAuthError,
    HubClientClosedError,
    HubError,
    HubNotFoundError,
    HubTimedOutError,
    HubUnreachableError,
    ModelError,
    UsageError,
)
from core.hub import store
from core.hub.fetch import (
    Deadline,
    HubTimeout,
    client_closed,
    get_capped,
    map_bounded,
    run_bounded,
)
from core.hub.options import HubOptions
from core.hub.session import hub_offline_reason, online, timed_out, unreachable
from core.hub.settings import DEFAULT_ENDPOINT, check_settings, hub_endpoint
from core.model.config import CONFIG_FILE, CONFIG_SIZE_CAP, decode_json
from core.model.safetensors_header import header_length
from core.model.weight_files import INDEX_FILE, INDEX_SIZE_CAP, has_safetensors_extension
from core.paths import hub_store_dir

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
INFO_CAP = 32 * 1024 * 1024
"""The model info (the file list of a repo with tens of thousands of files fits)."""

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
    env = os.environ if env is None else env
    if not store.is_repo_id(repo_id):
        raise ModelError(_shown(repo_id), f"not a Hub repo id ({store.REPO_ID_RULE})")
    revision = options.revision or "main"
    if not store.is_revision(revision) and store.COMMIT_RE.fullmatch(revision) is None:
        raise UsageError(
            "--revision",
            f"{_shown(revision)} is not a branch, tag or commit name "
            "(letters, digits and -_./, not starting with / or ., no ..)",
        )
    check_settings(env)
    endpoint = hub_endpoint(env)
    root = hub_store_dir(env)
    stored = store.lookup(root, repo_id, revision)
    offline = "--offline" if options.offline else hub_offline_reason(env)
    if offline is not None:
        if stored is None:
            raise HubNotFoundError(
                repo_id, f"never read from the Hub, and the Hub is off ({offline})"
            )
        _usable_offline(repo_id, stored, f"the Hub is off ({offline})")
        note = (
            f"offline ({offline}): answered from the copy read from the Hub at {stored.commit[:12]}"
        )
        return HubRead(repo_id, revision, stored.commit, endpoint, stored.path, note)
    check_settings()  # huggingface_hub reads os.environ itself, at import
    deadline = Deadline.after(options.timeout_s)
    with online(options.timeout_s):
        try:
            return run_bounded(
                lambda: _readonline(repo_id, revision, endpoint, root, stored, options, deadline),
                deadline,
            )
        except HubTimeout:
            raise HubTimedOutError(repo_id, _timed_out(endpoint, options.timeout_s)) from None


def _timed_out(endpoint: str, timeout_s: float) -> str:
    return (
        f"the Hub at {endpoint} did not finish the read within {timeout_s:g} s "
        "(--hub-timeout); nothing was stored"
    )


def _shown(text: str) -> str:
    """A name as typed, escaped where it holds control characters."""
    return text if text.isprintable() else ascii(text)


def _usable_offline(repo_id: str, stored: store.StoredModel, why: str) -> None:
    """HubError when the stored copy was damaged since it was written."""
    damage = store.verify(stored.path)
    if damage is not None and damage != store.NO_MANIFEST:
        raise HubError(
            repo_id,
            f"the copy read from the Hub at {stored.commit[:12]} is damaged ({damage}) "
            f"and {why}: read it again with the Hub reachable",
        )


def _readonline(
    repo_id: str,
    revision: str,
    endpoint: str,
    root: Path,
    stored: store.StoredModel | None,
    options: HubOptions,
    deadline: Deadline,
) -> HubRead:
    try:
        commit, names = _model_info(repo_id, revision, endpoint, deadline)
    except HubError:
        raise
    except Exception as exc:
        reason = unreachable(exc)
        if reason is None:
            raise _hub_error(repo_id, revision, exc) from None
        lost = HubUnreachableError
        if timed_out(exc):
            reason, lost = f"timed out after {options.timeout_s:g} s", HubTimedOutError
        if stored is None:
            raise lost(
                repo_id,
                f"the Hub at {endpoint} is unreachable ({reason}) and this repo was "
                "never read; retry, raise --hub-timeout or point HF_ENDPOINT at a mirror",
            ) from None
        _usable_offline(repo_id, stored, f"the Hub is unreachable ({reason})")
        note = (
            f"the Hub is unreachable ({reason}): answered from the copy read at "
            f"{stored.commit[:12]}"
        )
        return HubRead(repo_id, revision, stored.commit, endpoint, stored.path, note)
    again = store.lookup(root, repo_id, commit)
    if again is not None and store.verify(again.path) is None:
        # this commit was read before and is whole: nothing more to fetch
        _store_write(repo_id, root, lambda: store.set_ref(root, repo_id, revision, commit))
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
        return _fetch(repo_id, revision, commit, endpoint, root, names, shards, options, deadline)
    except (ModelError, HeaderError, HubTimeout):
        raise
    except Exception as exc:
        reason = unreachable(exc)
        if timed_out(exc):
            raise HubTimedOutError(repo_id, _timed_out(endpoint, options.timeout_s)) from None
        if reason is not None:
            raise HubUnreachableError(
                repo_id, f"the Hub at {endpoint} stopped answering ({reason})"
            ) from None
        raise _hub_error(repo_id, revision, exc) from None


def _model_info(
    repo_id: str, revision: str, endpoint: str, deadline: Deadline
) -> tuple[str, list[str]]:
    """The commit a revision names and the repo's file names, from the model info."""
    url = f"{endpoint}/api/models/{repo_id}/revision/{quote(revision, safe='')}"
    body = get_capped(url, deadline, INFO_CAP + 1, ranged=False).data
    if len(body) > INFO_CAP:
        raise HubError(repo_id, f"the Hub's model info is over the {INFO_CAP}-byte cap")
    try:
        info = decode_json(body, "model info")
    except ValueError as exc:
        raise HubError(
            repo_id, f"the Hub at {endpoint} sent a malformed model info ({exc})"
        ) from None
    commit = info.get("sha") if isinstance(info, dict) else None
    if not isinstance(commit, str) or store.COMMIT_RE.fullmatch(commit) is None:
        raise HubError(repo_id, f"the Hub at {endpoint} gave no commit hash for {revision!r}")
    siblings = info.get("siblings") if isinstance(info, dict) else None
    names = [
        s["rfilename"]
        for s in (siblings if isinstance(siblings, list) else [])
        if isinstance(s, dict) and isinstance(s.get("rfilename"), str)
    ]
    return commit, names


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


def _hub_error(repo_id: str, revision: str, exc: BaseException) -> HubError:
    """One line for what the Hub said."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
        SafetensorsParsingError,
    )

    if isinstance(exc, GatedRepoError):
        return HubAuthError(
            repo_id,
            "gated or private on the Hub: a token with access is needed "
            "(set HF_TOKEN or run `hf auth login`, after accepting the repo's terms)",
        )
    if isinstance(exc, RepositoryNotFoundError):
        return HubNotFoundError(
            repo_id, "not found on the Hub (or private: a token with access is needed)"
        )
    if isinstance(exc, RevisionNotFoundError):
        return HubNotFoundError(
            repo_id, f"revision {clean_text(revision)[:60]!r} not found on the Hub"
        )
    if isinstance(exc, RemoteEntryNotFoundError):
        return HubError(repo_id, "a file the repo lists is missing on the Hub")
    if isinstance(exc, SafetensorsParsingError):
        # "Failed to parse safetensors header for 'f' (repo 'r', revision 'c'): why. Hint."
        text = _short(exc)
        why = text.rsplit("): ", 1)[-1].split(". Please", 1)[0]
        shard = text.split("'")[1] if text.count("'") >= 2 else "a shard"
        return HubError(f"{repo_id}/{shard}", f"malformed safetensors header on the Hub: {why}")
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "?"
        kind = HubAuthError if status in (401, 403) else HubError
        return kind(repo_id, f"the Hub answered HTTP {status}")
    kind = HubClientClosedError if client_closed(exc) else HubError
    return kind(repo_id, f"unexpected answer from the Hub: {type(exc).__name__}: {_short(exc)}")


def _short(exc: BaseException) -> str:
    return clean_text(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)[:200]


def _fetch(
    repo_id: str,
    revision: str,
    commit: str,
    endpoint: str,
    root: Path,
    names: Sequence[str],
    shards: Sequence[str],
    options: HubOptions,
    deadline: Deadline,
) -> HubRead:
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
    saved = _store_write(repo_id, root, lambda: store.save(root, repo_id, commit, revision, files))
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


def _store_write(repo_id: str, root: Path, write: Callable[[], T]) -> T:
    """A store write; an OSError there is a local fault, named as one."""
    try:
        return write()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ModelError(
            repo_id,
            f"cannot write vramscope's Hub store at {clean_text(str(root))}: {why} "
            "(a local fault: the Hub answered; free space or fix the folder, "
            "or point XDG_CACHE_HOME elsewhere)",
        ) from None
