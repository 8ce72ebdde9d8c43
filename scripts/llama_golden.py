"""llama.cpp's own memory figures for the synthesized GGUF models: the golden tables (#40).

Runs the vendored llama.cpp over the models of tests/gguf_llama_models.py (tests/
gguf_models.py's, at golden sizes) x contexts (some not a multiple of 256) x K/V cache
types f16, q8_0, q4_0 x `--parallel` 1 and 4 x `--flash-attn` on and off, twice per case:
`llama-completion` loads the model for real and generates one token (its log prints every
buffer at 0.01 MiB: model, KV with each cache's `size =` line, output, compute), and
`llama-fit-params -fitp on` makes the dry run `--fit` makes (whole MiB per device). The
lines are parsed with vramscope's own parser (core/load/llama_cpp_log.py) into
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import build_llama_cpp  # noqa: E402

from core.load.llama_cpp_log import LlamaCppLog, parse_llama_log  # noqa: E402
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
            if arch == "deepseek2":
                continue  # llama.cpp refuses different K and V types under MLA
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


def flags(model: Path, case: dict[str, object]) -> list[str]:
    """The case's llama.cpp flags (CPU only: nothing is offloaded)."""
    return [
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
        # No CPU_REPACK copy of q4_0 weights: a CPU backend's own layout, not a GPU's.
        "--no-repack",
    ]


# A real load and one generated token: llama.cpp prints every buffer it allocates.
# `-fit off`: no dry run first (its lines would come twice). Its log is written by a
# worker thread that can lose the last lines at exit, hence the retries below.
LOAD_TAIL = ["-fit", "off", "-n", "1", "-p", "a", "-no-cnv", "--no-warmup", "-t", "1", "-v"]
# The dry run `--fit` makes: one line per device, whole MiB (model, context, compute).
FIT_TAIL = ["-fitp", "on"]


def version(tool: Path) -> str:
    out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=60)
    return " ".join((out.stdout + out.stderr).split())[:200]


def _complete(log: LlamaCppLog) -> bool:
    return bool(log.model and log.output and log.compute and (log.kv_caches or log.recurrent))


def run_case(tools: dict[str, Path], model: Path, case: dict[str, object]) -> dict[str, object]:
    text = ""
    for _attempt in range(8):
        proc = subprocess.run(
            [str(tools["load"]), *flags(model, case), *LOAD_TAIL],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=120,
        )
        text = proc.stdout + proc.stderr
        log = parse_llama_log(text)
        if proc.returncode == 0 and _complete(log):
            break
    else:
        raise SystemExit(f"llama_golden: {case} gave no complete log:\n{text[-2000:]}")
    fit = subprocess.run(
        [str(tools["fit"]), *flags(model, case), *FIT_TAIL],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
    )
    rows = [line.split() for line in fit.stdout.splitlines() if line.startswith("Host ")]
    if fit.returncode != 0 or len(rows) != 1:
        raise SystemExit(f"llama_golden: {case}: llama-fit-params printed {fit.stdout[-500:]!r}")
    compute = sum(b.bytes for b in (log.compute_fine or log.compute))
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
        "compute_bytes": compute,
        "compute_resolution_bytes": 53 if log.compute_fine else 5243,
        "fit_print_mib": [int(v) for v in rows[0][1:4]],
    }


PRINTED = 5243  # half of the 0.01 MiB llama.cpp prints


def agree(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two runs of one case agree: the same case, cells, layers and streams, every figure
    within what its printing resolves (the compute buffer's teardown line, at 0.0001 MiB,
    is not always written before llama.cpp exits, so one run may have only 0.01 MiB)."""
    keys = ("arch", "ctx", "ctk", "ctv", "np", "fa", "ub", "fit_print_mib")
    if any(a[k] != b[k] for k in keys):
        return False
    shape = ("cells", "layers", "streams")
    for part in ("kv_caches", "recurrent"):
        if len(a[part]) != len(b[part]):
            return False
        for x, y in zip(a[part], b[part], strict=True):
            if any(x.get(k) != y.get(k) for k in shape) or abs(x["bytes"] - y["bytes"]) > PRINTED:
                return False
    slack = max(a["compute_resolution_bytes"], b["compute_resolution_bytes"])
    return (
        abs(a["model_bytes"] - b["model_bytes"]) <= PRINTED
        and abs(a["output_bytes"] - b["output_bytes"]) <= PRINTED
        and abs(a["compute_bytes"] - b["compute_bytes"]) <= 2 * slack
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed table")
    args = parser.parse_args(argv)
    tools = {
        "fit": build_llama_cpp.tool_path(),
        "load": build_llama_cpp.tool_path(name="llama-completion"),
    }
    for tool in tools.values():
        if not tool.is_file():
            raise SystemExit(f"llama_golden: {tool} not built (run scripts/build_llama_cpp.py)")
    with tempfile.TemporaryDirectory(prefix="vramscope-golden-") as tmp:
        models = {arch: write_model(Path(tmp), arch) for arch in MODELS}
        runs = [run_case(tools, models[str(c["arch"])], c) for c in grid()]
    case_flags = " ".join(flags(Path("MODEL.gguf"), grid()[0]))
    table = {
        "llama_cpp": {
            "source": "llama-cpp-python "
            f"{build_llama_cpp.LLAMA_CPP_PYTHON_VERSION} vendor/llama.cpp",
            "version": version(tools["fit"]),
        },
        "commands": {
            "load": f"llama-completion {case_flags} {' '.join(LOAD_TAIL)}",
            "fit": f"llama-fit-params {case_flags} {' '.join(FIT_TAIL)}",
        },
        "note": "figures in bytes, parsed from llama.cpp's MiB lines (two decimals: +-5243 "
        "bytes; the compute buffer's teardown line has four: +-53 bytes); fit_print_mib is "
        "llama-fit-params' Host row (model, context, compute; whole MiB, rounded down)",
        "runs": runs,
    }
    if args.check:
        committed = json.loads(GOLDEN.read_text())["runs"]
        wrong = [f"{a} / {b}" for a, b in zip(committed, runs, strict=False) if not agree(a, b)]
        if len(committed) != len(runs) or wrong:
            print(f"llama_golden: {len(wrong)} of {len(runs)} runs differ from {GOLDEN}:")
            print("\n".join(wrong[:3]))
            return 1
        print(f"llama_golden: {len(runs)} runs agree with {GOLDEN.name}")
        return 0
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(table, indent=1) + "\n")
    print(f"llama_golden: {len(runs)} runs written to {GOLDEN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
