"""Builders for catalog tests: HF caches laid out as the hub writes them, model folders.

Everything is real files: blobs, refs and relative symlinks under `models--org--name`,
safetensors headers over sparse data (skeletons) or over real bytes (tiny models).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import pwd
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from core.catalog.profiles import load_profile
from core.paths import repo_folder_name
from tests.model_writers import write_cache_file, write_ref, write_skeleton

T = TypeVar("T")

TINY_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 256,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}


def commit_hash(seed: str) -> str:
    """A 40-hex commit id, stable per seed."""
    import hashlib

    return hashlib.sha1(seed.encode()).hexdigest()


def tiny_safetensors(dtype: str = "BF16", layers: int = 2, hidden: int = 64) -> bytes:
    """A small safetensors file with real, non-zero data (HF style, padded header)."""
    itemsize = {"BF16": 2, "F16": 2, "F32": 4}[dtype]
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    shapes = {"model.embed_tokens.weight": [256, hidden]}
    for i in range(layers):
        shapes[f"model.layers.{i}.self_attn.q_proj.weight"] = [hidden, hidden]
        shapes[f"model.layers.{i}.mlp.up_proj.weight"] = [128, hidden]
    for name, shape in shapes.items():
        size = shape[0] * shape[1] * itemsize
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    data = bytes((i * 37 + 11) % 251 for i in range(offset))
    return struct.pack("<Q", len(text)) + text + data


def tiny_weight_bytes(dtype: str = "BF16", layers: int = 2, hidden: int = 64) -> int:
    """Header-sum weight bytes of `tiny_safetensors` with the same arguments."""
    itemsize = {"BF16": 2, "F16": 2, "F32": 4}[dtype]
    return (256 * hidden + layers * (hidden * hidden + 128 * hidden)) * itemsize


def write_tiny_model(folder: Path, config: dict[str, Any] | None = None, **kw: Any) -> Path:
    """A folder with a config.json and one real `model.safetensors`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config or TINY_CONFIG, indent=2))
    (folder / "model.safetensors").write_bytes(tiny_safetensors(**kw))
    return folder


class HubCache:
    """A Hugging Face cache folder that tests fill repo by repo."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def repo_path(self, repo_id: str) -> Path:
        return self.root / repo_folder_name(repo_id)

    def add_files(
        self,
        repo_id: str,
        files: dict[str, bytes | Path],
        *,
        commit: str | None = None,
        refs: tuple[str, ...] = ("main",),
    ) -> Path:
        """Write one snapshot; `Path` values are moved in as blobs (kept sparse)."""
        repo = self.repo_path(repo_id)
        commit = commit or commit_hash(repo_id + str(sorted(files)))
        for name, content in files.items():
            if isinstance(content, Path):
                write_cache_file(repo, commit, name, from_file=content)
            else:
                write_cache_file(repo, commit, name, content)
        for ref in refs:
            write_ref(repo, ref, commit)
        return repo / "snapshots" / commit

    def add_profile(
        self, profile_id: str, *, as_repo: str | None = None, layout: str = "headers", **kw: Any
    ) -> Path:
        """A built-in profile written as a header-only repo (sparse weight blobs)."""
        staging = Path(tempfile.mkdtemp(dir=self.root.parent))
        folder = write_skeleton(load_profile(profile_id), staging / "m", layout=layout)
        files: dict[str, bytes | Path] = {}
        for path in sorted(folder.iterdir()):
            files[path.name] = path if path.suffix == ".safetensors" else path.read_bytes()
        snapshot = self.add_files(as_repo or profile_id, files, **kw)
        shutil.rmtree(staging)
        return snapshot

    def add_tiny(self, repo_id: str, config: dict[str, Any] | None = None, **kw: Any) -> Path:
        """A tiny repo with real weight data."""
        return self.add_files(
            repo_id,
            {
                "config.json": json.dumps(config or TINY_CONFIG).encode(),
                "model.safetensors": tiny_safetensors(),
                "tokenizer.json": b"{}",
            },
            **kw,
        )


@contextlib.contextmanager
def shared_tmp_dir() -> Iterator[Path]:
    """A temp folder every user can traverse (pytest's own is root-only when run as root)."""
    path = Path(tempfile.mkdtemp(prefix="vramscope-catalog-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for root, dirs, _ in os.walk(path):
            for d in dirs:
                with contextlib.suppress(OSError):  # a dangling link in the way is fine
                    os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(path, ignore_errors=True)


def run_unprivileged(fn: Callable[[], T]) -> T:
    """Run `fn` as a non-root user, so file permissions apply as they do for users.

    Root reads any folder whatever its mode. When the tests run as root, a forked
    child drops to `nobody` (modules are already imported, so it needs no access
    to the venv), runs `fn` and sends its pickled result back through a pipe.
    """
    if os.geteuid() != 0:
        return fn()
    # The child cannot read the venv or the interpreter's stdlib once it is `nobody`:
    # import what the catalog imports lazily (huggingface_hub and its urllib) first.
    from core.catalog.hf_cache import _import_hub

    _import_hub()
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no `nobody` user to drop to")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        status = 0
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            payload = pickle.dumps(("ok", fn()))
        except BaseException as exc:
            payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
            status = 1
        with os.fdopen(write_fd, "wb") as out:
            out.write(payload)
        os._exit(status)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    if kind != "ok":
        raise AssertionError(f"unprivileged child failed: {value}")
    return value  # type: ignore[no-any-return]
