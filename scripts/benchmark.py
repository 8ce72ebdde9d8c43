"""vramscope's speed and memory figures, each against a reference measured in the same run.

Run with `make bench`. Prints figures; asserts nothing (tests never time things).
The other parts of the product add their own scripts (scripts/bench_*.py); this
one runs the estimator figures, then each of them in turn.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.backend import Backend  # noqa: E402
from core.catalog.model_dir import read_model_dir  # noqa: E402
from core.catalog.profiles import load_profile  # noqa: E402
from core.estimate.available import AvailableMemory  # noqa: E402
from core.estimate.estimate import EstimateSettings, Workload, estimate  # noqa: E402
from core.model.safetensors_header import DTYPE_ITEMSIZE, read_header_json  # noqa: E402
from tests.model_writers import disk_usage, write_safetensors_skeleton, write_skeleton  # noqa: E402


def median_seconds(fn: Callable[[], object], repeat: int, inner: int = 1) -> float:
    """Median wall time of one call, over `repeat` samples of `inner` calls each."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def bench_estimate(tmp: Path) -> None:
    folder = write_skeleton(
        load_profile("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"), tmp / "llama"
    )
    model = read_model_dir(folder)
    settings = EstimateSettings(Backend.ROCM, AvailableMemory(82_463_372_083, "bench"))
    workload = Workload(640)
    one = median_seconds(lambda: estimate(model, workload, settings), repeat=50, inner=200)
    reread = median_seconds(
        lambda: estimate(read_model_dir(folder), workload, settings), repeat=20, inner=5
    )
    print("estimate, already-read model (Meta-Llama-3.1-8B-Instruct-4bit, 640 tokens, ROCm)")
    print(
        f"  median {one * 1e6:8.1f} us per estimate    target <= 50 us    "
        f"{'OK' if one <= 50e-6 else 'OVER TARGET'}"
    )
    print(
        f"  reference: read the folder + estimate {reread * 1e6:8.1f} us "
        f"(the pre-read model is {reread / one:.0f}x cheaper)"
    )


def shrunk_copy(src: Path, dest: Path, target_bytes: int) -> Path:
    """The same config, index, shard files and tensor names with tiny shapes and real data.

    Only the weight bytes differ from `src`: about `target_bytes` in all, written out
    (not sparse).
    """
    dest.mkdir()
    for path in src.iterdir():
        if not path.name.endswith(".safetensors"):
            dest.joinpath(path.name).write_bytes(path.read_bytes())
    shards = sorted(src.glob("*.safetensors"))
    headers = [read_header_json(p)[0] for p in shards]
    count = sum(len(h) - ("__metadata__" in h) for h in headers)
    per_tensor = max(target_bytes // count, 4)
    for path, header in zip(shards, headers, strict=True):
        meta = header.pop("__metadata__", {})
        tensors = [
            (name, info["dtype"], (per_tensor // DTYPE_ITEMSIZE[info["dtype"]],))
            for name, info in header.items()
        ]
        write_safetensors_skeleton(dest / path.name, tensors, meta)
        size = (dest / path.name).stat().st_size
        with (dest / path.name).open("r+b") as fh:
            header_len = int.from_bytes(fh.read(8), "little")
            fh.seek(8 + header_len)
            fh.write(b"\1" * (size - 8 - header_len))
    return dest


def bench_header_scan(tmp: Path) -> None:
    profile = load_profile("mlx-community/Qwen3-30B-A3B-4bit")
    print("header scan: read_model_dir (config + index/headers), never the data region")
    print("  reference: the same tensor names, shards and index with shapes shrunk to ~1 MB")
    print("  of real data, so only the weight bytes differ")
    for layout, label in (
        ("headers", "with index (metadata.total_size)"),
        ("headers-no-index", "4 shard headers, no index"),
    ):
        big = write_skeleton(profile, tmp / f"big-{layout}", layout=layout)
        small = shrunk_copy(big, tmp / f"small-{layout}", 1024 * 1024)
        big_bytes = sum(p.stat().st_size for p in big.glob("*.safetensors"))
        small_bytes = sum(p.stat().st_size for p in small.glob("*.safetensors"))
        t_big = median_seconds(lambda f=big: read_model_dir(f), repeat=30, inner=10)
        t_small = median_seconds(lambda f=small: read_model_dir(f), repeat=30, inner=10)
        ratio = t_big / t_small
        print(f"  {label}:")
        print(f"    {small_bytes / 1e6:8.2f} MB model  {t_small * 1e3:7.3f} ms")
        print(
            f"    {big_bytes / 1e9:8.2f} GB model  {t_big * 1e3:7.3f} ms   {ratio:4.2f}x the "
            f"1 MB model   target <= 2x  {'OK' if ratio <= 2.0 else 'OVER TARGET'}"
        )
        print(f"    (the 17 GB skeleton takes {disk_usage(big) / 1024:.0f} KiB on disk)")


def run_part_scripts() -> int:
    status = 0
    for script in sorted((ROOT / "scripts").glob("bench_*.py")):
        print(f"\n== {script.name} ==", flush=True)
        proc = subprocess.run([sys.executable, str(script)], cwd=ROOT)
        status |= proc.returncode
    return status


def main() -> int:
    print(f"vramscope benchmark on {sys.platform}, Python {sys.version.split()[0]}\n")
    with tempfile.TemporaryDirectory() as tmp:
        bench_estimate(Path(tmp))
        print()
        bench_header_scan(Path(tmp))
    return run_part_scripts()


if __name__ == "__main__":
    sys.exit(main())
