"""A Hugging Face Hub on 127.0.0.1, speaking the protocol as huggingface_hub uses it.

`/api/models/{repo}` (and `/revision/{rev}`) answer the commit and the file list;
`HEAD` and ranged `GET` on `/{repo}/resolve/{rev}/{file}` carry `X-Repo-Commit`,
`ETag` and `Content-Length`; a gated repo answers 401 with `X-Error-Code:
GatedRepo`, anything unknown a 404 with the hub's error code. Files are sparse:
each is its first bytes (a safetensors header, a whole config) and zeros up to its
size, never written anywhere. Every byte of every body is counted.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class SparseFile:
    """`head` followed by zeros up to `size` bytes."""

    head: bytes
    size: int

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end] inclusive, as a range request asks."""
        end = min(end, self.size - 1)
        if start > end:
            return b""
        part = self.head[start : end + 1]
        return part + b"\0" * (end + 1 - start - len(part))


@dataclass
class FakeRepo:
    """One model repo at one commit."""

    files: dict[str, SparseFile]
    commit: str
    gated: bool = False
    revisions: dict[str, str] = field(default_factory=dict)
    """Other refs (`v1.0`) and the commit each names."""


def sparse_from_folder(folder: Path) -> dict[str, SparseFile]:
    """The folder's files as the Hub would serve them (safetensors and GGUF: the header only)."""
    out: dict[str, SparseFile] = {}
    for path in sorted(folder.iterdir()):
        size = path.stat().st_size
        if path.name.endswith(".safetensors"):
            with path.open("rb") as fh:
                prefix = fh.read(8)
                (n,) = struct.unpack("<Q", prefix)
                out[path.name] = SparseFile(prefix + fh.read(n), size)
        elif path.name.endswith(".gguf"):
            out[path.name] = sparse_gguf(path)
        else:
            out[path.name] = SparseFile(path.read_bytes(), size)
    return out


def sparse_gguf(path: Path) -> SparseFile:
    """A GGUF file as the Hub serves it: its header (up to where the tensor data starts)
    and zeros, which is what a synthesized file holds. The offset comes from vramscope's
    reader (held against gguf-py's in tests/core/gguf): gguf-py's GGUFReader takes 9 s
    over a 150,000-token vocabulary."""
    from core.gguf.local import read_gguf_file

    start = read_gguf_file(path).data_offset
    with path.open("rb") as fh:
        return SparseFile(fh.read(start), path.stat().st_size)


def commit_of(seed: str) -> str:
    """A stable 40-hex commit hash for a test repo."""
    return hashlib.sha1(seed.encode()).hexdigest()


class FakeHub:
    """The server, its repos and what it sent."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.bytes_sent = 0
        self.requests: list[str] = []
        self.seen: list[tuple[str, str, str | None]] = []
        """Every request as it arrived: method, path and query, its Authorization."""
        self.delay_s = 0.0
        self.gate = threading.Event()
        """Open (set) the Hub answers; closed (`hold`) every request waits for `release`:
        a test sees a read in flight as long as it needs to, whatever the machine's load."""
        self.gate.set()
        self.held_where = ""
        self.misbehaviours: list[Misbehaviour] = []
        self.stopped = threading.Event()
        self.listing = ListingOptions()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def hold(self, where: str = "") -> None:
        """Every request whose path contains `where` ("" = all) waits from now, answering
        nothing, until `release` (or `stop`)."""
        self.held_where = where
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def stop(self) -> None:
        self.stopped.set()  # ends every stall and drip
        self.gate.set()
        self._server.shutdown()
        self._server.server_close()

    def add(self, repo_id: str, files: dict[str, SparseFile], **kw: object) -> FakeRepo:
        repo = FakeRepo(files, commit_of(repo_id + json.dumps(sorted(files))), **kw)  # type: ignore[arg-type]
        self.repos[repo_id] = repo
        return repo

    def count(self, n: int, line: str) -> None:
        with self._lock:
            self.bytes_sent += n
            self.requests.append(line)


_API = re.compile(r"/api/models/([^/]+/[^/]+?)(?:/revision/(.+))?$")
_RESOLVE = re.compile(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # quiet: pytest shows failures, not every request

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _send(self, status: int, body: bytes, headers: dict[str, str], send_body: bool) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if send_body:
                sent = _write_body(self, hub, body)
                hub.count(sent, f"{self.command} {self.path} {status}")
            else:
                hub.count(0, f"{self.command} {self.path} {status}")

        def _error(self, status: int, code: str, message: str, send_body: bool) -> None:
            body = json.dumps({"error": message}).encode()
            headers = {"X-Error-Code": code, "X-Error-Message": message}
            headers["Content-Type"] = "application/json"
            self._send(status, body, headers, send_body)

        def _repo(self, repo_id: str, rev: str, send_body: bool) -> tuple[FakeRepo, str] | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", "Repository not found", send_body)
                return None
            if repo.gated and "authorization" not in {k.lower() for k in self.headers}:
                self._error(401, "GatedRepo", "Access to this model is restricted", send_body)
                return None
            commit = repo.commit if rev in ("main", repo.commit) else repo.revisions.get(rev)
            if commit is None:
                self._error(404, "RevisionNotFound", "Invalid rev id", send_body)
                return None
            return repo, commit

        def _answer(self, body: bool) -> None:
            hub.seen.append((self.command, self.path, self.headers.get("Authorization")))
            if hub.held_where in self.path:
                hub.gate.wait()
            if hub.delay_s:
                time.sleep(hub.delay_s)
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            if _misbehave_first(self, hub, path, body):
                return
            if stalls(hub, path):
                return
            if path == "/api/models":  # list_models(search=..., limit=..., expand=...)
                status, data, headers = listing_response(hub, parse_qs(parts.query), self.path)
                self._send(status, data, headers, body)
                return
            api = _API.match(path)
            if api is not None:
                found = self._repo(api.group(1), api.group(2) or "main", body)
                if found is not None:
                    repo, commit = found
                    info = {
                        "id": api.group(1),
                        "modelId": api.group(1),
                        "sha": commit,
                        "private": False,
                        "gated": False,
                        "siblings": [{"rfilename": n} for n in repo.files],
                    }
                    data = json.dumps(info).encode()
                    self._send(200, data, {"Content-Type": "application/json"}, body)
                return
            resolve = _RESOLVE.match(path)
            if resolve is None:
                self._error(404, "EntryNotFound", "Not found", body)
                return
            found = self._repo(resolve.group(1), resolve.group(2), body)
            if found is None:
                return
            repo, commit = found
            file = repo.files.get(resolve.group(3))
            if file is None:
                self._error(404, "EntryNotFound", "Entry not found", body)
                return
            headers = {
                "X-Repo-Commit": commit,
                "ETag": f'"{hashlib.sha1(file.head + str(file.size).encode()).hexdigest()}"',
                "Accept-Ranges": "bytes",
            }
            wanted = _RANGE.match(self.headers.get("Range", "").strip())
            if _ignores_range(hub, path):
                wanted = None
            if wanted is None:
                headers["Content-Length"] = str(file.size)
                self._send(200, file.read(0, file.size - 1) if body else b"", headers, body)
                return
            start = int(wanted.group(1))
            end = int(wanted.group(2)) if wanted.group(2) else file.size - 1
            data = file.read(start, end)
            headers["Content-Range"] = f"bytes {start}-{start + len(data) - 1}/{file.size}"
            headers["Content-Length"] = str(len(data))
            self._send(206, data, headers, body)

    return Handler


def _tags(files: Iterable[str]) -> dict[str, list[str]]:
    """The listing's tags as the Hub derives them from the files: `safetensors`, `gguf`;
    a repo of neither gets no `tags` key at all (the listing does not say)."""
    names = list(files)
    tags = [t for t in ("safetensors", "gguf") if any(f.endswith(f".{t}") for f in names)]
    return {"tags": tags} if tags else {}


# --- Misbehaviour (#26): a Hub that stalls, drips, ignores Range or fails -----------------
# Kept apart from the protocol above: `hub.misbehaviours.append(Misbehaviour(...))`.


@dataclass
class Misbehaviour:
    """How the server misbehaves on requests whose path contains `where` ("" = all)."""

    where: str = ""
    stall_s: float = 0.0
    """Wait this long (or until the server stops) before answering at all."""
    drip_s: float = 0.0
    """Send the body one byte at a time, this many seconds apart."""
    ignore_range: bool = False
    """Answer a range request with 200 and the whole file."""
    status: int | None = None
    """Answer this status (500, 503) with a JSON error body instead."""
    redirect_to: str | None = None
    """Answer 302 with `Location:` this base URL followed by the request's path."""


def _matching(hub: FakeHub, path: str) -> list[Misbehaviour]:
    return [m for m in hub.misbehaviours if m.where in path]


def _misbehave_first(handler: BaseHTTPRequestHandler, hub: FakeHub, path: str, body: bool) -> bool:
    """Stall, then answer an injected status; True when the request is answered."""
    for m in _matching(hub, path):
        if m.stall_s:
            hub.stopped.wait(m.stall_s)
        if m.redirect_to is not None:
            handler.send_response(302)
            handler.send_header("Location", m.redirect_to + handler.path)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            hub.count(0, f"{handler.command} {path} 302")
            return True
        if m.status is not None:
            data = json.dumps({"error": "injected"}).encode()
            handler.send_response(m.status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            if body:
                handler.wfile.write(data)
            hub.count(len(data) if body else 0, f"{handler.command} {path} {m.status}")
            return True
    return False


def _ignores_range(hub: FakeHub, path: str) -> bool:
    return any(m.ignore_range for m in _matching(hub, path))


def _write_body(handler: BaseHTTPRequestHandler, hub: FakeHub, body: bytes) -> int:
    """Write the body (dripped where asked); the bytes sent before the client left."""
    drip = max((m.drip_s for m in _matching(hub, unquote(urlsplit(handler.path).path))), default=0)
    step = 1 if drip else 1 << 16
    sent = 0
    try:
        for i in range(0, len(body), step):
            if drip and hub.stopped.wait(drip):
                break
            handler.wfile.write(body[i : i + step])
            sent += len(body[i : i + step])
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True
    return sent


# --- the model listing (`fit --hub`): pages, expansions, misbehaviour ------------------


@dataclass
class ListingOptions:
    """How `/api/models` answers: page size, per-repo figures, and what goes wrong."""

    page_size: int = 1000
    meta: dict[str, dict[str, object]] = field(default_factory=dict)
    """Per repo: downloads, likes, lastModified, library_name, pipeline_tag overrides."""
    fail_page: int | None = None
    """This page (0-based) answers HTTP 500."""
    malformed: set[str] = field(default_factory=set)
    """Repos whose entry comes with a safetensors expansion of the wrong shape."""
    stall_header_of: set[str] = field(default_factory=set)
    """Repos whose safetensors header ranged GETs never answer (the server sleeps)."""
    next_base: str | None = None
    """Where a page's `Link: rel="next"` points (another host's URL); None: this hub."""


def _params_by_dtype(files: dict[str, SparseFile]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, file in files.items():
        if not name.endswith(".safetensors") or len(file.head) < 8:
            continue
        (n,) = struct.unpack("<Q", file.head[:8])
        header = json.loads(file.head[8 : 8 + n])
        for key, info in header.items():
            if key == "__metadata__":
                continue
            count = 1
            for dim in info["shape"]:
                count *= dim
            counts[info["dtype"]] = counts.get(info["dtype"], 0) + count
    return counts


def listing_entry(hub: FakeHub, repo_id: str, expand: list[str]) -> dict[str, object]:
    """One repo as the Hub lists it (the expansions asked for, else the short form)."""
    repo = hub.repos[repo_id]
    meta = hub.listing.meta.get(repo_id, {})
    library = str(meta.get("library_name", "transformers"))
    entry: dict[str, object] = {
        "id": repo_id,
        "downloads": meta.get("downloads", 1234),
        "library_name": library,
        "gated": "auto" if repo.gated else False,
        **_tags(repo.files),
    }
    if not expand:
        entry["gated"] = repo.gated
        return entry
    entry["tags"] = [library, *entry.get("tags", [])]  # type: ignore[list-item]
    entry["likes"] = meta.get("likes", 0)
    entry["lastModified"] = meta.get("lastModified", "2025-01-01T00:00:00.000Z")
    entry["pipeline_tag"] = meta.get("pipeline_tag", "text-generation")
    entry["sha"] = repo.commit
    config = repo.files.get("config.json")
    if config is not None:
        entry["config"] = json.loads(config.head)
    params = _params_by_dtype(repo.files)
    if repo_id in hub.listing.malformed:
        entry["safetensors"] = {"parameters": "many"}  # no "total": ModelInfo cannot build
    elif params:
        entry["safetensors"] = {"parameters": params, "total": sum(params.values())}
    return {k: v for k, v in entry.items() if k in ("id", *expand) or k == "_id"}


def listing_response(
    hub: FakeHub, query: dict[str, list[str]], raw_path: str
) -> tuple[int, bytes, dict[str, str]]:
    """`/api/models`: search, author, filter, sort, limit, expand, pages by `cursor`."""
    needle = query.get("search", [""])[0].casefold()
    author = query.get("author", [""])[0]
    wanted = query.get("filter", [])
    limit = int(query.get("limit", ["1000"])[0])
    expand = query.get("expand", [])
    page = int(query.get("cursor", ["0"])[0])
    names = [
        n
        for n in sorted(hub.repos)
        if needle in n.casefold()
        and (not author or n.startswith(author + "/"))
        and all(
            str(hub.listing.meta.get(n, {}).get("library_name", "transformers")) == w
            for w in wanted
        )
    ]
    sort = query.get("sort", [""])[0]
    if sort:
        default: object = "" if sort == "lastModified" else 0
        names.sort(key=lambda n: hub.listing.meta.get(n, {}).get(sort, default), reverse=True)  # type: ignore[arg-type,return-value]
    json_headers = {"Content-Type": "application/json"}
    if hub.listing.fail_page is not None and page == hub.listing.fail_page:
        return 500, b'{"error": "Internal Error"}', json_headers
    size = min(limit, hub.listing.page_size)
    chunk = names[page * size : (page + 1) * size]
    found = [listing_entry(hub, n, expand) for n in chunk]
    headers = dict(json_headers)
    if (page + 1) * size < len(names):
        base = raw_path.split("&cursor=")[0]
        where = hub.listing.next_base or hub.url
        headers["Link"] = f'<{where}{base}&cursor={page + 1}>; rel="next"'
    return 200, json.dumps(found).encode(), headers


def stalls(hub: FakeHub, path: str) -> bool:
    """A header read of a repo in `stall_header_of`: sleep past any client's deadline."""
    found = _RESOLVE.match(path)
    if found is None or found.group(1) not in hub.listing.stall_header_of:
        return False
    if not found.group(3).endswith(".safetensors"):
        return False
    time.sleep(30)
    return True
