"""Build llama.cpp's tools the llama.cpp checks use, outside the tree (opt-in, #40).

The ground truth for vramscope's llama.cpp memory model is llama.cpp itself. PyPI serves
llama-cpp-python only as an sdist whose `vendor/llama.cpp` is a complete llama.cpp
checkout; this script downloads that sdist with pip, unpacks it and builds the two tools the
golden tables and the live tests need with cmake and ninja at low priority:
`llama-fit-params` (the dry run `--fit` makes: its per-device MiB table),
`llama-completion` (a real load and one token, which prints every buffer llama.cpp
allocates at 0.01 MiB), `llama-batched-bench` (the same with `--kv-unified`, which
llama-completion does not take) and `ggml-rpc-server` (a device on this CPU, for
`--n-gpu-layers`). Nothing lands
in the repository: everything goes under `$XDG_CACHE_HOME/vramscope-dev/` (default
`~/.cache/vramscope-dev/`). `GGML_NATIVE=OFF`: the build machine's vector unit (AVX2 or
AVX-512) differs between sessions, and the memory figures do not depend on it.

Usage: `python scripts/build_llama_cpp.py` prints the tools' folder (and builds what is
missing). `--print-path` prints `llama-fit-params`'s path without building.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

# The llama-cpp-python release whose vendored llama.cpp the golden tables were made with.
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
TOOL = "llama-fit-params"
TOOLS = (TOOL, "llama-completion", "llama-batched-bench", "ggml-rpc-server")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vramscope-dev" / f"llama.cpp-{LLAMA_CPP_PYTHON_VERSION}"


def source_dir(root: Path) -> Path:
    return root / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}" / "vendor" / "llama.cpp"


def tool_path(root: Path | None = None, name: str = TOOL) -> Path:
    return source_dir(root or cache_root()) / "build" / "bin" / name


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def _fetch_source(root: Path) -> None:
    if source_dir(root).is_dir():
        return
    root.mkdir(parents=True, exist_ok=True)
    sdist = root / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz"
    if not sdist.is_file():
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
                "-d",
                str(root),
            ]
        )
    with tarfile.open(sdist) as tar:
        tar.extractall(root, filter="data")


def build(root: Path) -> Path:
    _fetch_source(root)
    src = source_dir(root)
    missing = [name for name in ("cmake", "ninja") if shutil.which(name) is None]
    if missing:
        raise SystemExit(
            f"build_llama_cpp: {', '.join(missing)} not found "
            "(apt-get install cmake ninja-build, or pip install cmake ninja)"
        )
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    # Configured every time (a few seconds, nothing rebuilt when nothing changed), so a
    # cache folder configured by an older version of this script gains the new options.
    _run(
        [
            *nice,
            "cmake",
            "-B",
            "build",
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DGGML_NATIVE=OFF",
            # RPC: a local rpc-server stands in for a GPU, so that partial offload
            # (--n-gpu-layers) is checked against llama.cpp on a CPU-only machine.
            "-DGGML_RPC=ON",
            "-DLLAMA_CURL=OFF",
            "-DLLAMA_OPENSSL=OFF",
            "-DLLAMA_BUILD_TESTS=OFF",
            "-DLLAMA_BUILD_EXAMPLES=OFF",
            "-DLLAMA_BUILD_SERVER=OFF",
            "-DBUILD_SHARED_LIBS=OFF",
        ],
        cwd=src,
    )
    _run([*nice, "ninja", "-C", "build", *TOOLS], cwd=src)
    return tool_path(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print-path", action="store_true", help="print the tool's path only")
    args = parser.parse_args(argv)
    root = cache_root()
    if args.print_path:
        print(tool_path(root))
        return 0
    built = all(tool_path(root, name).is_file() for name in TOOLS)
    path = tool_path(root) if built else build(root)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
