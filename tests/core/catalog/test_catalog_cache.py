"""The catalog's on-disk cache: used when files are unchanged, rebuilt when they change
or the cache file is damaged, safe against concurrent writers, skipped by --no-cache."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

import core.catalog.sources as sources
from core.catalog.disk_cache import (
    CACHE_FILE,
    CatalogCache,
    entry_from_json,
    entry_to_json,
)
from core.catalog.resolve import build_catalog
from core.paths import cache_dir
from tests.core.catalog.catalog_fixtures import HubCache, write_tiny_model
from tui.cli import main


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "vramscope" / CACHE_FILE


@pytest.fixture
def models(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    for name in ("alpha", "beta"):
        write_tiny_model(root / name)
    return root


def fresh_build(root: Path, **kw: Any) -> Any:
    """A build as a new process would do it: nothing kept in memory."""
    sources._MEMO.clear()
    return build_catalog([root], include_profiles=False, include_hf_cache=False, env={}, **kw)


class ReadCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = sources._read_folder

        def counted(*args: Any) -> Any:
            self.calls += 1
            return real(*args)

        monkeypatch.setattr(sources, "_read_folder", counted)


def test_cache_location_follows_xdg(tmp_path: Path) -> None:
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "vramscope"
    relative = cache_dir({"XDG_CACHE_HOME": "relative", "HOME": str(tmp_path / "home")})
    assert relative == tmp_path / "home" / ".cache" / "vramscope"


def test_a_second_process_reads_no_folder(
    models: Path, xdg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = fresh_build(models)
    assert xdg.is_file()
    counter = ReadCounter(monkeypatch)
    second = fresh_build(models)
    assert counter.calls == 0
    assert second.entries == first.entries
    assert len(second.entries) == 2


def test_a_changed_file_is_read_again(
    models: Path, xdg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_build(models)
    config = models / "alpha" / "config.json"
    data = json.loads(config.read_text())
    data["num_hidden_layers"] = 3
    config.write_text(json.dumps(data))
    os.utime(config, ns=(1, 1))  # even a restored mtime: size and inode differ
    counter = ReadCounter(monkeypatch)
    catalog = fresh_build(models)
    assert counter.calls == 1
    uncached = fresh_build(models, use_cache=False)
    assert catalog.entries == uncached.entries


@pytest.mark.parametrize(
    "damage",
    # class: cache files that decode but do not fit (another build's, another shape)
    [b"", b"[1, 2]", b'{"fingerprint": "other", "entries": {}}'],
)
def test_a_cache_of_another_build_is_rebuilt_silently(
    models: Path, xdg: Path, capsys: pytest.CaptureFixture[str], damage: bytes
) -> None:
    fresh_build(models)
    xdg.write_bytes(damage)
    sources._MEMO.clear()
    assert main(["models", "--models-dir", str(models), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert {m["name"] for m in json.loads(out)["models"]} >= {"alpha", "beta"}
    assert json.loads(xdg.read_bytes())["entries"]  # rewritten, valid


@pytest.mark.parametrize(
    "damage", [b"\x00\xff garbage", b"{" * 5000, None], ids=["garbage", "deep", "fifo"]
)
def test_a_cache_file_that_cannot_be_read_is_kept_aside_under_the_printed_name(
    models: Path, xdg: Path, capsys: pytest.CaptureFixture[str], damage: bytes | None
) -> None:
    fresh_build(models)
    xdg.unlink()
    if damage is None:
        os.mkfifo(xdg)
    else:
        xdg.write_bytes(damage)
    sources._MEMO.clear()
    assert main(["models", "--models-dir", str(models), "--json"]) == 0
    out, err = capsys.readouterr()
    assert {m["name"] for m in json.loads(out)["models"]} >= {"alpha", "beta"}
    assert err.count("\n") == 1
    found = re.search(r"kept it as (\S+catalog\.json\.unreadable-\d{8}T\d{6}Z) ", err)
    assert found is not None, err
    aside = Path(found.group(1))
    if damage is None:
        assert stat.S_ISFIFO(aside.lstat().st_mode)
    else:
        assert aside.read_bytes() == damage
    assert json.loads(xdg.read_bytes())["entries"]  # a new cache beside it


def test_entries_that_do_not_fit_are_misses(models: Path, xdg: Path) -> None:
    fresh_build(models)
    doc = json.loads(xdg.read_bytes())
    for item in doc["entries"].values():
        item["entry"]["weights_source"] = "NOT_A_SOURCE"
    xdg.write_text(json.dumps(doc))
    assert len(fresh_build(models).entries) == 2


def test_no_cache_writes_nothing(
    models: Path, xdg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources._MEMO.clear()
    assert main(["models", "--models-dir", str(models), "--no-cache"]) == 0
    assert not xdg.exists()
    assert "alpha" in capsys.readouterr().out


def test_entry_json_round_trip(models: Path, xdg: Path) -> None:
    for entry in fresh_build(models).entries:
        assert entry_from_json(json.loads(json.dumps(entry_to_json(entry)))) == entry


def _writer(path: str, tag: int, rounds: int) -> None:
    for i in range(rounds):
        cache = CatalogCache(Path(path))
        cache.put_json(f"k{tag}-{i}", [tag, i], {"tag": tag, "blob": "x" * 20000})
        cache.save()


def test_concurrent_writers_never_leave_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "cache" / CACHE_FILE
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), t, 25)) for t in range(3)]
    for p in procs:
        p.start()
    seen = 0
    while any(p.is_alive() for p in procs):
        if path.exists():
            json.loads(path.read_bytes())  # always a whole file
            seen += 1
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    doc = json.loads(path.read_bytes())
    # Each save merges into the file as it is then, under its lock: no writer's entry lost.
    assert sorted(doc["entries"]) == sorted(f"k{t}-{i}" for t in range(3) for i in range(25))
    assert not [n for n in os.listdir(path.parent) if n.endswith(".tmp")]


def test_two_caches_open_at_once_both_keep_their_entries(tmp_path: Path) -> None:
    path = tmp_path / "cache" / CACHE_FILE
    first, second = CatalogCache(path), CatalogCache(path)  # both read the same old file
    first.put_json("alpha", [1], {"name": "alpha"})
    second.put_json("beta", [2], {"name": "beta"})
    first.save()
    second.save()
    again = CatalogCache(path)
    assert again.get_json("alpha", [1]) == {"name": "alpha"}
    assert again.get_json("beta", [2]) == {"name": "beta"}


def test_hf_cache_repos_are_not_walked_again(
    tmp_path: Path, xdg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.catalog.hf_cache import _import_hub

    hub = HubCache(tmp_path / "hub")
    hub.add_tiny("org/one")
    hub.add_tiny("org/two")

    def build() -> Any:
        sources._MEMO.clear()
        return build_catalog(hf_cache_dir=hub.root, include_profiles=False, env={})

    first = build()
    _, manager = _import_hub()
    walked: list[Path] = []
    real = manager._scan_cached_repo

    def counted(path: Path) -> Any:
        walked.append(path)
        return real(path)

    monkeypatch.setattr(manager, "_scan_cached_repo", counted)
    assert build().entries == first.entries and walked == []
    hub.add_tiny("org/three")
    third = build()
    assert [p.name for p in walked] == ["models--org--three"]
    assert len(third.entries) == 3
    sources._MEMO.clear()
    uncached = build_catalog(hf_cache_dir=hub.root, include_profiles=False, env={}, use_cache=False)
    assert uncached.entries == third.entries
