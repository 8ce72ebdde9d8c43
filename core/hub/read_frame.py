"""What every read of a Hub repo does around its own fetch, in one place (#40): the
safetensors headers (`core.hub.remote`) and a GGUF's Range reads
(`core.hub.gguf_remote`) share it.

- `start_read`: the repo id and revision checked, the Hub settings, the endpoint, the
  store and its copy of the revision, and whether the Hub is off;
- `run_online`: the one deadline of the whole read (`core.hub.fetch`), the hub's
  offline switch lifted for it, a read past it `HubTimedOutError`;
- `info_or_reason`: the model info (`model_info`: the commit and the file names),
  or, where the Hub cannot be reached and the store has a copy, why to answer from it;
- `fetch_failure`: what went wrong while fetching, as its typed Hub error;
- `store_write`: a store write whose OSError is named as the local fault it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from core.display_text import clean_text
from core.errors import (
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
from core.hub.fetch import Deadline, HubTimeout, client_closed, get_capped, run_bounded
from core.hub.options import HubOptions
from core.hub.session import hub_offline_reason, online, timed_out, unreachable
from core.hub.settings import check_settings, hub_endpoint
from core.model.config import decode_json
from core.paths import hub_store_dir

INFO_CAP = 32 * 1024 * 1024
"""The model info (the file list of a repo with tens of thousands of files fits)."""

T = TypeVar("T")


@dataclass(frozen=True)
class ReadStart:
    """A read's checked inputs and what the store and the settings say before it."""

    repo_id: str
    revision: str
    endpoint: str
    root: Path
    """The vramscope Hub store."""
    stored: store.StoredModel | None
    """The store's copy of the revision, when there is one."""
    offline: str | None
    """Why the Hub is off (`--offline`, HF_HUB_OFFLINE), else None."""


def start_read(repo_id: str, options: HubOptions, env: Mapping[str, str]) -> ReadStart:
    """The read's inputs checked (ModelError for a name that is no repo id, UsageError
    for a revision or Hub setting that cannot be used), and the store looked up."""
    if not store.is_repo_id(repo_id):
        raise ModelError(shown(repo_id), f"not a Hub repo id ({store.REPO_ID_RULE})")
    revision = options.revision or "main"
    if not store.is_revision(revision) and store.COMMIT_RE.fullmatch(revision) is None:
        raise UsageError(
            "--revision",
            f"{shown(revision)} is not a branch, tag or commit name "
            "(letters, digits and -_./, not starting with / or ., no ..)",
        )
    check_settings(env)
    root = hub_store_dir(env)
    offline = "--offline" if options.offline else hub_offline_reason(env)
    stored = store.lookup(root, repo_id, revision)
    return ReadStart(repo_id, revision, hub_endpoint(env), root, stored, offline)


def run_online(start: ReadStart, options: HubOptions, read: Callable[[Deadline], T]) -> T:
    """`read` under the read's one deadline, the hub's offline switch lifted for it; a
    read past the deadline is `HubTimedOutError`."""
    check_settings()  # huggingface_hub reads os.environ itself, at import
    deadline = Deadline.after(options.timeout_s)
    with online(options.timeout_s):
        try:
            return run_bounded(lambda: read(deadline), deadline)
        except HubTimeout:
            raise HubTimedOutError(
                start.repo_id, timed_out_line(start.endpoint, options.timeout_s)
            ) from None


def info_or_reason(
    start: ReadStart, options: HubOptions, deadline: Deadline
) -> tuple[str, list[str]] | str:
    """The commit the revision names and the repo's file names; or, when the Hub cannot
    be reached and the store has a copy, why the answer comes from that copy (`the Hub
    is unreachable (...)`). Raises the typed Hub error otherwise."""
    try:
        return model_info(start.repo_id, start.revision, start.endpoint, deadline)
    except HubError:
        raise
    except Exception as exc:
        reason = unreachable(exc)
        if reason is None:
            raise hub_error(start.repo_id, start.revision, exc) from None
        lost = HubUnreachableError
        if timed_out(exc):
            reason, lost = f"timed out after {options.timeout_s:g} s", HubTimedOutError
        if start.stored is None:
            raise lost(
                start.repo_id,
                f"the Hub at {start.endpoint} is unreachable ({reason}) and this repo was "
                "never read; retry, raise --hub-timeout or point HF_ENDPOINT at a mirror",
            ) from None
        return f"the Hub is unreachable ({reason})"


def fetch_failure(start: ReadStart, options: HubOptions, exc: Exception) -> HubError:
    """What went wrong while fetching a repo's files, as its typed Hub error."""
    if timed_out(exc):
        return HubTimedOutError(start.repo_id, timed_out_line(start.endpoint, options.timeout_s))
    reason = unreachable(exc)
    if reason is not None:
        return HubUnreachableError(
            start.repo_id, f"the Hub at {start.endpoint} stopped answering ({reason})"
        )
    return hub_error(start.repo_id, start.revision, exc)


def timed_out_line(endpoint: str, timeout_s: float) -> str:
    return (
        f"the Hub at {endpoint} did not finish the read within {timeout_s:g} s "
        "(--hub-timeout); nothing was stored"
    )


def shown(text: str) -> str:
    """A name as typed, escaped where it holds control characters."""
    return text if text.isprintable() else ascii(text)


def usable_offline(repo_id: str, stored: store.StoredModel, why: str) -> None:
    """HubError when the stored copy was damaged since it was written."""
    damage = store.verify(stored.path)
    if damage is not None and damage != store.NO_MANIFEST:
        raise HubError(
            repo_id,
            f"the copy read from the Hub at {stored.commit[:12]} is damaged ({damage}) "
            f"and {why}: read it again with the Hub reachable",
        )


def model_info(
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


def hub_error(repo_id: str, revision: str, exc: BaseException) -> HubError:
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


def store_write(repo_id: str, root: Path, write: Callable[[], T]) -> T:
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
