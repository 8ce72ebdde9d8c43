"""A llama.cpp command line read for what changes its memory (#40), as `vramscope run`
reads it before holding llama.cpp's own log lines beside vramscope's load."""

from __future__ import annotations

from pathlib import Path

from core.gguf_load.run import compare, placement_of, read_llama_command
from core.load.llama_cpp import LLAMA_SERVER_DEFAULTS, FlashAttn, KvCacheType, plan_for_model
from core.load.llama_cpp_log import parse_llama_log
from core.load.load import Placement
from tests.gguf_llama_models import read_model, write_model

DATA = Path(__file__).parents[1] / "load" / "data"


def test_every_memory_flag_is_read_under_llama_cpps_names() -> None:
    got = read_llama_command(
        ["/opt/llama/llama-server", "-m", "m.gguf", "--ctx-size", "8192", "-ngl", "12",
         "-ctk", "q8_0", "--cache-type-v", "q4_0", "-np", "2", "-ub", "256", "-fa", "on",
         "-kvu", "--log-file", "/tmp/l.log", "--port", "8080"]
    )  # fmt: skip
    assert got is not None
    o = got.options
    assert (got.program, got.model, got.tokens, got.log_file) == (
        "llama-server",
        "m.gguf",
        8192,
        "/tmp/l.log",
    )
    assert (o.n_gpu_layers, o.cache_type_k, o.cache_type_v) == (12, KvCacheType.Q8_0,
                                                                KvCacheType.Q4_0)  # fmt: skip
    assert (o.parallel, o.ubatch_size, o.flash_attn, o.kv_unified) == (2, 256, FlashAttn.ON, True)
    assert got.notes == ()


def test_llama_cpps_defaults_are_said() -> None:
    got = read_llama_command(["llama-server", "-m", "m.gguf"])
    assert got is not None
    assert got.tokens is None  # the trained context, as -c 0
    assert (got.options.parallel, got.options.kv_unified) == (LLAMA_SERVER_DEFAULTS.parallel, True)
    assert any(n.startswith("no -np: llama-server's auto") for n in got.notes)
    assert any(n.startswith("no -ngl (or auto): llama.cpp's --fit picks") for n in got.notes)
    cli = read_llama_command(["llama-cli", "-m", "m.gguf", "-ngl", "all", "-fa"])
    assert cli is not None
    assert (cli.options.parallel, cli.options.n_gpu_layers) == (1, -1)
    assert cli.options.flash_attn is FlashAttn.ON  # the older bare switch


def test_bad_values_are_said_and_the_default_kept() -> None:
    got = read_llama_command(
        ["llama-cli", "-m", "m.gguf", "-np", "zero", "-ctk", "q9", "-ctv", "q8_0", "-fa", "off"]
    )
    assert got is not None
    assert got.options.parallel == 1
    assert got.options.cache_type_k is KvCacheType.F16
    assert got.options.cache_type_v is KvCacheType.F16  # quantized V needs flash attention
    assert any("-np 'zero' not read" in n for n in got.notes)
    assert any("unknown cache type 'q9'" in n for n in got.notes)
    assert any("needs --flash-attn on" in n for n in got.notes)
    assert read_llama_command(["python", "-c", "pass"]) is None


def test_a_buffers_place_follows_its_device_name() -> None:
    assert placement_of("CPU_Mapped") is Placement.HOST
    assert placement_of("ROCm_Host") is Placement.HOST
    assert placement_of("ROCm0") is Placement.DEVICE
    assert placement_of("RPC0[127.0.0.1:50052]") is Placement.DEVICE


def test_a_real_log_is_held_beside_the_load_line_by_line(tmp_path: Path) -> None:
    """The vendored llama.cpp's log of the golden gemma3 (`-c 5000 -np 4 -ctk q8_0
    -ctv q8_0 -fa on -ngl 0`): model, KV and output equal to what its lines print; the
    fitted compute buffer is the one figure that is not."""
    log = parse_llama_log((DATA / "llama_completion_gemma3.log").read_text(errors="replace"))
    got = read_llama_command(
        ["llama-completion", "-m", "m.gguf", "-c", "5000", "-np", "4", "-ctk", "q8_0",
         "-ctv", "q8_0", "-fa", "on", "-ngl", "0"]
    )  # fmt: skip
    assert got is not None and got.tokens == 5000
    plan = plan_for_model(read_model(write_model(tmp_path, "gemma3")), got.options)
    rows = {r.kind.value: r for r in compare(log, plan.at(5000))}
    assert {r.placement for r in rows.values()} == {Placement.HOST}
    assert rows["kv"].lines == 2  # the full and the sliding-window caches
    assert [k for k, r in rows.items() if r.within_print] == ["model", "kv", "output"]
    assert abs(rows["compute"].vramscope / rows["compute"].llama_cpp - 1) <= 0.10  # type: ignore[operator]
