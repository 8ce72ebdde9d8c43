"""One question, one answer: every surface gives the same figures for the same question.

Hypothesis draws a model (a built-in profile, or a generated folder of real safetensors
headers with its own trained context), a context (often past the trained one), a batch,
a KV dtype, a quantization (as stored, or an mlx-lm what-if), a backend and a device
(a preset or a size), and asks it of every surface as a user would:

- `inspect --json` and `inspect --tp 1 --json` (a plan of one rank is the one device);
- the `fit --json` row of that model and quantization;
- the explorer (a real app under Pilot): its breakdown's bytes, its largest context and
  its summary's verdict, as painted;
- the explorer's Fits view (`f`): the row of that model and quantization, as painted.

Every figure two of them share must be equal, to the byte; the trained context caps the
largest context everywhere, and a context past it is flagged everywhere.

Each example runs in a home of its own. Hypothesis runs a failing example again before
it reports it, and calls the test flaky when the second run passes: with one home for
all examples, the second run found the catalog and fit caches the first had written,
and saw another world than the first. Every wait is for an event (the explorer settled,
the Fits view done) with a limit that fails loudly, never a time that runs on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.answer.presets import PRESETS
from core.answer.quantization import Quantization
from core.backend import Backend
from core.catalog.profiles import list_profile_ids
from core.catalog.resolve import build_catalog, resolve_entry
from core.units import format_bytes_short
from tests.conftest import OWN_FOLDERS
from tests.factories import ROCM_MACHINE, build_app, fixed_deps
from tests.model_writers import write_safetensors_skeleton
from tests.tui.helpers import breakdown_bytes, breakdown_text, wait_for, widget_lines
from tui.cli import main
from tui.headless import wait_until_settled
from tui.screens.fits_screen import FitsScreen
from tui.widgets.fit_table_view import FitTableView
from tui.widgets.status_line import SummaryLine

pytestmark = pytest.mark.slow

QUANTIZATIONS = ("stored", "mlx-8bit", "mlx-4bit")
BACKENDS = ("rocm", "cuda", "metal", "cpu")


@dataclass(frozen=True)
class Case:
    model: str
    """A profile id, or "folder" (the generated folder)."""
    folder: dict[str, Any] | None
    tokens: int
    batch: int
    kv_int8: bool
    quantization: str
    backend: str
    preset: str | None
    size: int | None

    def flags(self) -> list[str]:
        out = ["--max-tokens", str(self.tokens), "--batch", str(self.batch)]
        out += ["--kv-cache-mode", "int8" if self.kv_int8 else "fp16", "--backend", self.backend]
        out += ["--preset", self.preset] if self.preset else ["--memory-limit", str(self.size)]
        return out


@st.composite
def folders(draw: st.DrawFn) -> dict[str, Any]:
    """A llama-shaped model: its config and its tensors (bf16), mlx-lm's names."""
    heads = draw(st.sampled_from([4, 8, 16]))
    head_dim = draw(st.sampled_from([32, 64, 128]))
    hidden = heads * head_dim
    kv_heads = draw(st.sampled_from([h for h in (1, 2, 4, 8, 16) if heads % h == 0]))
    layers = draw(st.integers(2, 6))
    inter = draw(st.sampled_from([2, 3, 4])) * hidden
    vocab = draw(st.sampled_from([1024, 4096, 32000]))
    trained = draw(st.sampled_from([None, 2048, 4096, 8192, 32768]))
    config: dict[str, Any] = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
    }
    if trained is not None:
        config["max_position_embeddings"] = trained
        if draw(st.booleans()):  # a YaRN block stretching it, as Qwen's configs take it
            config["rope_scaling"] = {
                "type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": trained,
            }
    tensors = [("model.embed_tokens.weight", "BF16", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors += [
            (p + "self_attn.q_proj.weight", "BF16", (heads * head_dim, hidden)),
            (p + "self_attn.k_proj.weight", "BF16", (kv_heads * head_dim, hidden)),
            (p + "self_attn.v_proj.weight", "BF16", (kv_heads * head_dim, hidden)),
            (p + "self_attn.o_proj.weight", "BF16", (hidden, heads * head_dim)),
            (p + "mlp.gate_proj.weight", "BF16", (inter, hidden)),
            (p + "mlp.up_proj.weight", "BF16", (inter, hidden)),
            (p + "mlp.down_proj.weight", "BF16", (hidden, inter)),
            (p + "input_layernorm.weight", "BF16", (hidden,)),
            (p + "post_attention_layernorm.weight", "BF16", (hidden,)),
        ]
    tensors += [("model.norm.weight", "BF16", (hidden,))]
    tensors += [("lm_head.weight", "BF16", (vocab, hidden))]
    return {"config": config, "tensors": tensors}


@st.composite
def cases(draw: st.DrawFn) -> Case:
    folder = draw(st.none() | folders())
    model = "folder" if folder is not None else draw(st.sampled_from(list_profile_ids()))
    preset = draw(st.none() | st.sampled_from([p.key for p in PRESETS]))
    return Case(
        model=model,
        folder=folder,
        tokens=draw(st.sampled_from([0, 512, 4096, 8192, 40000, 131072, 1 << 20])),
        batch=draw(st.integers(1, 4)),
        kv_int8=draw(st.booleans()),
        quantization=draw(st.sampled_from(QUANTIZATIONS)),
        backend=draw(st.sampled_from(BACKENDS)),
        preset=preset,
        size=None if preset else draw(st.integers(1 << 30, 200 << 30)),
    )


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


def write_folder(root: Path, folder: dict[str, Any]) -> Path:
    dest = root / "models" / "generated-llama"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.json").write_text(json.dumps(folder["config"]))
    tensors = [(n, d, tuple(s)) for n, d, s in folder["tensors"]]
    write_safetensors_skeleton(dest / "model.safetensors", tensors, {"format": "pt"})
    return dest


_CONTEXT = re.compile(r"Largest context that fits\s+(?P<words>.*)")


def painted_context(app: Any) -> str:
    """The breakdown's `Largest context that fits` words (wrapped lines joined)."""
    lines = breakdown_text(app).splitlines()
    for i, line in enumerate(lines):
        m = _CONTEXT.search(line)
        if m:
            words = [m.group("words").strip()]
            for more in lines[i + 1 :]:
                if not more.startswith(" " * 10) or "would size" in more:
                    break
                words.append(more.strip())
            return " ".join(words)
    raise AssertionError("no largest context on screen:\n" + breakdown_text(app))


def expected_context_words(answer: dict[str, Any]) -> str:
    """The first words the explorer must paint for the largest context: the load's where
    the row has one, else mlxcel's (inspect's)."""
    load = answer.get("load")
    ctx = (load or {}).get("largest_context") or answer["largest_context"]
    if ctx["tokens"] in (None, 0):
        return "none"
    if ctx["unbounded"]:
        return "any"
    return f"{ctx['tokens']:,} tokens"


@contextlib.contextmanager
def own_home(root: Path) -> Iterator[None]:
    """The example's own HOME and folders (tests/conftest.py's layout) while it runs."""
    names = ("HOME", *OWN_FOLDERS)
    before = {name: os.environ.get(name) for name in names}
    os.environ["HOME"] = str(root / "home")
    for name, below in OWN_FOLDERS.items():
        os.environ[name] = str(root / "home" / below)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def settle(pilot: Any) -> None:
    """Until every read asked for has answered and the screen repainted; fails loudly
    (headless's wait runs on after its limit, for a screenshot that must be taken)."""
    await wait_until_settled(pilot, timeout=300)
    assert pilot.app.explorer.settled, "the explorer never settled"


async def explorer_figures(case: Case, name: str, models_dir: Path | None) -> dict[str, Any]:
    """Ask the explorer (and its Fits view) the case's question; read what it paints."""
    dirs = (models_dir,) if models_dir is not None else ()
    deps = fixed_deps(
        ROCM_MACHINE,
        resolve_entry=lambda n: resolve_entry(n, dirs),
        build_catalog=lambda: build_catalog(dirs, include_hf_cache=False, env={}),
    )
    options: dict[str, Any] = {
        "model": name,
        "max_tokens": case.tokens,
        "batch": case.batch,
        "kv_int8": case.kv_int8,
        "backend": Backend(case.backend),
        "preset": case.preset,
        "memory_limit": case.size,
        "models_dirs": dirs,
    }
    app = build_app(deps, **options)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        # the palette's "Quantize as"
        app.explorer.update(quantize_as=Quantization.named(case.quantization))
        await settle(pilot)
        shown = {
            "bytes": breakdown_bytes(app),
            "context": painted_context(app),
            "summary": app.explorer.query_one(SummaryLine).text,
            "status": widget_lines(app.explorer.query_one("#status"))[0],
        }
        await pilot.press("f")
        await wait_for(
            pilot, lambda: isinstance(app.screen, FitsScreen) and app.screen.done, "f", 300
        )
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FitsScreen)
        table = screen.query_one(FitTableView)
        wanted = [
            r
            for r in table.rows
            if r[0] == shown_name(name) and r[1].rstrip("*") == case.quantization
        ]
        shown["fits_rows"] = wanted
        shown["fits_heading"] = str(screen._heading())
    return shown


def shown_name(name: str) -> str:
    return Path(name).name if "/" in name and Path(name).exists() else name


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases())
def test_every_surface_gives_the_same_answer(
    case: Case, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path_factory.mktemp("one-answer")
    with own_home(root):
        ask_every_surface(case, root, capsys)


def ask_every_surface(case: Case, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    models_dir = None
    name = case.model
    if case.folder is not None:
        folder = write_folder(root, case.folder)
        models_dir, name = folder.parent, str(folder)
    dirs = ["--models-dir", str(models_dir)] if models_dir is not None else []
    flags = case.flags()

    fit = cli_json(capsys, "fit", "--json", "--quantizations", case.quantization, *dirs, *flags)
    (row,) = [r for r in fit["rows"] if r["model"] == shown_name(name)]
    shown = asyncio.run(explorer_figures(case, name, models_dir))

    # The device: the same backend and budget on the command line and on screen, named.
    device = fit["inputs"]["answered_for"]
    assert device["backend"] == case.backend
    assert shown["status"].split("│")[1].strip().startswith(Backend(case.backend).label + " · ")
    assert f"{format_bytes_short(device['available_bytes'])} available" in shown["status"]
    assert f"Backend: {case.backend} (" in shown["fits_heading"]

    if row["unavailable"] is not None:  # the what-if's rule does not apply to this model
        assert shown["fits_rows"] == []
        return
    # fit's row, the explorer's breakdown and the Fits view's row: the same figures.
    assert shown["bytes"]["Total estimate"] == row["total_bytes"]
    assert shown["bytes"]["Weights"] == row["weights_bytes"]
    assert shown["bytes"]["Available"] == device["available_bytes"]
    (painted,) = shown["fits_rows"]
    assert painted[2] == format_bytes_short(row["weights_bytes"])
    assert painted[3] == format_bytes_short(row["total_bytes"])
    # The load (vramscope's) ranks and answers where the row has one; mlxcel's verdict
    # keeps its column (MLXCEL) and the summary's badge.
    load = row["load"]
    assert painted[4] == (format_bytes_short(load["total_bytes"]) if load else "—")
    fits = load["fits"] if load and load["fits"] is not None else row["fits"]
    verdict = (
        "DOES NOT FIT" if not fits else ("PAST TRAINED" if row["past_trained_context"] else "FITS")
    )
    assert painted[5] == verdict
    assert painted[6] == ("FITS" if row["fits"] else "DOES NOT FIT")
    assert shown["summary"].strip().startswith("FITS" if row["fits"] else "DOES NOT FIT")
    ctx = (load or {}).get("largest_context") or row["largest_context"]
    assert shown["context"].startswith(expected_context_words(row)), shown["context"]
    if ctx["capped_by_trained_context"]:
        assert "the trained context" in shown["context"]
        assert painted[8] == f"{ctx['tokens']:,} trained"
    # A context past the trained one is flagged on every surface.
    past = row["past_trained_context"]
    assert past is (
        row["trained_context_tokens"] is not None and case.tokens > row["trained_context_tokens"]
    )
    marks = ("past the trained", "> trained", "!")  # the summary's three widths
    assert any(m in shown["summary"] for m in marks) is past

    if case.quantization != "stored":
        return  # inspect answers for the model as stored (mlxcel has no what-if)
    report = cli_json(capsys, "inspect", name, "--json", *dirs, *flags)
    one_rank = cli_json(capsys, "inspect", name, "--json", "--tp", "1", *dirs, *flags)
    (rank,) = one_rank["ranks"]
    for key in ("total_bytes", "weights_bytes", "fits"):
        assert report[key] == row[key] == rank[key], key
    assert report["kv_bytes_total"] == shown["bytes"]["KV cache"] == rank["kv_bytes_total"]
    assert report["largest_context"] == row["largest_context"] == one_rank["largest_context"]
    assert report["past_trained_context"] is past is one_rank["past_trained_context"]
    assert report["params"] == row["params"] == one_rank["params"]
    assert report["device"] == device == one_rank["device"]
