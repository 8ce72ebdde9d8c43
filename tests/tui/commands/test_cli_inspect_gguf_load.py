"""`vramscope inspect` on a GGUF with llama.cpp's load (#40), through the real CLI on
synthesized GGUF files: the `load` object against llama.cpp's own figures (the golden
runs of the vendored llama.cpp), partial offload's shares, the largest `--n-gpu-layers`
that fits, `--check`'s exit status by the load's verdict, the `llama-server` line, and
each bad flag a one-line error with exit 2."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.gguf_llama_models import read_model as read_golden_model
from tests.gguf_llama_models import write_model as write_golden_model
from tests.gguf_models import gguf_layout, write_gguf, write_mmproj, write_model
from tui.cli import main

GOLDEN = Path(__file__).parents[2] / "core" / "load" / "data" / "llama_cpp_golden.json"
MIB_RESOLUTION = 5243
"""llama.cpp prints MiB with two decimals: a figure read from its log is good to this."""


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["inspect", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def inspect_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = inspect(capsys, *args, "--json")
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def golden_runs(*wanted: tuple[str, int, str, int, str]) -> list[dict[str, Any]]:
    """The runs of llama.cpp (arch, ctx, K/V type, --parallel, --flash-attn) asked for."""
    runs = json.loads(GOLDEN.read_text())["runs"]
    out = []
    for arch, ctx, kv_type, np_, fa in wanted:
        found = [
            r
            for r in runs
            if (r["arch"], r["ctx"], r["ctk"], r["np"], r["fa"]) == (arch, ctx, kv_type, np_, fa)
            and r["ctv"] == kv_type
        ]
        assert found, (arch, ctx, kv_type, np_, fa)
        out.append(found[0])
    return out


@pytest.mark.parametrize(
    "run",
    golden_runs(
        ("gemma3", 5000, "q8_0", 4, "on"),
        ("deepseek2", 1000, "q4_0", 1, "on"),
        ("lfm2", 4096, "f16", 4, "off"),
        ("qwen2", 300, "f16", 1, "off"),
    ),
    ids=lambda r: f"{r['arch']}-{r['ctx']}-{r['ctk']}-np{r['np']}-fa{r['fa']}",
)
def test_the_load_agrees_with_llama_cpps_own_figures(
    run: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_golden_model(tmp_path, run["arch"])
    report = inspect_json(
        capsys, str(path), "--memory-limit", "64G", "--n-gpu-layers", "0",
        "--max-tokens", str(run["ctx"]), "--cache-type-k", run["ctk"],
        "--cache-type-v", run["ctv"], "--parallel", str(run["np"]),
        "--flash-attn", run["fa"], "--ubatch-size", str(run["ub"]),
    )  # fmt: skip
    load = report["load"]
    assert load["engine"] == "llama.cpp"
    assert report["mlxcel_estimate"] is None
    kv = sum(c["bytes"] for c in run["kv_caches"]) + sum(c["bytes"] for c in run["recurrent"])
    # llama.cpp prints one line per cache: each is good to the 0.01 MiB it prints.
    lines = len(run["kv_caches"]) + len(run["recurrent"])
    assert abs(load["kv_bytes"] - kv) <= MIB_RESOLUTION * lines
    assert abs(load["output_bytes"] - run["output_bytes"]) <= MIB_RESOLUTION
    assert abs(load["weights_bytes"] - run["model_bytes"]) <= MIB_RESOLUTION
    assert abs(load["compute_bytes"] - run["compute_bytes"]) <= 0.10 * run["compute_bytes"]
    # -ngl 0: all on the host, and the whole load is what the memory holds.
    assert [d["placement"] for d in load["devices"]] == ["host"]
    assert load["devices"][0]["total_bytes"] == load["total_bytes"] == load["held_bytes"]
    assert load["total_bytes"] == sum(
        load[k] for k in ("weights_bytes", "kv_bytes", "compute_bytes", "output_bytes")
    )


def test_text_names_each_term_the_context_the_device_and_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = write_model(tmp_path, "gemma3", weight_type="Q4_0")
    projector = write_mmproj(tmp_path / "mmproj-gemma3-F16.gguf")
    code, out, err = inspect(capsys, str(path), "--memory-limit", "1G")
    assert code == 0, err
    lines = out.splitlines()
    assert any(
        line.startswith(
            "vramscope: mlxcel: no estimate and no banner: mlxcel reads safetensors, not GGUF"
        )
        for line in lines
    )
    assert "Estimated total" not in out  # mlxcel's banner is not printed for a GGUF
    (summary,) = [line for line in lines if line.startswith("vramscope: load (llama.cpp): ")]
    assert summary.endswith("at 4,096 tokens: FITS")  # the trained context, llama.cpp's -c 0
    for kind in ("weights", "kv", "compute", "output", "projector"):
        assert any(line.startswith(f"vramscope: load (llama.cpp) {kind}: ") for line in lines)
    assert (
        "vramscope: load (llama.cpp) context: 4,096 tokens: llama.cpp's default: the trained "
        "context (gemma3.context_length)" in lines
    )
    (command,) = [line for line in lines if line.startswith("vramscope: llama-server: ")]
    words = shlex.split(command.removeprefix("vramscope: llama-server: "))
    assert words[:3] == ["llama-server", "-m", str(path)]
    assert words[words.index("--mmproj") + 1] == str(projector)
    assert words[words.index("-c") + 1] == "4096"
    assert words[words.index("-ngl") + 1] == "7"  # 6 layers and the output layer
    assert "vramscope: Backend: cpu (no GPU found); available 1.00 GiB (--memory-limit)" in lines


def test_partial_offload_shares_add_up_to_the_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_golden_model(tmp_path, "qwen3")
    whole = inspect_json(capsys, str(path), "--memory-limit", "64G", "-n", "3000")["load"]
    previous = None
    for layers in (0, 1, 3, 5):
        load = inspect_json(
            capsys, str(path), "--memory-limit", "64G", "-n", "3000", "--n-gpu-layers",
            str(layers),
        )["load"]  # fmt: skip
        shares = {d["placement"]: d["total_bytes"] for d in load["devices"]}
        assert sum(shares.values()) == load["total_bytes"]
        # Where a layer lives changes no byte of the model or its cache (llama.cpp's
        # compute buffers do change: one per place that runs part of the graph).
        assert load["kv_bytes"] == whole["kv_bytes"]
        if layers:
            assert load["weights_bytes"] == whole["weights_bytes"]
        else:
            # Nothing offloaded: the tied output is not duplicated onto a device, so
            # the weights are the tensors' bytes, every one once.
            assert load["weights_bytes"] == read_golden_model(path).weights_bytes
        assert load["n_gpu_layers"] == min(layers, load["layer_count"])
        device = shares.get("device", 0)
        assert load["held_bytes"] == (device if layers else load["total_bytes"])
        if previous is not None:
            assert device > previous  # each layer more moves bytes onto the device
        previous = device
        assert load["options"]["n_gpu_layers"] == layers


def test_when_the_model_does_not_fit_the_largest_gpu_layers_that_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_golden_model(tmp_path, "llama")
    whole = inspect_json(capsys, str(path), "--memory-limit", "64G", "-n", "4096")["load"]
    budget = whole["held_bytes"] - 2 * 1024 * 1024  # 2 MiB short of the whole
    code, out, _ = inspect(capsys, str(path), "--memory-limit", str(budget), "-n", "4096", "--json")
    assert code == 0  # without --check, a verdict is not an error
    load = json.loads(out)["load"]
    assert load["fits"] is False
    best = load["largest_gpu_layers"]
    assert 0 < best < load["layer_count"]
    fitting = shlex.split(load["llama_server_fits"])
    assert fitting[fitting.index("-ngl") + 1] == str(best)
    # What it says holds: -ngl best fits, one more does not (and --check says so).
    for layers, exit_code in ((best, 0), (best + 1, 1)):
        args = (str(path), "--memory-limit", str(budget), "-n", "4096", "-ngl", str(layers))
        code, out, _ = inspect(capsys, *args, "--check")
        assert code == exit_code, out
    code, out, _ = inspect(capsys, str(path), "--memory-limit", str(budget), "-n", "4096")
    assert (
        f"vramscope: largest --n-gpu-layers that fits: {best} of {load['layer_count']} at "
        "4,096 tokens" in out.splitlines()
    )


def test_check_and_the_largest_context_follow_the_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_golden_model(tmp_path, "qwen2")
    load = inspect_json(capsys, str(path), "--memory-limit", "64G", "-c", "0")["load"]
    assert load["tokens"] == 8192  # -c 0: the trained context, as llama.cpp reads it
    assert (
        inspect_json(capsys, str(path), "--memory-limit", "64G", "--ctx-size", "2k")["load"][
            "tokens"
        ]
        == 2048
    )  # llama.cpp's name for --max-tokens
    assert load["largest_context"]["tokens"] == 8192
    assert load["largest_context"]["capped_by_trained_context"] is True
    budget = inspect_json(capsys, str(path), "--memory-limit", "64G", "-n", "3000")["load"]
    limit = str(budget["held_bytes"])
    at = inspect_json(capsys, str(path), "--memory-limit", limit, "-n", "3000")["load"]
    assert at["fits"] is True
    context = at["largest_context"]["tokens"]
    assert 3000 <= context < 8192
    assert (
        inspect(capsys, str(path), "--memory-limit", limit, "-n", str(context), "--check")[0] == 0
    )
    code, _, _ = inspect(
        capsys, str(path), "--memory-limit", limit, "-n", str(context + 1), "--check"
    )
    assert code == 1


def test_an_unknown_architecture_keeps_the_reading_and_says_why_there_is_no_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    (path,) = write_gguf(tmp_path / "m.gguf", replace(gguf_layout("llama"), arch="mystery"))
    code, out, _ = inspect(capsys, str(path), "--memory-limit", "1G")
    assert code == 0
    assert "  Architecture:  mystery (general.architecture)" in out.splitlines()
    (line,) = [x for x in out.splitlines() if x.startswith("vramscope: load (llama.cpp): none: ")]
    assert "mystery" in line
    report = inspect_json(capsys, str(path), "--memory-limit", "1G")
    assert report["load"] is None and "mystery" in report["load_unavailable"]
    assert inspect(capsys, str(path), "--memory-limit", "1G", "--check")[0] == 2


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (("--n-gpu-layers", "x"), "--n-gpu-layers: 'x' is not a whole number"),
        (("--n-gpu-layers", "-2"), "--n-gpu-layers: -2 is below -1"),
        (("--n-gpu-layers", "auto"), "--n-gpu-layers: auto is llama.cpp's own --fit"),
        (("--cache-type-k", "q9"), "--cache-type-k: unknown cache type 'q9'"),
        (("--cache-type-v", "q8_0", "--flash-attn", "off"), "needs --flash-attn on"),
        (("--parallel", "0"), "--parallel: 0 is below 1"),
        (("--ubatch-size", "many"), "--ubatch-size: 'many' is not a whole number"),
        (("--flash-attn", "maybe"), "--flash-attn: 'maybe': choose on, off or auto"),
        (("--batch", "2"), "--batch: is mlxcel's"),
        (("--kv-cache-mode", "int8"), "--kv-cache-mode: is mlxcel's"),
        (("--quant", "int4"), "--quant: is mlxcel's"),
        (("--inflight-mb", "64"), "--inflight-mb: is mlxcel's"),
        (("--tp", "2"), "--tp/--pp: no split plan for a GGUF model"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(
    flags: tuple[str, ...], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = write_model(tmp_path, "llama")
    code, out, err = inspect(capsys, str(path), "--memory-limit", "1G", *flags)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert error in err


def test_mla_refuses_different_k_and_v_types(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = write_model(tmp_path, "deepseek2")
    code, _, err = inspect(capsys, str(path), "-ctk", "q8_0", "-ctv", "f16")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "MLA" in err


def test_llama_cpp_flags_are_refused_for_a_safetensors_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = inspect(capsys, "tiny-llama", "--n-gpu-layers", "3")
    assert code == 2 and out == ""
    assert "--n-gpu-layers: is llama.cpp's, for a GGUF model only" in err


def test_memory_never_read_is_said_and_claims_no_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.device import reading

    monkeypatch.setattr(reading, "PROC_ROOT", tmp_path / "proc")  # a hidden /proc
    (path,) = write_model(tmp_path, "llama")
    code, out, err = inspect(capsys, str(path), "--backend", "cpu", "--check")
    assert code == 2
    warnings = [line for line in err.splitlines() if "available memory was not read" in line]
    assert len(warnings) == 1 and warnings[0].startswith("vramscope: warning: ")
    assert "no verdict (memory not read)" in out
    assert "vramscope: largest context by the load: not answered" in out
    assert "largest --n-gpu-layers" not in out
    report = inspect_json(capsys, str(path), "--backend", "cpu")
    assert report["load"]["fits"] is None
    assert report["load"]["largest_context"]["tokens"] is None
    assert report["load"]["largest_context"]["unread_memory"] is not None


def test_no_kv_offload_puts_the_cache_on_the_host_and_swa_full_sizes_the_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_golden_model(tmp_path, "gemma3")
    base = (str(path), "--memory-limit", "64G", "-c", "4096")
    offloaded = inspect_json(capsys, *base)["load"]
    on_host = inspect_json(capsys, *base, "--no-kv-offload")["load"]

    def kv_at(load: dict[str, Any], placement: str) -> int:
        (share,) = [d for d in load["devices"] if d["placement"] == placement]
        return sum(t["bytes"] for t in share["terms"] if t["kind"] == "kv")

    assert kv_at(offloaded, "host") == 0
    assert kv_at(on_host, "device") == 0 and kv_at(on_host, "host") == offloaded["kv_bytes"]
    assert "--no-kv-offload" in on_host["llama_server"].split()
    full = inspect_json(capsys, *base, "--swa-full")["load"]
    assert full["kv_bytes"] > offloaded["kv_bytes"]  # the window's layers hold every cell
    assert full["options"]["swa_full"] is True and "--swa-full" in full["llama_server"]
