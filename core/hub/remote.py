"""Reading a model from the Hugging Face Hub without its weights.

Through huggingface_hub only: `HfApi.model_info` names the commit and the files,
`hf_hub_download` fetches `config.json` and the index into the standard HF cache,
and `HfApi.parse_safetensors_file_metadata` reads each shard's header with range
requests. What comes back is written to the vramscope Hub store (`core.hub.store`)
as a header-only folder, which `read_model_dir` then reads like any folder: the
estimate is the one the same files on disk would give.

huggingface_hub reads `HF_ENDPOINT` and `HF_HUB_OFFLINE` once, at import; this
module reads the environment at call time instead, passes the endpoint
explicitly and lifts the hub's offline switch only for the duration of a read
the user allowed (vramscope's own cache scan may have imported the hub offline).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.display_text import clean_text
from core.errors import HeaderError, HubError, HubNotFoundError
from core.hub import DEFAULT_TIMEOUT_S, store
from core.model.config import CONFIG_FILE, CONFIG_SIZE_CAP, decode_json
from core.model.safetensors_header import HEADER_SIZE_CAP, METADATA_KEY, header_weight_bytes
from core.model.weight_files import INDEX_FILE, INDEX_SIZE_CAP, has_safetensors_extension
from core.paths import hf_cache_dir, hub_store_dir
from core.regular_file import read_regular

DEFAULT_ENDPOINT = "https://huggingface.co"
MAX_SHARDS = 1024  # the largest real repos have a few hundred shards
_FIRST_RANGE = 100_001  # huggingface_hub's first ranged read: bytes=0-100000
_TRUE = {"1", "ON", "YES", "TRUE"}

Progress = Callable[[str], None]


def hub_offline_reason(env: Mapping[str, str] | None = None) -> str | None:
    """`HF_HUB_OFFLINE=1` (or TRANSFORMERS_OFFLINE) as the hub reads it, else None."""
    env = os.environ if env is None else env
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if env.get(name, "").upper() in _TRUE:
            return f"{name}={env[name]}"
    return None


def hub_endpoint(env: Mapping[str, str] | None = None) -> str:
    """`HF_ENDPOINT` (a mirror, a self-hosted hub), else huggingface.co."""
    env = os.environ if env is None else env
    return (env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


@dataclass(frozen=True)
class HubOptions:
    """How a Hub read may go: revision, offline switch, timeout, progress lines."""

    revision: str | None = None
    offline: bool = False
    """`--offline`: answer from the store only (HF_HUB_OFFLINE=1 does the same)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    progress: Progress | None = field(default=None, compare=False)


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

    Raises HubNotFoundError (no such repo or revision; the caller adds the
    closest local names) or HubError (gated, no safetensors, unreachable,
    malformed header), each one line naming the repo.
    """
    options = options or HubOptions()
    env = os.environ if env is None else env
    revision = options.revision or "main"
    endpoint = hub_endpoint(env)
    root = hub_store_dir(env)
    stored = store.lookup(root, repo_id, revision)
    offline = "--offline" if options.offline else hub_offline_reason(env)
    if offline is not None:
        if stored is None:
            raise HubNotFoundError(
                repo_id, f"never read from the Hub, and the Hub is off ({offline})"
            )
        note = (
            f"offline ({offline}): answered from the copy read from the Hub at {stored.commit[:12]}"
        )
        return HubRead(repo_id, revision, stored.commit, endpoint, stored.path, note)
    with _online(options.timeout_s):
        return _read_online(repo_id, revision, endpoint, root, stored, options, env)


@contextlib.contextmanager
def _online(timeout_s: float) -> Iterator[None]:
    """Lift the hub's import-time offline switch and set its download timeout, then restore."""
    from huggingface_hub import constants
    from huggingface_hub.utils.tqdm import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    # Its retry warnings would break the one-line errors: the outcome is reported instead.
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.ERROR)
    saved = (constants.HF_HUB_OFFLINE, constants.HF_HUB_DOWNLOAD_TIMEOUT)
    bars_off = are_progress_bars_disabled()
    constants.HF_HUB_OFFLINE = False
    constants.HF_HUB_DOWNLOAD_TIMEOUT = int(max(1.0, timeout_s))
    disable_progress_bars()
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE, constants.HF_HUB_DOWNLOAD_TIMEOUT = saved
        hub_log.setLevel(level)
        if not bars_off:
            enable_progress_bars()


def _unreachable(exc: BaseException) -> str | None:
    """A short reason when `exc` means the Hub could not be reached, else None."""
    import httpx2
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    if isinstance(exc, httpx2.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx2.TransportError | OfflineModeIsEnabled | ConnectionError):
        return clean_text(str(exc) or type(exc).__name__)[:120]
    if isinstance(exc, LocalEntryNotFoundError):
        return "connection failed"
    return None


def _read_online(
    repo_id: str,
    revision: str,
    endpoint: str,
    root: Path,
    stored: store.StoredModel | None,
    options: HubOptions,
    env: Mapping[str, str],
) -> HubRead:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint)
    try:
        info = api.model_info(repo_id, revision=revision, timeout=options.timeout_s)
    except Exception as exc:
        reason = _unreachable(exc)
        if reason is None:
            raise _hub_error(repo_id, revision, exc) from None
        if stored is None:
            raise HubError(
                repo_id,
                f"the Hub at {endpoint} is unreachable ({reason}) and this repo was "
                "never read; retry, raise --hub-timeout or point HF_ENDPOINT at a mirror",
            ) from None
        note = (
            f"the Hub is unreachable ({reason}): answered from the copy read at "
            f"{stored.commit[:12]}"
        )
        return HubRead(repo_id, revision, stored.commit, endpoint, stored.path, note)
    commit = info.sha if isinstance(info.sha, str) else None
    if commit is None or store.COMMIT_RE.fullmatch(commit) is None:
        raise HubError(repo_id, f"the Hub at {endpoint} gave no commit hash for {revision!r}")
    again = store.lookup(root, repo_id, commit)
    if again is not None:  # this commit was read before: nothing more to fetch
        store.set_ref(root, repo_id, revision, commit)
        return HubRead(repo_id, revision, commit, endpoint, again.path)
    names = [s.rfilename for s in (info.siblings or []) if isinstance(s.rfilename, str)]
    shards = sorted(
        (n for n in names if "/" not in n and has_safetensors_extension(n)), key=os.fsencode
    )
    if not shards:
        raise HubError(repo_id, f"no *.safetensors at {commit[:12]}; {_files_it_has(names)}")
    if len(shards) > MAX_SHARDS:
        raise HubError(repo_id, f"{len(shards)} safetensors files, over the {MAX_SHARDS}-file cap")
    try:
        return _fetch(api, repo_id, revision, commit, endpoint, root, names, shards, options, env)
    except (HubError, HeaderError):
        raise
    except Exception as exc:
        reason = _unreachable(exc)
        if reason is not None:
            raise HubError(repo_id, f"the Hub at {endpoint} stopped answering ({reason})") from None
        raise _hub_error(repo_id, revision, exc) from None


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
        return HubError(
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
        return HubError(repo_id, f"the Hub answered HTTP {status}")
    return HubError(repo_id, f"unexpected answer from the Hub: {type(exc).__name__}: {_short(exc)}")


def _short(exc: BaseException) -> str:
    return clean_text(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)[:200]


def _fetch(
    api: Any,
    repo_id: str,
    revision: str,
    commit: str,
    endpoint: str,
    root: Path,
    names: Sequence[str],
    shards: Sequence[str],
    options: HubOptions,
    env: Mapping[str, str],
) -> HubRead:
    files: dict[str, bytes] = {}
    fetched = 0
    for name, cap in ((CONFIG_FILE, CONFIG_SIZE_CAP), (INDEX_FILE, INDEX_SIZE_CAP)):
        if name in names:
            files[name] = _download_small(api, repo_id, name, commit, cap, options, env)
            fetched += len(files[name])
    say = options.progress or (lambda _line: None)
    say(
        f"reading {len(shards)} header{'s' if len(shards) != 1 else ''} from the Hub "
        f"({repo_id} @ {commit[:12]})"
    )
    started = time.monotonic()

    def one(shard: str) -> tuple[str, bytes, int]:
        try:
            meta = api.parse_safetensors_file_metadata(
                repo_id, shard, revision=commit, timeout=options.timeout_s
            )
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            # huggingface_hub builds its objects from the JSON as it is: a wrong type there
            raise HeaderError(
                f"{repo_id}/{shard}", f"malformed safetensors header on the Hub ({_short(exc)})"
            ) from None
        header = _header_json(repo_id, shard, meta)
        asked = _FIRST_RANGE if len(header) + 8 <= _FIRST_RANGE else _FIRST_RANGE + len(header) + 8
        return shard, store.header_only_bytes(header), asked

    with ThreadPoolExecutor(max_workers=min(8, len(shards))) as pool:
        for shard, data, asked in pool.map(one, shards):
            files[shard] = data
            fetched += asked
    say(
        f"read {len(shards)} header{'s' if len(shards) != 1 else ''} from the Hub "
        f"({max(1, round(fetched / 1000))} KB in {time.monotonic() - started:.1f} s)"
    )
    saved = store.save(root, repo_id, commit, revision, files)
    return HubRead(repo_id, revision, commit, endpoint, saved.path, None, len(shards), fetched)


def _download_small(
    api: Any,
    repo_id: str,
    name: str,
    commit: str,
    cap: int,
    options: HubOptions,
    env: Mapping[str, str],
) -> bytes:
    """A config or index through `hf_hub_download` (so it lands in the HF cache), capped."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    url = hf_hub_url(repo_id, name, revision=commit, endpoint=api.endpoint)
    meta = get_hf_file_metadata(url, timeout=options.timeout_s, endpoint=api.endpoint)
    if meta.size is not None and meta.size > cap:
        raise HubError(repo_id, f"{name} is {meta.size} bytes, over the {cap}-byte cap")
    local = hf_hub_download(
        repo_id,
        name,
        revision=commit,
        cache_dir=hf_cache_dir(env),
        endpoint=api.endpoint,
        etag_timeout=options.timeout_s,
    )
    data = read_regular(Path(local), cap)  # never blocks on a FIFO swapped in
    if len(data) > cap:
        raise HubError(repo_id, f"{name} is over the {cap}-byte cap")
    return data


def _header_json(repo_id: str, shard: str, meta: Any) -> bytes:
    """The header huggingface_hub parsed, as JSON again, through vramscope's own checks."""
    where = f"{repo_id}/{shard}"
    try:
        header: dict[str, Any] = {}
        if meta.metadata:
            header[METADATA_KEY] = meta.metadata
        for name, info in meta.tensors.items():
            header[name] = {
                "dtype": info.dtype,
                "shape": info.shape,
                "data_offsets": list(info.data_offsets),
            }
        data = json.dumps(header, separators=(",", ":"), allow_nan=True).encode()
    except (TypeError, ValueError, AttributeError, RecursionError):
        raise HeaderError(where, "malformed safetensors header on the Hub") from None
    if len(data) > HEADER_SIZE_CAP:
        raise HeaderError(where, f"header is over the {HEADER_SIZE_CAP}-byte cap")
    try:
        decoded = decode_json(data, "header")
    except ValueError as exc:
        raise HeaderError(where, str(exc)) from None
    header_weight_bytes(decoded, where)  # the dtype table and the shapes, as for a local file
    return data
