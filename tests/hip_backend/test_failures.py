"""Every way a measurement can fail ends in one typed failure (the run's one `RunEnded`);
the parent never hangs.

Each test runs the real launcher and a real child process.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from core.measurement.protocol import MeasureProgress
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasurementFailure
from core.measurement.run import MeasuredRun, RunEnded, RunEvent
from hip_backend import measure, start_run
from tests.installed import need

MeasureEvent = RunEvent

MIB = 1 << 20


class Recorder:
    """Collects events; `progressed` is set on the first progress line."""

    def __init__(self) -> None:
        self.events: list[MeasureEvent] = []
        self.progressed = threading.Event()

    def __call__(self, event: MeasureEvent) -> None:
        self.events.append(event)
        if isinstance(event, MeasureProgress):
            self.progressed.set()

    @property
    def terminal(self) -> list[MeasureEvent]:
        return [e for e in self.events if isinstance(e, RunEnded)]


def failure_of(outcome: object, kind: FailureKind) -> MeasurementFailure:
    assert isinstance(outcome, MeasurementFailure), outcome
    assert outcome.kind is kind, outcome
    assert "\n" not in outcome.message
    return outcome


def request(model: Path | str, **kw: object) -> MeasureRequest:
    base: dict[str, object] = {
        "prompt_tokens": 8,
        "gen_tokens": 2,
        "warmup_tokens": 0,
        "device": "cpu",
    }
    return MeasureRequest(str(model), **{**base, **kw})  # type: ignore[arg-type]


def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_an_interpreter_without_torch(tiny_llama: Path, tmp_path: Path) -> None:
    import sys

    # -S: no site-packages, so no torch; core and hip_backend still come from PYTHONPATH.
    python = script(tmp_path / "python-no-torch", f'exec "{sys.executable}" -S "$@"')
    failure = failure_of(measure(request(tiny_llama), python=python), FailureKind.NO_TORCH)
    assert "pip install 'vramscope[measure]'" in failure.message


@pytest.mark.parametrize("device", ["cuda", "rocm"])
def test_a_device_this_torch_cannot_reach(tiny_llama: Path, device: str) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    failure = failure_of(measure(request(tiny_llama, device=device)), FailureKind.NO_DEVICE)
    assert ("CUDA" if device == "cuda" else "ROCm") in failure.message


def test_an_unsupported_family_fails_while_the_estimate_still_works() -> None:
    rec = Recorder()
    handle = start_run(request("google/gemma-2-2b-it"), rec, record_history=False)
    failure = failure_of(handle.wait(60), FailureKind.UNSUPPORTED_MODEL)
    assert "gemma2" in failure.message
    assert "the estimate still works" in failure.message
    assert handle.estimate is not None
    assert handle.estimate.total_bytes > 5_228_683_776  # weights alone
    assert len(rec.terminal) == 1


def test_tensors_that_do_not_match_the_config_are_a_bad_model(
    tiny_llama: Path, copy_model: Callable[[Path], Path]
) -> None:
    folder = copy_model(tiny_llama)
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] = 1024
    (folder / "config.json").write_text(json.dumps(config))
    failure = failure_of(measure(request(folder)), FailureKind.BAD_MODEL)
    assert "model.layers.0.mlp.gate_proj" in failure.message


@pytest.mark.parametrize("synthetic", [False, True], ids=["mapping-weights", "allocating"])
def test_running_out_of_memory(sweep_model: Path, synthetic: bool) -> None:
    need("torch")
    capped = request(sweep_model, host_memory_cap_bytes=64 * MIB, synthetic=synthetic)
    failure_of(measure(capped, record_history=False), FailureKind.OUT_OF_MEMORY)


def test_a_fifo_weight_file_is_a_bad_model_not_synthetic_weights(
    tiny_llama: Path, tmp_path: Path
) -> None:
    # A FIFO has size 0, like an index-only placeholder: it must not be measured with
    # random weights and exit 0 ("no weight files").
    folder = tmp_path / "fifo-model"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny_llama / "config.json").read_bytes())
    os.mkfifo(folder / "model.safetensors")
    failure = failure_of(measure(request(folder), record_history=False), FailureKind.BAD_MODEL)
    assert f"{folder / 'model.safetensors'}: is not a regular file" in failure.message


@pytest.mark.parametrize("cap_bytes", [1 << 20, 1])
def test_a_memory_cap_too_small_to_start_is_out_of_memory(tiny_llama: Path, cap_bytes: int) -> None:
    # Under a 1 MB cap libgomp cannot map its worker threads' stacks: that is the cap
    # refusing memory, not an internal error.
    need("torch")
    capped = request(tiny_llama, host_memory_cap_bytes=cap_bytes)
    failure = failure_of(measure(capped, record_history=False), FailureKind.OUT_OF_MEMORY)
    assert "internal error" not in failure.message


def test_a_killed_child(tiny_llama: Path) -> None:
    rec = Recorder()
    handle = start_run(request(tiny_llama, gen_tokens=500), rec, record_history=False)
    assert rec.progressed.wait(120)
    assert handle.pid is not None
    os.kill(handle.pid, signal.SIGKILL)
    failure = failure_of(handle.wait(60), FailureKind.KILLED)
    assert "SIGKILL" in failure.message
    assert len(rec.terminal) == 1


def test_cancelling_kills_the_child(tiny_llama: Path) -> None:
    rec = Recorder()
    handle = start_run(request(tiny_llama, gen_tokens=500), rec, record_history=False)
    assert rec.progressed.wait(120)
    pid = handle.pid
    handle.cancel()
    failure_of(handle.wait(60), FailureKind.CANCELLED)
    assert handle.done
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # type: ignore[arg-type]
    assert len(rec.terminal) == 1
    handle.cancel()  # a second cancel changes nothing
    assert len(rec.terminal) == 1


def test_a_run_past_its_time_limit(tiny_llama: Path) -> None:
    outcome = measure(request(tiny_llama, gen_tokens=500, timeout_s=0.5), record_history=False)
    failure = failure_of(outcome, FailureKind.TIMEOUT)
    assert "0.5 s" in failure.message


def test_a_child_that_dies_without_a_word(tiny_llama: Path, tmp_path: Path) -> None:
    python = script(tmp_path / "dies", "echo 'Segmentation fault (core dumped)' >&2; exit 139")
    failure = failure_of(measure(request(tiny_llama), python=python), FailureKind.INTERNAL)
    assert "status 139" in failure.message
    assert "Segmentation fault" in failure.message


def test_a_child_that_prints_garbage(tiny_llama: Path, tmp_path: Path) -> None:
    python = script(tmp_path / "garbage", "cat >/dev/null; echo 'not json'; echo '{\"event\":1}'")
    failure_of(measure(request(tiny_llama), python=python), FailureKind.INTERNAL)


def test_an_interpreter_that_does_not_exist(tiny_llama: Path, tmp_path: Path) -> None:
    failure = failure_of(
        measure(request(tiny_llama), python=str(tmp_path / "nope")), FailureKind.INTERNAL
    )
    assert "cannot start" in failure.message


def test_a_name_that_resolves_to_nothing_fails_without_a_child() -> None:
    rec = Recorder()
    handle = start_run(request("no/such-model"), rec)
    assert handle.done
    assert handle.pid is None
    failure = failure_of(handle.outcome, FailureKind.BAD_MODEL)
    assert "no/such-model" in failure.message
    assert rec.terminal == [RunEnded(failure)]


def test_a_failing_callback_does_not_lose_the_result(tiny_llama: Path) -> None:
    seen: list[MeasureEvent] = []

    def explode(event: MeasureEvent) -> None:
        seen.append(event)
        raise RuntimeError("UI bug")

    handle = start_run(request(tiny_llama), explode, record_history=False)
    assert isinstance(handle.wait(120), MeasuredRun)
    assert isinstance(seen[-1], RunEnded)
