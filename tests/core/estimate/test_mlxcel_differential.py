"""Differential test: `inspect --json` against a second, independent reading of mlxcel.

The reference below is written straight from the contract
(/work/shared/reference/estimator-spec.md, copied into nothing: its formulas are
restated here) as one flat procedure over the generated description of a folder,
not over its files, and shares no code with `core/`. Hypothesis generates model
folders of every KV kind (standard, sliding window by `layer_types` and by pattern,
MLA compressed and decompressed, hybrid by each of the four rules, pure SSM, and
configs missing their architecture), random index and header shapes (index with
and without `total_size`, stale indexes, single files, globbed shards, unknown
dtypes), random variables and flags, and compares every byte field.

Size fields are integers and float fields round-trip through `json.dumps`, so
serde_json's last-place float rounding (docs/estimate.md) cannot show up here.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.catalog.model_dir import unreadable_folder_reason
from tui.cli import main

MAX = 2**64 - 1
ITEM = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "BF16": 2, "F16": 2}
ITEM |= {"I16": 2, "U16": 2, "F8_E5M2": 1, "F8_E4M3": 1, "I8": 1, "U8": 1, "BOOL": 1}

# Variable values and what mlxcel makes of them (spec §5, §4.1, §6.2, §1.4 vectors).
FACTORS = {None: 1.2, "1.2": 1.2, " 1.5 ": 1.5, "2": 2.0, "0.5": 0.5, "1e305": 1e305}
FACTORS |= {"abc": 1.2, "inf": 1.2, "-1": 1.2, "1_2": 1.2, "NaN": 1.2, "+.5e1": 5.0}
MULTS = {None: 2.0, "2": 2.0, "1": 1.0, "0.25": 0.25, "0": 2.0, "x": 2.0, "1e300": 1e300}
INFLIGHT = {None: 1024, "": 1024, "0": 0, "256": 256, "-1": 1024, "+256": 256, " \t256": 256}
INFLIGHT |= {" -0": 0, "256 ": 1024, "0x10": 1024, "17592186044415": 17592186044415}
INFLIGHT |= {"17592186044416": 1024, "99999999999999999999999": 1024}
LIMITS = {"64GB": 68_719_476_736, "512MB": 536_870_912, "1073741824": 1_073_741_824}
LIMITS |= {"1.5GB": 1_610_612_736, "8K": 8192, "1e30GB": MAX, "4.1GB": 4_402_341_478}


def sat(x: int) -> int:
    return x if x < MAX else MAX


def as_u64(x: float) -> int:
    """Rust `x as u64`."""
    if x != x or x <= 0:
        return 0
    return MAX if x >= 2.0**64 else int(x)


# ---------------------------------------------------------------------------------
# What a generated folder holds (the reference reads this, inspect reads the files)


@dataclass
class Header:
    tensors: list[tuple[str, list[int]]]
    corrupt: bool = False  # an unknown dtype: the file's header does not parse

    def encode(self) -> bytes:
        doc: dict[str, Any] = {"__metadata__": {"format": "pt"}}
        for i, (dtype, shape) in enumerate(self.tensors):
            doc[f"t{i}"] = {"dtype": dtype, "shape": shape, "data_offsets": [0, 0]}
        if self.corrupt:
            doc["bad"] = {"dtype": "F4", "shape": [1]}
        body = json.dumps(doc).encode()
        return struct.pack("<Q", len(body)) + body


@dataclass
class Folder:
    config: dict[str, Any] | None
    headers: dict[str, Header] = field(default_factory=dict)
    index: dict[str, Any] | None = None
    empty_files: list[str] = field(default_factory=list)


def header_sum(h: Header) -> int | None:
    if h.corrupt:
        return None
    total = 0
    for dtype, shape in h.tensors:
        n = ITEM[dtype]
        for d in shape:
            n = sat(n * d)
        total = sat(total + n)
    return total


def reference_weights(f: Folder) -> tuple[int | None, str]:
    present = set(f.headers) | set(f.empty_files)

    def sum_files(names: list[str]) -> int | None:
        if not names:
            return None
        total = 0
        for name in names:
            part = header_sum(f.headers[name]) if name in f.headers else None
            if part is None:
                return None
            total = sat(total + part)
        return total

    if f.index is not None:
        wm = f.index.get("weight_map")
        shards = sorted({v for v in wm.values() if isinstance(v, str)}) if wm else []
        if shards and all(s in present for s in shards):
            total = f.index.get("metadata", {}).get("total_size")
            if isinstance(total, int) and 0 <= total <= MAX:
                return total, "index"
            got = sum_files(shards)
            if got is not None:
                return got, "headers"
    if "model.safetensors" in present:
        return sum_files(["model.safetensors"]), "single"
    globbed = sorted(n for n in present if n.endswith(".safetensors") and n != ".safetensors")
    return sum_files(globbed), "glob"


def first_u64(obj: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = obj.get(k)
        if type(v) is int and 0 <= v <= MAX:
            return v
    return None


def first_f64(obj: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = obj.get(k)
        if type(v) in (int, float):
            return float(v)
    return None


LAYERS = ("num_hidden_layers", "n_layers", "num_layers", "n_layer")
HIDDEN = ("hidden_size", "d_model", "dim", "model_dim", "n_embd")
HEADS = ("num_attention_heads", "num_heads", "n_heads", "n_head")
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "n_head_kv")
KV_HEADS += ("multi_query_group_num",)
HEAD_DIM = ("head_dim", "head_size")
INTER = ("intermediate_size", "ffn_dim", "ffn_hidden_size")


def text_view(cfg: dict[str, Any]) -> dict[str, Any]:
    if "text_config" in cfg:
        t = cfg["text_config"]
        return t if isinstance(t, dict) else {}
    return cfg


def analytical_bytes(cfg: dict[str, Any]) -> int | None:
    t = text_view(cfg)
    h, n_layers = first_f64(t, *HIDDEN), first_f64(t, *LAYERS)
    if h is None or n_layers is None:
        return None
    v = first_f64(t, "vocab_size")
    v = 32000.0 if v is None else v
    ff = first_f64(t, *INTER)
    ff = 4.0 * h if ff is None else ff
    e = first_f64(t, "num_experts", "num_local_experts", "n_routed_experts")
    e = max(1.0 if e is None else e, 1.0)
    nh = first_f64(t, *HEADS)
    nh = h / 64.0 if nh is None else nh
    kvh = first_f64(t, *KV_HEADS)
    if kvh is None:
        kvh = 1.0 if t.get("multi_query") is True else nh
    hd = first_f64(t, *HEAD_DIM)
    if hd is None:
        if nh > 0 and math.isfinite(h / nh):
            r = h / nh
            hd = math.floor(r + 0.5) if r >= 0 else -math.floor(-r + 0.5)
        else:
            hd = 64.0
    # mlxcel's own order (memory_estimate.rs): Q + K + V + O, then MLP, then norms.
    attn = h * (nh * hd) + h * (kvh * hd) + h * (kvh * hd) + (nh * hd) * h
    params = v * h + n_layers * (attn + 3.0 * h * ff * e + 2.0 * h)
    x = params / 1e9 * 1e9 * 2.0
    return 0 if x != x else as_u64(min(max(x, 0.0), 2.0**64))


def kv_groups(cfg: dict[str, Any]) -> list[tuple[int, int, int | None]] | None:
    """(layers, elements per token, window) groups, or None when unavailable."""
    t = text_view(cfg)
    n_layers = first_u64(t, *LAYERS)
    if n_layers is None:
        return None
    mt = t.get("model_type") if isinstance(t.get("model_type"), str) else cfg.get("model_type")
    mt = mt.lower() if isinstance(mt, str) else ""
    if mt in ("mamba", "mamba2", "falcon_mamba"):
        return []
    rank = first_u64(t, "kv_lora_rank")
    if rank is not None:
        rope = first_u64(t, "qk_rope_head_dim")
        rope = 64 if rope is None else rope
        if "v3" in mt:
            return [(n_layers, sat(rank + rope), None)]
        nh = max(first_u64(t, *HEADS) or 1, 1)
        nope, vd = first_u64(t, "qk_nope_head_dim"), first_u64(t, "v_head_dim")
        per_head = sat((128 if nope is None else nope) + rope + (128 if vd is None else vd))
        return [(n_layers, sat(nh * per_head), None)]
    nh = max(first_u64(t, *HEADS) or 1, 1)
    kvh = first_u64(t, *KV_HEADS)
    if kvh is None:
        kvh = 1 if t.get("multi_query") is True else nh
    hd = first_u64(t, *HEAD_DIM)
    if hd is None:
        hidden = first_u64(t, *HIDDEN)
        if hidden is None:
            return None
        hd = hidden // nh
    elems = sat(2 * kvh * hd)
    n_attn: int | None = None
    blocks = next(
        (t[k] for k in ("layers_block_type", "block_types") if isinstance(t.get(k), list)), None
    )
    pattern = t.get("hybrid_override_pattern")
    period = first_u64(t, "attn_layer_period")
    interval = first_u64(t, "full_attention_interval")
    if blocks is not None:
        n_attn = sum(
            isinstance(b, str) and ("attention" in b.lower() or b.lower() in ("attn", "*"))
            for b in blocks
        )
    elif isinstance(pattern, str):
        n_attn = pattern.count("*")
    elif isinstance(pattern, list):
        n_attn = sum(p == "*" for p in pattern)
    elif period:
        offset = first_u64(t, "attn_layer_offset") or 0
        n_attn = sum(((i + offset) % 2**64) % period == 0 for i in range(n_layers))
    elif interval:
        mlp_only = t.get("mlp_only_layers")
        skip = set(mlp_only) if isinstance(mlp_only, list) else set()
        n_attn = sum((i + 1) % interval == 0 and i not in skip for i in range(n_layers))
    if n_attn is not None:
        return [(n_attn, elems, first_u64(t, "attention_window_size"))]
    window = first_u64(t, "sliding_window")
    if window:
        kinds = t.get("layer_types")
        strings = [k for k in kinds if isinstance(k, str)] if isinstance(kinds, list) else []
        if strings:
            n_global = sum(k.lower() == "full_attention" for k in strings)
            n_sliding = len(strings) - n_global
        else:
            n_global = n_layers // max(first_u64(t, "sliding_window_pattern") or 1, 1)
            n_sliding = n_layers - n_global
        if strings or n_sliding > 0:
            return [(n, elems, w) for n, w in ((n_global, None), (n_sliding, window)) if n > 0]
    return [(n_layers, elems, None)]


def round_ctx(t: int) -> int:
    return sat(-(-t // 256) * 256)


def kv_bytes(groups: list[tuple[int, int, int | None]], ctx: int, eb: int, batch: int) -> int:
    total = 0
    for n, elems, window in groups:
        eff = round_ctx(ctx) if window is None else min(round_ctx(ctx), round_ctx(window))
        total = sat(total + sat(n * elems * eff * eb * batch))
    return total


def per_token(groups: list[tuple[int, int, int | None]], eb: int, batch: int) -> int:
    return sat(sum(sat(n * e * eb * batch) for n, e, w in groups if w is None))


def activation(cfg: dict[str, Any], ctx: int, batch: int, mult: float) -> int:
    t = text_view(cfg)
    hidden = first_u64(t, *HIDDEN)
    if hidden is None:
        return 0
    inter = first_u64(t, *INTER)
    inter = sat(4 * hidden) if inter is None else inter
    vocab = first_u64(t, "vocab_size") or 0
    base = sat(sat(hidden + inter) * batch * min(max(ctx, 1), 512) * 2)
    return sat(as_u64(min(float(base) * mult, 2.0**64)) + sat(vocab * batch * 2))


def reference(f: Folder, ctx: int, batch: int, int8: bool, env: dict[str, Any]) -> dict[str, Any]:
    w, _ = reference_weights(f)
    source = "safetensors_header"
    if w is None:
        w = analytical_bytes(f.config) if f.config is not None else None
        source = "analytical_config"
    if w is None:
        w, source = 14_000_000_000, "fallback"
    groups = kv_groups(f.config) if f.config is not None else None
    eb = 1 if int8 else 2
    k = 0 if groups is None else kv_bytes(groups, ctx, eb, batch)
    a = 0 if f.config is None else activation(f.config, ctx, batch, MULTS[env["mult"]])
    factor = FACTORS[env["factor"]]
    o = 0
    if factor > 1.0:
        x = float(sat(w + k)) * (factor - 1.0)
        # mlxcel: `if !x.is_finite() || x < 0.0 { return 0 }`, then `as u64`
        o = 0 if x == math.inf else as_u64(min(x, 2.0**64))
    i = (INFLIGHT[env["inflight"]] << 20) if env["rocm"] else 0
    headroom = sat(o + a + i)
    total = sat(w + k + headroom)
    avail = LIMITS[env["limit"]]
    return {
        "weights_bytes": w,
        "weights_source": source,
        "kv_bytes_total": k,
        "kv_bytes_per_token": {
            "fp16": None if groups is None else per_token(groups, 2, 1),
            "int8": None if groups is None else per_token(groups, 1, 1),
            "turbo4": None,
        },
        "activation_bytes": a,
        "backend_inflight_bytes": i,
        "headroom_bytes": headroom,
        "headroom_factor": factor,
        "budget_bytes": avail,
        "total_bytes": total,
        "fits": total <= avail,
    }


# ---------------------------------------------------------------------------------
# Generators

small = st.integers(0, 64)
dim = st.sampled_from([0, 1, 2, 4, 8, 64, 128, 256, 4096, 2**40, 2**63, MAX])
huge = st.sampled_from([1e308, 1.7e308, 1e200, 1e155, 3.5e38])
"""Float sizes whose products overflow to inf: with a 0 next to them, a NaN in any
other operation order (the reference must saturate where mlxcel does)."""


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.integers(0, 30)) == 0:
        return None
    t: dict[str, Any] = {}

    def put(keys: tuple[str, ...], value: Any) -> None:
        t[draw(st.sampled_from(keys))] = value

    if draw(st.integers(0, 12)):
        put(LAYERS, draw(st.integers(0, 96)))
    if draw(st.integers(0, 8)):
        put(HIDDEN, draw(st.sampled_from([64, 768, 2048, 4096, 5120]) | dim | huge))
    if draw(st.booleans()):
        put(HEADS, draw(st.integers(0, 64)))
    if draw(st.booleans()):
        put(KV_HEADS, draw(st.integers(0, 16)))
    if draw(st.integers(0, 3)) == 0:
        t["multi_query"] = draw(st.sampled_from([True, False, 1, "true"]))
    if draw(st.booleans()):
        put(HEAD_DIM, draw(st.sampled_from([64, 128, 256]) | dim))
    if draw(st.booleans()):
        put(INTER, draw(st.integers(0, 30000) | dim))
    if draw(st.booleans()):
        t["vocab_size"] = draw(st.integers(0, 260000) | dim)
    if draw(st.integers(0, 3)) == 0:
        t["num_experts"] = draw(st.integers(0, 128))
    if draw(st.integers(0, 5)) == 0:  # wrong types: skipped by u64 lookups
        put(HIDDEN + LAYERS, draw(st.sampled_from(["4096", True, None, -1, 4096.0, -0.0])))
    kind = draw(
        st.sampled_from(
            [
                *("standard", "layer_types", "pattern", "mla", "blocks"),
                *("hstr", "hlist", "period", "interval", "ssm"),
            ]
        )
    )
    if kind == "ssm":
        t["model_type"] = draw(st.sampled_from(["mamba", "Mamba2", "falcon_mamba"]))
    elif kind in ("layer_types", "pattern"):
        t["sliding_window"] = draw(st.sampled_from([0, 1, 1024, 4000, 4096, 131072, None]))
        if kind == "layer_types":
            t["layer_types"] = draw(
                st.lists(
                    st.sampled_from(["full_attention", "sliding_attention", "FULL_ATTENTION", 3]),
                    max_size=12,
                )
            )
        else:
            t["sliding_window_pattern"] = draw(st.integers(0, 8))
    elif kind == "mla":
        t["kv_lora_rank"] = draw(st.sampled_from([0, 512, 2**63]))
        t["model_type"] = draw(st.sampled_from(["deepseek_v3", "deepseek_v2", "kimi_v32", "x"]))
        for key in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            if draw(st.booleans()):
                t[key] = draw(st.sampled_from([0, 64, 128]))
    elif kind == "blocks":
        t[draw(st.sampled_from(["layers_block_type", "block_types"]))] = draw(
            st.lists(st.sampled_from(["attention", "Attn", "*", "mamba", "recurrent", 1]))
        )
    elif kind == "hstr":
        t["hybrid_override_pattern"] = draw(st.text(alphabet="M*-", max_size=20))
    elif kind == "hlist":
        t["hybrid_override_pattern"] = draw(st.lists(st.sampled_from(["*", "M", 1])))
    elif kind == "period":
        t["attn_layer_period"] = draw(st.integers(0, 9))
        t["attn_layer_offset"] = draw(st.integers(0, 9) | st.integers(MAX - 9, MAX))
    elif kind == "interval":
        t["full_attention_interval"] = draw(st.integers(0, 6))
        if draw(st.booleans()):
            t["mlp_only_layers"] = draw(st.lists(st.integers(0, 40), max_size=5))
    if kind in ("blocks", "hstr", "period") and draw(st.booleans()):
        t["attention_window_size"] = draw(st.sampled_from([256, 1000, 4096]))
    nest = draw(st.integers(0, 5))
    if nest == 0:
        return {"model_type": draw(st.sampled_from(["llama", "gemma3"])), "text_config": t}
    if nest == 1:
        return {"text_config": draw(st.sampled_from([None, [], "x"])), **t}
    return t


headers = st.builds(
    Header,
    st.lists(st.tuples(st.sampled_from(sorted(ITEM)), st.lists(dim, max_size=3)), max_size=4),
    st.integers(0, 9).map(lambda n: n == 0),
)


@st.composite
def folders(draw: st.DrawFn) -> Folder:
    f = Folder(draw(configs()))
    layout = draw(st.sampled_from(["index-total", "index-headers", "single", "glob", "none"]))
    names = [f"model-{i:05d}-of-00003.safetensors" for i in range(1, 4)]
    if layout.startswith("index"):
        shards = names[: draw(st.integers(1, 3))]
        doc: dict[str, Any] = {"weight_map": {f"w{i}": s for i, s in enumerate(shards)}}
        doc["weight_map"]["junk"] = draw(
            st.sampled_from([None, 1, "model-00001-of-00003.safetensors"])
        )
        if layout == "index-total":
            doc["metadata"] = {"total_size": draw(st.integers(0, MAX) | st.just(-1))}
        f.index = doc
        kept = shards if draw(st.integers(0, 3)) else shards[:-1]  # sometimes stale
        for s in kept:
            if layout == "index-total" and draw(st.booleans()):
                f.empty_files.append(s)  # never opened when total_size is there
            else:
                f.headers[s] = draw(headers)
    if layout == "single" or (layout.startswith("index") and draw(st.booleans())):
        f.headers["model.safetensors"] = draw(headers)
    if layout == "glob":
        for s in names[: draw(st.integers(0, 3))]:
            f.headers[s] = draw(headers)
        if draw(st.booleans()):
            f.headers[".safetensors"] = draw(headers)  # no extension: never counted
    return f


def write(f: Folder, folder: Path) -> None:
    folder.mkdir()
    if f.config is not None:
        (folder / "config.json").write_text(json.dumps(f.config))
    if f.index is not None:
        (folder / "model.safetensors.index.json").write_text(json.dumps(f.index))
    for name, h in f.headers.items():
        (folder / name).write_bytes(h.encode())
    for name in f.empty_files:
        (folder / name).write_bytes(b"")


@contextlib.contextmanager
def variables(values: dict[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    folder=folders(),
    ctx=st.integers(0, 300_000) | st.sampled_from([MAX, 2**40]),
    batch=st.integers(1, 8) | st.just(2**40),
    int8=st.booleans(),
    env=st.fixed_dictionaries(
        {
            "factor": st.sampled_from(sorted(FACTORS, key=str)),
            "mult": st.sampled_from(sorted(MULTS, key=str)),
            "inflight": st.sampled_from(sorted(INFLIGHT, key=str)),
            "limit": st.sampled_from(sorted(LIMITS)),
            "rocm": st.booleans(),
        }
    ),
)
@example(
    folder=Folder(config=None),
    ctx=0,
    batch=1,
    int8=False,
    env={"factor": "", "mult": "", "inflight": "", "limit": "1.5GB", "rocm": False},
)
def test_inspect_matches_the_reference(
    folder: Folder, ctx: int, batch: int, int8: bool, env: dict[str, Any]
) -> None:
    # The one departure from mlxcel (#38): a folder with neither a config.json nor
    # safetensors is refused with one line and exit 2, where mlxcel answers its 7 B
    # guess (or "any context" for an empty folder).
    files = {*folder.headers, *folder.empty_files}
    files |= {"config.json"} if folder.config is not None else set()
    files |= {"model.safetensors.index.json"} if folder.index is not None else set()
    refused = unreadable_folder_reason(frozenset(files))
    want = None if refused else reference(folder, ctx, batch, int8, env)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m"
        write(folder, path)
        out, err = io.StringIO(), io.StringIO()
        argv = ["inspect", str(path), "--json", "--max-tokens", str(ctx), "--batch", str(batch)]
        argv += ["--kv-cache-mode", "int8" if int8 else "fp16"]
        argv += ["--backend", "rocm" if env["rocm"] else "cpu"]
        names = {
            "MLXCEL_HEADROOM_FACTOR": env["factor"],
            "MLXCEL_ACTIVATION_MULT": env["mult"],
            "MLX_ROCM_MAX_INFLIGHT_MB": env["inflight"],
            # mlxcel's own grammar (`1e30GB` saturates): vramscope's --memory-limit refuses
            # that form and reads the others to the same bytes (tests/core/test_value_grammar).
            "MLXCEL_MEMORY_LIMIT": env["limit"],
        }
        with variables(names), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    if want is None:
        assert (code, out.getvalue()) == (2, ""), err.getvalue()
        assert err.getvalue().count("\n") == 1 and str(refused) in err.getvalue()
        return
    assert code == 0, err.getvalue()
    got = json.loads(out.getvalue())
    assert {k: got[k] for k in want} == want, err.getvalue()
