"""llama.cpp's own memory figures for the synthesized GGUF models: the golden tables (#40).

Runs the vendored llama.cpp's `llama-fit-params -fitp on -v` (a dry run: the model and
context are built without allocating, and every buffer line is printed) over the models
of tests/gguf_llama_models.py x contexts (some not a multiple of 256) x K/V cache types
f16, q8_0, q4_0 x `--parallel` 1 and 4 x `--flash-attn` on and off, parses the lines with
vramscope's own parser (core/load/llama_cpp_log.py) and writes
tests/core/load/data/llama_cpp_golden.json, with the llama.cpp version and the exact
command recorded. The tool comes from scripts/build_llama_cpp.py (`make test-llama`).

    python scripts/llama_golden.py            # regenerate the table
    python scripts/llama_golden.py --check    # compare a live run with the committed table
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import build_llama_cpp  # noqa: E402

from core.load.llama_cpp_log import parse_llama_log  # noqa: E402
from tests.gguf_llama_models import MODELS, write_model  # noqa: E402

GOLDEN = ROOT / "tests" / "core" / "load" / "data" / "llama_cpp_golden.json"
CONTEXTS = (300, 1000, 4096, 5000)
CACHE_TYPES = ("f16", "q8_0", "q4_0")
PARALLEL = (1, 4)
FLASH = ("on", "off")
# A smaller micro-batch changes the sliding-window cache and the compute buffer.
EXTRA_UBATCH = 128


def grid() -> list[dict[str, object]]:
    """Every case run, in a fixed order."""
    cases: list[dict[str, object]] = []
    for arch in MODELS:
        for ctx in CONTEXTS:
            for ctype in CACHE_TYPES:
                for np_ in PARALLEL:
                    for fa in FLASH:
                        if fa == "off" and ctype != "f16":
                            continue  # llama.cpp refuses a quantized V without flash attention
                        cases.append(
                            {
                                "arch": arch,
                                "ctx": ctx,
                                "ctk": ctype,
                                "ctv": ctype,
                                "np": np_,
                                "fa": fa,
                                "ub": 512,
                            }
                        )
        for fa in FLASH:
            cases.append(
                {
                    "arch": arch,
                    "ctx": 4096,
                    "ctk": "f16",
                    "ctv": "f16",
                    "np": 1,
                    "fa": fa,
                    "ub": EXTRA_UBATCH,
                }
            )
            cases.append(
                {
                    "arch": arch,
                    "ctx": 4096,
                    "ctk": "q8_0",
                    "ctv": "f16",
                    "np": 1,
                    "fa": fa,
                    "ub": 512,
                }
            )
    return cases


def command(tool: Path, model: Path, case: dict[str, object]) -> list[str]:
    return [
        str(tool),
        "-m",
        str(model),
        "-c",
        str(case["ctx"]),
        "-ctk",
        str(case["ctk"]),
        "-ctv",
        str(case["ctv"]),
        "-np",
        str(case["np"]),
        "-fa",
        str(case["fa"]),
        "-ub",
        str(case["ub"]),
        "-ngl",
        "0",
        "-fitp",
        "on",
        "-v",
    ]


def version(tool: Path) -> str:
    out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=60)
    return " ".join((out.stdout + out.stderr).split())[:200]


def run_case(tool: Path, model: Path, case: dict[str, object]) -> dict[str, object]:
    proc = subprocess.run(command(tool, model, case), capture_output=True, text=True, timeout=120)
    log = parse_llama_log(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not log.found:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise SystemExit(f"llama_golden: {case} failed (exit {proc.returncode}):\n{tail}")
    return {
        **case,
        "kv_caches": [
            {
                "bytes": k.bytes,
                "cells": k.cells,
                "layers": k.layers,
                "streams": k.streams,
                "k_bytes": k.k_bytes,
                "v_bytes": k.v_bytes,
            }
            for k in log.kv_caches
        ],
        "recurrent": [
            {"bytes": r.bytes, "cells": r.cells, "layers": r.layers} for r in log.recurrent
        ],
        "model_bytes": sum(b.bytes for b in log.model),
        "output_bytes": sum(b.bytes for b in log.output),
        "compute_bytes": sum(b.bytes for b in log.compute),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed table")
    args = parser.parse_args(argv)
    tool = build_llama_cpp.tool_path()
    if not tool.is_file():
        raise SystemExit(f"llama_golden: {tool} not built (run scripts/build_llama_cpp.py)")
    with tempfile.TemporaryDirectory(prefix="vramscope-golden-") as tmp:
        models = {arch: write_model(Path(tmp), arch) for arch in MODELS}
        runs = [run_case(tool, models[str(c["arch"])], c) for c in grid()]
        example = " ".join(command(tool, Path("MODEL.gguf"), grid()[0]))
    table = {
        "llama_cpp": {
            "source": "llama-cpp-python "
            f"{build_llama_cpp.LLAMA_CPP_PYTHON_VERSION} vendor/llama.cpp",
            "version": version(tool),
        },
        "command": example.replace(str(tool), "llama-fit-params"),
        "note": "figures in bytes, parsed from llama.cpp's MiB lines (two decimals: +-5243 bytes)",
        "runs": runs,
    }
    if args.check:
        committed = json.loads(GOLDEN.read_text())
        if committed["runs"] != runs:
            diff = [(a, b) for a, b in zip(committed["runs"], runs, strict=False) if a != b]
            print(f"llama_golden: {len(diff)} runs differ from {GOLDEN}; first: {diff[:1]}")
            return 1
        print(f"llama_golden: {len(runs)} runs agree with {GOLDEN.name}")
        return 0
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(table, indent=1) + "\n")
    print(f"llama_golden: {len(runs)} runs written to {GOLDEN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
