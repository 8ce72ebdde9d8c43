"""Random bytes and random JSON as config.json, headers and index files, through
`inspect --json`: exit 0 or 2, never a traceback, valid UTF-8 JSON on success."""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.cli import main

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["4096", "F32", "model.safetensors", "a.safetensors", "", "\x1b[2J"])
    | st.text(max_size=6)
)
json_values = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "hidden_size",
                    "num_hidden_layers",
                    "num_attention_heads",
                    "num_key_value_heads",
                    "head_dim",
                    "text_config",
                    "weight_map",
                    "metadata",
                    "total_size",
                    "dtype",
                    "shape",
                    "sliding_window",
                    "kv_lora_rank",
                    "layer_types",
                    "attn_layer_period",
                ]
            )
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=16,
)

# A file's content: raw bytes, or JSON text (sometimes truncated), or nothing.
json_text = json_values.map(lambda v: json.dumps(v).encode())
file_content = st.one_of(
    st.none(),
    st.binary(max_size=48),
    json_text,
    st.tuples(json_text, st.integers(0, 40)).map(lambda t: t[0][: t[1]]),
)
header_content = st.one_of(
    st.none(),
    st.binary(max_size=48),
    st.tuples(json_text, st.integers(-4, 4)).map(
        lambda t: struct.pack("<Q", max(len(t[0]) + t[1], 0)) + t[0]
    ),
)

FILES = ("config.json", "model.safetensors.index.json", "model.safetensors", "a.safetensors")


def run_inspect(folder: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["inspect", str(folder), "--json", "--backend", "cpu", *extra])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def check(code: int, out: str, err: str) -> None:
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err
    if code == 0:
        data = json.loads(out.encode("utf-8"))  # valid UTF-8, valid JSON
        assert data["weights_bytes"] + data["kv_bytes_total"] + data["headroom_bytes"] >= min(
            data["total_bytes"], 2**64 - 1
        )
    else:
        assert err.count("\n") == 1


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    config=file_content,
    index=file_content,
    single=header_content,
    shard=header_content,
    factor=st.sampled_from([None, "1e305", "nan", "0.5", "9" * 5000, "1.2"]),
)
def test_random_folders_through_inspect_json(
    config: bytes | None,
    index: bytes | None,
    single: bytes | None,
    shard: bytes | None,
    factor: str | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "m"
        folder.mkdir()
        for name, content in zip(FILES, (config, index, single, shard), strict=True):
            if content is not None:
                (folder / name).write_bytes(content)
        old = os.environ.get("MLXCEL_HEADROOM_FACTOR")
        try:
            if factor is None:
                os.environ.pop("MLXCEL_HEADROOM_FACTOR", None)
            else:
                os.environ["MLXCEL_HEADROOM_FACTOR"] = factor
            check(*run_inspect(folder, "--memory-limit", "64GB"))
        finally:
            if old is None:
                os.environ.pop("MLXCEL_HEADROOM_FACTOR", None)
            else:
                os.environ["MLXCEL_HEADROOM_FACTOR"] = old


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values)
def test_random_json_as_config(value: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "m"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(value))
        check(*run_inspect(folder))


def test_hostile_folder_in_a_subprocess(tmp_path: Path) -> None:
    raw = os.fsencode(str(tmp_path)) + b"/\xff\x1b[2J"
    os.mkdir(raw)
    files = {
        b"config.json": b'{"text_config": null, "hidden_size": "4096", "x": ' + b"[" * 200,
        b"model.safetensors.index.json": b'{"weight_map": {"a": 1, "b": "./x"}}',
        b"model.safetensors": struct.pack("<Q", 2**63) + b"{}",
        b".safetensors": b"\x00" * 7,
    }
    for name, content in files.items():
        with open(raw + b"/" + name, "wb") as fh:
            fh.write(content)
    os.symlink(b"/nonexistent", raw + b"/b.safetensors")
    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"tui", b"inspect", raw, b"--json", b"--backend", b"cpu"],
        capture_output=True,
        timeout=60,
        env={**os.environ, "MLXCEL_HEADROOM_FACTOR": "1e305", "LC_ALL": "C.UTF-8"},
    )
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr and b"\x1b" not in proc.stderr
    data = json.loads(proc.stdout.decode("utf-8"))
    assert data["weights_source"] == "fallback"
    # mlxcel's overflowing factor product counts 0 bytes, and one line says so
    assert data["headroom_bytes"] == data["activation_bytes"] + data["backend_inflight_bytes"]
    assert proc.stderr.count(b"overflows a double") == 1
