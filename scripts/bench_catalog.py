"""Catalog build time for a Hugging Face cache of many repos (prints figures, asserts nothing).

Builds a cache the way the hub lays it out (blobs, refs, relative symlinks) in a
temp folder: N repos cycling through the built-in profiles, each written as
header-only safetensors over sparse data (so a "61 GB" repo costs kilobytes of
disk) plus the usual tokenizer and generation files. Then times `build_catalog`
on it, best and median of several runs, and the `scan_cache_dir` share: without the
on-disk cache (every new process reads every folder) and with it (a new process
reads `$XDG_CACHE_HOME/vramscope/catalog.json`, here a temp folder, and only stats
the files). The target is a new process under 0.5 s for 500 repos.

The work should grow with the number of repos and their files, not with their
bytes: the second figure doubles every repo's apparent size to show it.

    python scripts/bench_catalog.py [--repos 500] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.catalog import sources as catalog_module
from core.catalog.disk_cache import CACHE_FILE
from core.catalog.hf_cache import _import_hub
from core.catalog.profiles import PROFILE_DIR, Profile, list_profile_ids, load_profile
from core.catalog.resolve import build_catalog
from core.model.safetensors_header import tensor_bytes
from core.model.weight_files import INDEX_FILE
from core.paths import repo_folder_name
from tests.model_writers import write_cache_file, write_ref, write_skeleton

SHARD = 5 * 10**9

SIDE_FILES = {
    "tokenizer.json": b'{"version": "1.0"}',
    "tokenizer_config.json": b"{}",
    "special_tokens_map.json": b"{}",
    "generation_config.json": b'{"do_sample": true}',
    "README.md": b"# model card\n",
}


def as_published(profile: Profile) -> Profile:
    """The profile split the way it is published: 5 GB shards, as `save_pretrained` does.

    Profiles that record their real split keep it; the others (BF16 originals whose
    split is unknown) are cut greedily at 5 GB, which is what their repos ship.
    """
    if profile.tensors is None or profile.shard_sizes or (profile.weight_bytes or 0) <= SHARD:
        return profile
    counts: list[int] = []
    size = count = 0
    for _, dtype, shape in profile.tensors:
        nbytes = tensor_bytes(dtype, shape)
        if count and size + nbytes > SHARD:
            counts.append(count)
            size = count = 0
        size += nbytes
        count += 1
    counts.append(count)
    n = len(counts)
    names = [f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)]
    return replace(profile, shard_sizes=tuple(zip(names, counts, strict=True)))


def write_mlx_index(profile: Profile, folder: Path) -> None:
    """mlx-lm writes `model.safetensors.index.json` even for a single file."""
    weight_map = {name: file for file, ts in profile.shard_plan().items() for name, _, _ in ts}
    index = {
        "metadata": {"total_size": profile.weight_bytes},
        "weight_map": dict(sorted(weight_map.items())),
    }
    (folder / INDEX_FILE).write_text(json.dumps(index, indent=4))


def build_cache(root: Path, repos: int, grow: int = 1) -> None:
    """`repos` model repos cycling through the profiles; `grow` multiplies data sizes."""
    profiles = list_profile_ids()
    staging = root.parent / "staging"
    for i in range(repos):
        profile = as_published(load_profile(profiles[i % len(profiles)]))
        repo_id = f"bench-org-{i // 100}/{profile.repo_id.split('/')[1]}-{i}"
        repo = root / repo_folder_name(repo_id)
        commit = f"{i:040x}"
        folder = write_skeleton(profile, staging / str(i))
        if profile.header_metadata.get("format") == "mlx":
            write_mlx_index(profile, folder)
        for path in sorted(folder.iterdir()):
            if path.suffix == ".safetensors":
                if grow > 1:  # same header, a larger sparse hole
                    os.truncate(path, path.stat().st_size * grow)
                write_cache_file(repo, commit, path.name, from_file=path)
            else:
                write_cache_file(repo, commit, path.name, path.read_bytes())
        for name, data in SIDE_FILES.items():
            write_cache_file(repo, commit, name, data)
        write_ref(repo, "main", commit)
        shutil.rmtree(folder)


def time_runs(fn: Callable[[], object], runs: int, before: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(runs):
        before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def ms(times: list[float]) -> str:
    return f"best {min(times) * 1000:.0f} ms, median {statistics.median(times) * 1000:.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    hub, _ = _import_hub()
    import_s = time.perf_counter() - start
    data = sum(p.stat().st_size for p in PROFILE_DIR.iterdir())
    print(f"profile data: {len(list_profile_ids())} profiles, {data} bytes ({data / 1024:.1f} KiB)")
    print(f"huggingface_hub import: {import_s * 1000:.0f} ms (once per process, not counted below)")

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="vramscope-bench-") as tmp:
        for grow in (1, 2):
            root = Path(tmp) / f"hub-x{grow}"
            build_cache(root, args.repos, grow)
            apparent = sum(
                (Path(d) / f).stat().st_size
                for d, _, files in os.walk(root)
                for f in files
                if Path(d).name == "blobs"
            )

            disk = Path(tmp) / f"xdg-cache-x{grow}"

            def build(root: Path = root, use_cache: bool = False, disk: Path = disk) -> None:
                catalog = build_catalog(
                    hf_cache_dir=root,
                    include_profiles=False,
                    env={},
                    use_cache=use_cache,
                    cache_dir=disk,
                )
                assert len(catalog.entries) == args.repos, catalog.skipped[:3]

            def scan(root: Path = root) -> None:
                hub.scan_cache_dir(cache_dir=root)

            def new_process(disk: Path = disk) -> None:
                catalog_module._MEMO.clear()  # what a new process starts without

            # Without the on-disk cache: every new process reads every folder.
            cold = time_runs(build, args.runs, before=new_process)
            warm = time_runs(build, args.runs, before=lambda: None)
            # With it: the first process ever fills it, later ones read it.
            shutil.rmtree(disk, ignore_errors=True)
            new_process()
            start = time.perf_counter()
            build(use_cache=True)
            filling = time.perf_counter() - start
            cached_cold = time_runs(lambda: build(use_cache=True), args.runs, before=new_process)
            cached_warm = time_runs(lambda: build(use_cache=True), args.runs, before=lambda: None)
            scans = time_runs(scan, args.runs, before=lambda: None)
            size = (disk / CACHE_FILE).stat().st_size
            print(f"cache of {args.repos} repos, {apparent / 1e12:.1f} TB apparent:")
            print(f"  no disk cache, new process:            {ms(cold)}")
            print(f"  no disk cache, again in the process:   {ms(warm)}")
            print(f"  disk cache, first process ever (fills it): {filling * 1000:.0f} ms")
            print(f"  disk cache, new process:               {ms(cached_cold)}")
            print(f"  disk cache, again in the process:      {ms(cached_warm)}")
            print(f"  huggingface_hub.scan_cache_dir alone:  {ms(scans)}")
            print(
                f"  disk cache file: {size} bytes; new process {min(cold) / min(cached_cold):.1f}x "
                "faster with it"
            )
            figures[f"x{grow}_cold_s"] = round(min(cold), 4)
            figures[f"x{grow}_warm_s"] = round(min(warm), 4)
            figures[f"x{grow}_cached_cold_s"] = round(min(cached_cold), 4)
            figures[f"x{grow}_cached_warm_s"] = round(min(cached_warm), 4)
            figures[f"x{grow}_cache_fill_s"] = round(filling, 4)
    print(json.dumps({"repos": args.repos, "profile_data_bytes": data, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
