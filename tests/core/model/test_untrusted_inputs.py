"""One boundary for untrusted numbers and text (issue 8, section 1).

Each table names the class of input it feeds: huge digit strings, float overflow,
unbounded durations, folder names that are not UTF-8, control characters from a
model folder, and config fields of the wrong JSON type.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.backend import Backend
from core.display_text import clean_text, escape_undecodable, json_safe
from core.environment import read_env
from core.estimate.available import resolve_available_memory
from core.measurement.result import FailureKind, MeasurementFailure
from core.model.config import decode_json
from core.units import U64_MAX
from tests.core.helpers import MINIMAL_CONFIG, safetensors_bytes
from tui.cli import main
from tui.commands.shared.output import failure_line

HUGE = "9" * 5000


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str) -> None:
    assert code == 2
    assert "Traceback" not in err
    assert err.count("\n") == 1, err


# --- integers past Python's integer-string limit ------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "expected_bytes_or_source"),
    [
        # class: a 5000-digit size is not a size; the next source answers
        ("MLXCEL_MEMORY_LIMIT", HUGE, "nothing detected"),
        ("MLXCEL_MEMORY_LIMIT", HUGE + "GB", "nothing detected"),  # an infinite float
        ("MLXCEL_MEMORY_LIMIT", "1e30GB", 2**64 - 1),  # a finite one saturates
        # class: leading zeros are free, as in Rust's parser
        ("MLXCEL_MEMORY_LIMIT", "0" * 5000 + "1024", 1024),
    ],
)
def test_memory_limit_with_thousands_of_digits(
    name: str, raw: str, expected_bytes_or_source: int | str
) -> None:
    assert read_env((name,), environb={name.encode(): raw.encode()})[name] == raw
    available = resolve_available_memory(
        Backend.CPU,
        env_limit=raw,
        device_probe=lambda _b: None,
        unified_probe=lambda: None,
        meminfo_probe=lambda: None,
    )
    if isinstance(expected_bytes_or_source, str):
        assert available.source == expected_bytes_or_source
        assert available.warning is not None and len(available.warning) < 200
    else:
        assert available.bytes == expected_bytes_or_source


@pytest.mark.parametrize("raw", [HUGE, "+" + HUGE, " -" + HUGE, "0" * 5000])
def test_inflight_budget_with_thousands_of_digits(raw: str) -> None:
    # class: a 5000-digit MiB count overflows u64 (ERANGE -> default); zeros are 0
    from core.estimate.inflight import parse_inflight_mb

    assert parse_inflight_mb(raw) == (0 if set(raw) == {"0"} else None)


def test_5000_digit_env_is_a_warning_through_the_cli(
    model_dir: Callable[..., Path], capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    folder = model_dir(MINIMAL_CONFIG)
    monkeypatch.setenv("MLXCEL_MEMORY_LIMIT", HUGE)
    monkeypatch.setenv("MLX_ROCM_MAX_INFLIGHT_MB", HUGE)
    code, out, err = run(capsys, "inspect", str(folder), "--backend", "rocm", "--json")
    assert code == 0
    assert json.loads(out)["backend_inflight_bytes"] == 1 << 30
    lines = err.splitlines()
    assert len(lines) == 2 and all(len(line) < 200 for line in lines), err
    assert "MLXCEL_MEMORY_LIMIT" in err and "MLX_ROCM_MAX_INFLIGHT_MB" in err


@pytest.mark.parametrize(
    "argv",
    [
        # class: integer flags past u64 or past the integer-string limit
        ["--max-tokens", HUGE],
        ["--batch", HUGE],
        ["--max-tokens", str(2**64)],
        ["--batch", "0" * 5000],
        ["--batch", "1_000"],  # --max-tokens reads `1_000` as 1000, as the explorer does
    ],
)
def test_integer_flags_out_of_range_are_usage_errors(
    model_dir: Callable[..., Path], capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = run(capsys, "inspect", str(model_dir(MINIMAL_CONFIG)), *argv)
    assert_one_line_error(code, err)
    assert len(err) < 300


def test_u64_max_tokens_is_accepted(
    model_dir: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = str(model_dir(MINIMAL_CONFIG))
    code, out, _ = run(capsys, "inspect", folder, "--max-tokens", str(U64_MAX), "--json")
    assert code == 0
    assert json.loads(out)["total_bytes"] == U64_MAX


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        # class: JSON integer literals serde_json types differently from Python
        ("-0", -0.0),  # a float: skipped by u64 lookups
        ("18446744073709551615", U64_MAX),
        ("18446744073709551616", 18446744073709551616.0),  # past u64: an f64
        ("-9223372036854775808", -(2**63)),
        ("-9223372036854775809", -9223372036854775809.0),
        ("0" + "", 0),
    ],
)
def test_integer_literals_are_typed_like_serde_json(literal: str, expected: Any) -> None:
    value = decode_json(f'{{"v": {literal}}}'.encode(), "config.json")["v"]
    assert type(value) is type(expected) and value == expected
    if isinstance(expected, float) and expected == 0:
        assert str(value) == "-0.0"


@pytest.mark.parametrize(
    "text",
    [
        # class: inputs serde_json refuses and Python's json accepts
        '{"v": ' + HUGE + "}",  # an integer outside the f64 range
        '{"v": 1e400}',
        '{"v": "\\ud800"}',  # a lone leading surrogate
        '{"v": "\\udc00"}',  # a lone trailing surrogate
        '{"\\ud800": 1}',  # in a key
        "[" * 128 + "]" * 128,  # 128 levels of nesting
        '{"v": ' + "[" * 127 + "]" * 127 + "}",
        '{"v": NaN}',
        "[" * 100_000,  # deeper than Python's own recursion limit
        # 128 levels with strings full of brackets and escaped quotes between them
        '{"a": "]]]}", "b": ' + '[{"k\\"[": ' * 63 + "[]" + "}]" * 63 + "}",
    ],
)
def test_json_serde_refuses_is_a_parse_failure(text: str) -> None:
    with pytest.raises(ValueError, match=r"^config\.json "):
        decode_json(text.encode(), "config.json")


@pytest.mark.parametrize(
    "text",
    [
        "[" * 127 + "]" * 127,  # 127 levels: serde_json's deepest
        '{"v": "\\ud83d\\ude00"}',  # a surrogate pair is one character
        '{"v": "\\\\ud800"}',  # an escaped backslash, not an escape
        # 127 levels, brackets in strings (escaped quotes too) not counted as levels
        '{"a": "]]]}", "b": ' + '[{"k\\"[": ' * 63 + "1" + "}]" * 63 + "}",
        '["' + "[" * 500 + '", {"v": [[1, -0, 18446744073709551615]]}]',
    ],
)
def test_json_serde_accepts(text: str) -> None:
    decode_json(text.encode(), "config.json")


def test_config_past_serde_rules_takes_mlxcels_fallbacks(
    model_dir: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = model_dir()
    (folder / "config.json").write_text(
        json.dumps(MINIMAL_CONFIG)[:-1] + ', "deep": ' + "[" * 130 + "]" * 130 + "}"
    )
    code, out, err = run(capsys, "inspect", str(folder), "--json", "--backend", "cpu")
    data = json.loads(out)
    assert code == 0
    assert (data["weights_source"], data["kv_bytes_total"], data["activation_bytes"]) == (
        "fallback",
        0,
        0,
    )
    assert "nesting deeper than 127 levels" in err and err.count("\n") == 1


# --- MemoryError on a huge header ---------------------------------------------------


def test_memory_error_reading_a_header_is_one_warning_and_models_lists_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    import core.model.config

    root = tmp_path / "models"
    for name in ("big", "small"):
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(MINIMAL_CONFIG))
    header = {f"t{i}": {"dtype": "F16", "shape": [2]} for i in range(200)}
    (root / "big" / "model.safetensors").write_bytes(safetensors_bytes(header))
    (root / "small" / "model.safetensors").write_bytes(
        safetensors_bytes({"w": {"dtype": "F16", "shape": [2]}})
    )
    real_loads = json.loads

    def loads(text: str, **kw: Any) -> Any:
        if len(text) > 2000:  # only the big header: a decode that runs out of memory
            raise MemoryError
        return real_loads(text, **kw)

    monkeypatch.setattr(core.model.config.json, "loads", loads)
    code, out, err = run(capsys, "inspect", str(root / "big"), "--json", "--backend", "cpu")
    assert code == 0 and real_loads(out)["weights_source"] == "analytical_config"
    assert err.count("\n") == 1 and "too large to decode in memory" in err
    code, out, err = run(capsys, "models", "--models-dir", str(root), "--json")
    names = {m["name"]: m for m in real_loads(out)["models"]}
    assert code == 0 and {"big", "small"} <= set(names)
    assert names["small"]["weights_source"] == "safetensors_header"
    assert any("too large" in w for w in names["big"]["warnings"])


# --- float products that overflow ---------------------------------------------------


@pytest.mark.parametrize(
    ("factor", "headroom", "warned"),
    [
        # class: a product that overflows f64 is 0 in mlxcel (it checks is_finite first):
        # the number is mlxcel's, and one warning line says why the factor did nothing
        ("1e305", 0, True),
        ("1.7976931348623157e308", 0, True),
        # class: a large but finite product clamps at u64::MAX (Rust's `as u64`)
        ("1e10", U64_MAX, False),
    ],
)
def test_headroom_factor_overflow_keeps_mlxcel_s_number_and_says_so(
    model_dir: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch,
    factor: str,
    headroom: int,
    warned: bool,
) -> None:
    monkeypatch.setenv("MLXCEL_HEADROOM_FACTOR", factor)
    code, out, err = run(capsys, "inspect", str(model_dir(MINIMAL_CONFIG)), "--json")
    data = json.loads(out)
    assert code == 0
    overhead = data["headroom_bytes"] - data["activation_bytes"] - data["backend_inflight_bytes"]
    assert (data["headroom_bytes"] if headroom == U64_MAX else overhead) == headroom
    if headroom == U64_MAX:
        assert data["total_bytes"] == U64_MAX
        assert data["fits"] is False
    overflow_lines = [line for line in err.splitlines() if "overflows a double" in line]
    assert len(overflow_lines) == (1 if warned else 0)
    if warned:
        assert overflow_lines[0].startswith("vramscope: warning: MLXCEL_HEADROOM_FACTOR=")


# --- duration flags -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    # class: durations a timer cannot take, or that are no bound at all
    ["inf", "-inf", "nan", "1e308", "604801", "0", "-1", "abc", ""],
)
@pytest.mark.parametrize("command", ["measure", "table"])
def test_timeout_out_of_range_is_refused(
    capsys: pytest.CaptureFixture[str], command: str, value: str
) -> None:
    code, _, err = run(capsys, command, "Qwen/Qwen2.5-7B-Instruct", f"--timeout={value}")
    assert_one_line_error(code, err)
    assert "--timeout" in err


@pytest.mark.parametrize("flag", ["--prompt-tokens", "--gen-tokens", "--warmup-tokens"])
@pytest.mark.parametrize("value", ["16777217", "18446744073709551615", "9" * 5000])
def test_token_counts_no_run_could_finish_are_refused(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    # class: a workload of more tokens than any model's context (a run of days)
    code, _, err = run(capsys, "measure", "Qwen/Qwen2.5-7B-Instruct", f"{flag}={value}")
    assert_one_line_error(code, err)
    assert flag in err


def test_timeout_of_a_week_is_accepted() -> None:
    from tui.commands.shared.flags import duration_seconds

    assert duration_seconds("--timeout")("604800") == 604800.0


# --- --json is valid UTF-8 whatever the folder is called ---------------------------


def _undecodable_folder(tmp_path: Path) -> tuple[str, bytes]:
    raw = os.fsencode(str(tmp_path)) + b"/model-\xff\xfe-\x1b[31m"
    os.mkdir(raw)
    with open(raw + b"/config.json", "wb") as fh:
        fh.write(json.dumps(dict(MINIMAL_CONFIG, model_type="ll\x1b]0;pwned\x07ama")).encode())
    return os.fsdecode(raw), raw


def test_json_is_valid_utf8_for_a_folder_name_that_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = _undecodable_folder(tmp_path)
    code, out, _ = run(capsys, "inspect", folder, "--json", "--backend", "cpu")
    assert code == 0
    data = json.loads(out.encode("utf-8"))
    assert data["model"].endswith("model-\\xff\\xfe-\x1b[31m")
    assert data["model_type"] == "ll\x1b]0;pwned\x07ama"  # JSON escapes it: \u001b
    assert "\x1b" not in out  # written as \u001b
    code, out, _ = run(capsys, "inspect", folder, "--backend", "cpu")
    assert code == 0 and "\x1b" not in out and "model-\\xff\\xfe-[31m" in out


def test_json_is_valid_utf8_in_a_subprocess(tmp_path: Path) -> None:
    _, raw = _undecodable_folder(tmp_path)
    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"tui", b"inspect", raw, b"--json", b"--backend", b"cpu"],
        capture_output=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"},
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.decode("utf-8"))  # strict: valid UTF-8
    assert data["model"].endswith("\\xff\\xfe-\x1b[31m")
    assert b"Traceback" not in proc.stderr


# --- control characters from a model folder ----------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # class: terminal escapes, C1 controls, bidi overrides, undecodable bytes
        ("ll\x1b[31mama", "ll[31mama"),
        ("a\x9bb\x07c\x00d\x7f", "abcd"),
        ("evil\u202etxt.exe", "eviltxt.exe"),
        ("bad\udcffname", "bad\\xffname"),
        ("line\nbreak\rreturn\ttab", "linebreakreturntab"),
        ("Qwen2.5-7B — ok ×", "Qwen2.5-7B — ok ×"),
    ],
)
def test_clean_text(text: str, shown: str) -> None:
    assert clean_text(text) == shown


def test_json_safe_escapes_keys_and_values() -> None:
    assert json_safe({"k\udcff": ["v\udcfe", 1, None]}) == {"k\\xff": ["v\\xfe", 1, None]}
    assert escape_undecodable("\ud800") == "\\ud800"


def test_models_and_warnings_never_print_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "models"
    bad = root / "evil\x1b[2Jname"
    bad.mkdir(parents=True)
    (bad / "config.json").write_text(
        json.dumps(
            dict(
                MINIMAL_CONFIG,
                hidden_size="4096\x1b[2J",
                d_model=4096,
                quantization_config={"quant_method": "gptq\x1b[31m", "bits": 4},
            )
        )
    )
    code, out, err = run(capsys, "models", "--models-dir", str(root), "--verbose")
    assert code == 0
    assert "\x1b" not in out + err
    assert "evil[2Jname (!)" in out
    code, out, err = run(capsys, "inspect", str(bad), "--backend", "cpu")
    assert code == 0 and "\x1b" not in out + err
    assert err.count("\n") == 1 and 'hidden_size ("4096\\u001b[2J")' in err


def test_measurement_failure_lines_are_cleaned() -> None:
    failure = MeasurementFailure(
        FailureKind.UNSUPPORTED_MODEL, "model type 'x\x1b[31m' is not supported"
    )
    line = failure_line(failure)
    assert "\x1b" not in line and "model type 'x[31m'" in line


# --- config fields of the wrong JSON type ------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        # class: values mlxcel's typed u64 lookups skip
        ("4096", '"4096"'),
        (True, "true"),
        (None, "null"),
        (-4096, "-4096"),
        (4096.0, "4096.0"),
        ([4096], "[4096]"),
        (2**64, "1.8446744073709552e+19"),  # past u64: decoded as an f64, as serde_json does
    ],
)
def test_wrong_type_size_fields_keep_mlxcels_numbers_and_say_so(
    model_dir: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    value: Any,
    shown: str,
) -> None:
    absent = {k: v for k, v in MINIMAL_CONFIG.items() if k != "hidden_size"}
    flags = ("--json", "--backend", "cpu", "--memory-limit", "64GB")
    code, expected, _ = run(capsys, "inspect", str(model_dir(absent, name="absent")), *flags)
    folder = model_dir(dict(absent, hidden_size=value), name="typed")
    code, out, err = run(capsys, "inspect", str(folder), *flags)
    assert code == 0
    got, want = json.loads(out), json.loads(expected)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # the analytical weight count reads any JSON number (spec 12.2); KV does not
        assert (got["kv_bytes_total"], got["activation_bytes"]) == (
            want["kv_bytes_total"],
            want["activation_bytes"],
        )
    else:
        assert {k: v for k, v in got.items() if k != "model"} == {
            k: v for k, v in want.items() if k != "model"
        }
    assert err.count("\n") == 1
    assert f"hidden_size ({shown})" in err and "read as absent" in err


def test_null_in_optional_fields_is_not_warned(
    model_dir: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = model_dir(dict(MINIMAL_CONFIG, sliding_window=None, head_dim=None))
    code, _, err = run(capsys, "inspect", str(folder), "--json", "--backend", "cpu")
    assert (code, err) == (0, "")


def test_display_text_is_clean_at_the_source_for_every_screen(tmp_path: Path) -> None:
    # class: config strings and folder names that the TUI shows without the CLI's help
    from core.catalog.model_dir import read_model_dir
    from core.catalog.sources import folder_entry

    folder = tmp_path / "evil\x1b[2J"
    folder.mkdir()
    config = dict(
        MINIMAL_CONFIG,
        num_attention_heads="32\x1b]0;x\x07",
        quantization_config={"quant_method": "gptq\x1b[31m", "bits": 4, "group_size": 128},
    )
    (folder / "config.json").write_text(json.dumps(config))
    entry = folder_entry(folder)
    assert "\x1b" not in entry.format_label and "GPTQ" in entry.format_label.upper()
    snap = read_model_dir(folder)
    assert snap.warnings and not any("\x1b" in w or "\x07" in w for w in snap.warnings)
