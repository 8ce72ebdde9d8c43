"""Real two-rank MLX loads on the CPU: mlx.launch --backend ring over the loopback.

A small qwen2 model (fp16, written by mlx-lm) is loaded by two ranks, each with
mlx-lm's own shard() or pipeline(), runs a short workload, and reports its own
mx.get_peak_memory(). Each rank is checked against its per-rank estimate and
against an independent single-process run of the same load and workload.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.errors import ShardingError
from core.measurement.engine import Engine
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from core.measurement.run import MeasuredRun
from core.parallel.plan import ParallelPlan
from core.parallel.sharding import ParallelKind
from hip_backend import start_run
from hip_backend.ranks.launch import ParallelHandle, prepare_parallel, run_parallel, run_single
from tests.hip_backend.mlx_models import write_mlx_model
from tests.installed import need

# Weight-dominated so that the estimate's terms, sized for real models, apply: 8 layers
# of 4-head attention and a 1024-wide MLP in fp16 (16.8 MB), 32 prompt tokens.
QWEN2_CONFIG: dict[str, Any] = {
    "model_type": "qwen2",
    "hidden_size": 256,
    "num_hidden_layers": 8,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-6,
    "vocab_size": 1024,
    "rope_theta": 10000.0,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}
TIMEOUT_S = 240.0  # generous: the machine running CI may be busy; a hang still ends


@pytest.fixture(scope="module")
def qwen2_fp16(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("mlx", "mlx_lm")
    return write_mlx_model(
        tmp_path_factory.mktemp("models") / "qwen2-fp16", QWEN2_CONFIG, bits=None
    )


def request(model: Path, **kw: Any) -> MeasureRequest:
    fields: dict[str, Any] = {
        "prompt_tokens": 32,
        "gen_tokens": 4,
        "warmup_tokens": 0,
        "device": "cpu",
        "timeout_s": TIMEOUT_S,
    }
    return MeasureRequest(model=str(model), **(fields | kw))


def group_members(pgid: int) -> list[int]:
    """Live processes in a process group (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry))
    return out


@pytest.fixture(scope="module")
def single_peak(qwen2_fp16: Path) -> MeasuredPeak:
    prepared = prepare_parallel(request(qwen2_fp16), ParallelPlan(ParallelKind.TENSOR, 2))
    single = run_single(prepared)
    assert isinstance(single, MeasuredRun), single
    return single.peak


@pytest.mark.slow
def test_two_tp_ranks_each_covered_by_its_estimate_and_below_one_process(
    qwen2_fp16: Path, single_peak: MeasuredPeak
) -> None:
    kind = ParallelKind.TENSOR
    prepared = prepare_parallel(request(qwen2_fp16), ParallelPlan(kind, 2))
    # The one run API: a split is a run of N ranks, with the handle a single device has.
    handle = start_run(prepared, lambda _: None, record_history=False)
    outcome = handle.wait(600)
    assert isinstance(outcome, MeasuredRun), outcome
    assert outcome.plan == prepared.plan
    assert handle.pid is not None and group_members(handle.pid) == []
    assert [p.extra["rank"] for p in outcome.ranks] == [0, 1]
    for peak, est in zip(outcome.ranks, prepared.estimate.ranks, strict=True):
        assert peak.engine is Engine.MLX
        assert peak.extra["ranks"] == 2
        assert f"({kind.value} 2, rank {est.rank})" in peak.model
        # The weights the rank keeps are the tensors the per-rank rules give it.
        assert peak.weights_bytes is not None
        assert abs(peak.weights_bytes - est.estimate.weights_bytes) < 64 * 1024
        # Its peak is covered by its estimate: max(load peak, running total).
        assert peak.estimate_bytes == est.peak_bytes
        assert peak.peak_bytes <= est.peak_bytes, (peak.peak_bytes, est.peak_bytes)
        # And it holds less than one process doing the whole thing.
        assert peak.peak_bytes < single_peak.peak_bytes


@pytest.mark.slow
def test_single_process_run_is_covered_by_the_single_device_estimate(
    single_peak: MeasuredPeak,
) -> None:
    assert single_peak.estimate_bytes is not None
    assert single_peak.peak_bytes <= single_peak.estimate_bytes
    assert single_peak.extra["ranks"] == 1


@pytest.mark.slow
def test_a_rank_that_dies_is_a_failure_naming_it_and_nothing_is_left(qwen2_fp16: Path) -> None:
    prepared = prepare_parallel(
        request(qwen2_fp16, gen_tokens=100_000), ParallelPlan(ParallelKind.PIPELINE, 2)
    )
    handle = ParallelHandle()
    result: list[Any] = []
    runner = threading.Thread(target=lambda: result.append(run_parallel(prepared, handle=handle)))
    runner.start()
    victim = None
    deadline = time.monotonic() + TIMEOUT_S
    while victim is None and time.monotonic() < deadline:
        time.sleep(0.2)
        if handle.pgid is None:
            continue
        for pid in group_members(handle.pgid):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"MLX_RANK=1" in environ and b"hip_backend.ranks.rank" in cmdline:
                victim = pid
    assert victim is not None
    time.sleep(1.0)
    os.kill(victim, 9)
    runner.join(TIMEOUT_S)
    assert not runner.is_alive()
    outcome = result[0]
    assert isinstance(outcome, MeasurementFailure)
    assert outcome.message.startswith("rank 1 of 2 ")
    assert handle.pgid is not None and group_members(handle.pgid) == []


@pytest.mark.slow
def test_killing_mlx_launch_says_the_run_was_stopped_and_nothing_is_left(
    qwen2_fp16: Path,
) -> None:
    prepared = prepare_parallel(
        request(qwen2_fp16, gen_tokens=100_000), ParallelPlan(ParallelKind.PIPELINE, 2)
    )
    handle = ParallelHandle()
    result: list[Any] = []
    runner = threading.Thread(target=lambda: result.append(run_parallel(prepared, handle=handle)))
    runner.start()
    deadline = time.monotonic() + TIMEOUT_S
    while handle.pgid is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert handle.pgid is not None
    time.sleep(2.0)  # the ranks are up
    os.kill(handle.pgid, 15)  # mlx.launch, the group's leader: `kill PID` from a shell
    runner.join(TIMEOUT_S)
    assert not runner.is_alive()
    outcome = result[0]
    assert isinstance(outcome, MeasurementFailure)
    assert outcome.message.startswith("the run was stopped: mlx.launch was ended by SIGTERM")
    assert group_members(handle.pgid) == []


@pytest.mark.slow
def test_cancel_leaves_no_rank_running(qwen2_fp16: Path) -> None:
    prepared = prepare_parallel(request(qwen2_fp16), ParallelPlan(ParallelKind.TENSOR, 2))
    handle = ParallelHandle()
    result: list[Any] = []
    runner = threading.Thread(target=lambda: result.append(run_parallel(prepared, handle=handle)))
    runner.start()
    while handle.pgid is None and runner.is_alive():
        time.sleep(0.05)
    time.sleep(0.5)
    handle.cancel()
    runner.join(60)
    assert not runner.is_alive()
    assert isinstance(result[0], MeasurementFailure)
    assert result[0].kind is FailureKind.CANCELLED
    assert handle.pgid is not None and group_members(handle.pgid) == []


@dataclass(frozen=True)
class CliRun:
    """What one `vramscope measure` printed, its exit status and the history it wrote."""

    code: int
    out: str
    err: str
    history: list[str]
    hostfile: Path


_PP_RUNS: dict[Path, CliRun] = {}


@pytest.fixture
def pp_run_placed_by_a_hostfile(
    qwen2_fp16: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    state_home: Path,
) -> CliRun:
    """`measure --engine mlx --pp 2 --hostfile HOSTS --json` through the CLI, run once
    for the module (its first test's own home) and read by each test of it: a two-rank
    load took 11 s of processor time a run. MLX's own hostfile (two 127.0.0.1 hosts)
    places the ranks; a split without one is `start_run`'s, above."""
    if qwen2_fp16 not in _PP_RUNS:
        from tui.cli import main

        hostfile = loopback_hostfile(tmp_path_factory.mktemp("hosts"))
        code = main(["measure", str(qwen2_fp16), "--engine", "mlx", "--pp", "2",
                     "--device", "cpu", "--hostfile", str(hostfile), "--prompt-tokens", "32",
                     "--gen-tokens", "4", "--warmup-tokens", "0", "--timeout", str(TIMEOUT_S),
                     "--json"])  # fmt: skip
        out, err = capsys.readouterr()
        history = state_home / "vramscope" / "measurements.jsonl"
        lines = history.read_text().splitlines() if history.exists() else []
        _PP_RUNS[qwen2_fp16] = CliRun(code, out, err, lines, hostfile)
    return _PP_RUNS[qwen2_fp16]


@pytest.mark.slow
def test_two_pp_ranks_through_the_cli_one_row_per_rank_recorded_each(
    qwen2_fp16: Path, single_peak: MeasuredPeak, pp_run_placed_by_a_hostfile: CliRun
) -> None:
    run = pp_run_placed_by_a_hostfile
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    assert doc["parallel"] == {"kind": "pp", "ranks": 2}
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    plan = prepare_parallel(request(qwen2_fp16), ParallelPlan(ParallelKind.PIPELINE, 2))
    for entry, est in zip(doc["ranks"], plan.estimate.ranks, strict=True):
        measured = entry["measured"]
        assert measured["engine"] == "mlx"
        assert entry["estimate_bytes"] == est.peak_bytes
        assert entry["margin"]["covered"] is True
        assert abs(measured["weights_bytes"] - est.estimate.weights_bytes) < 64 * 1024
    # mlx-lm's ranges: rank 0 runs the last layers.
    assert [e["measured"]["extra"]["layers"] for e in doc["ranks"]] == [[4, 8], [0, 4]]
    # Embeddings, final norm and LM head are on both stages.
    kept = sum(e["measured"]["weights_bytes"] for e in doc["ranks"])
    assert kept > (single_peak.weights_bytes or 0)
    assert [json.loads(line)["result"]["extra"]["rank"] for line in run.history] == [0, 1]


def test_measure_cli_refusals(qwen2_fp16: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tui.cli import main

    assert main(["measure", str(qwen2_fp16), "--tp", "2"]) == 2  # torch engine
    assert "--engine mlx only" in capsys.readouterr().err
    assert main(["measure", str(qwen2_fp16), "--engine", "mlx", "--tp", "3"]) == 2
    assert "8 attention heads do not divide by 3" in capsys.readouterr().err
    with pytest.raises(ShardingError):
        prepare_parallel(request(qwen2_fp16), ParallelPlan(ParallelKind.TENSOR, 16))


def test_a_profile_is_measured_with_synthetic_weights_on_every_rank() -> None:
    from core.backend import Backend

    prepared = prepare_parallel(
        MeasureRequest(model="mlx-community/Qwen3-30B-A3B-4bit", device="cpu"),
        ParallelPlan(ParallelKind.PIPELINE, 2),
    )
    assert prepared.job.profile_id == "mlx-community/Qwen3-30B-A3B-4bit"
    assert prepared.job.synthetic and prepared.job.folder is None
    assert any("synthetic weights" in w for w in prepared.warnings)
    assert prepared.backend is Backend.CPU
    assert [r.layers for r in prepared.estimate.ranks] == [(24, 48), (0, 24)]
    assert all(r.estimate.backend_inflight_bytes == 0 for r in prepared.estimate.ranks)


def loopback_hostfile(tmp_path: Path, ranks: int = 2) -> Path:
    path = tmp_path / "hosts.json"
    hosts = [{"ssh": "127.0.0.1", "ips": ["127.0.0.1"]} for _ in range(ranks)]
    path.write_text(json.dumps(hosts), encoding="utf-8")
    return path


@pytest.mark.slow
def test_ranks_placed_by_a_loopback_hostfile(
    qwen2_fp16: Path, pp_run_placed_by_a_hostfile: CliRun
) -> None:
    """MLX's own hostfile (two 127.0.0.1 hosts) places the ranks: mlx.launch's ring
    backend runs them locally, and each rank is measured as without a hostfile."""
    run = pp_run_placed_by_a_hostfile
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    assert doc["launcher"] == (
        f"mlx.launch --backend ring --hostfile {run.hostfile} (hosts: 127.0.0.1)"
    )
    assert doc["parallel"] == {"kind": "pp", "ranks": 2}
    plan = prepare_parallel(request(qwen2_fp16), ParallelPlan(ParallelKind.PIPELINE, 2))
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    for entry, est in zip(doc["ranks"], plan.estimate.ranks, strict=True):
        assert entry["estimate_bytes"] == est.peak_bytes
        assert entry["margin"]["covered"] is True
        assert abs(entry["measured"]["weights_bytes"] - est.estimate.weights_bytes) < 64 * 1024


def test_the_launch_command_carries_the_hostfile_instead_of_a_rank_count(
    tmp_path: Path,
) -> None:
    from hip_backend.ranks.hostfile import read_hostfile
    from hip_backend.ranks.launch import mlx_launch_command

    path = loopback_hostfile(tmp_path, 3)
    hostfile = read_hostfile(str(path), 3)
    assert hostfile.ports == 3 and hostfile.local
    argv = mlx_launch_command("py", 3, 40000, tmp_path / "job.json", hostfile)
    assert argv[argv.index("--hostfile") + 1] == str(path)
    assert "-n" not in argv
    assert argv[argv.index("--backend") + 1] == "ring"
    assert "-n" in mlx_launch_command("py", 3, 40000, tmp_path / "job.json")


BAD_HOSTFILES: list[tuple[str, str | None, str]] = [
    ("missing", None, "cannot read it (no such file or directory)"),
    ("not-json", "{hosts: [", "not JSON"),
    ("not-utf8", "\udcff", "not UTF-8 text"),
    ("empty-list", "[]", "non-empty JSON list"),
    ("no-hosts-key", '{"backend": "ring"}', 'has no "hosts" list'),
    ("host-not-object", '["127.0.0.1", "127.0.0.1"]', "host 0 is not an object"),
    ("no-ssh", '[{"ips": ["127.0.0.1"]}, {"ips": ["127.0.0.1"]}]', 'host 0 has no "ssh"'),
    ("hostnames-only", '[{"ssh": "a"}, {"ssh": "b"}]', 'host 0 has no "ips" list'),
    ("hostname-as-ip", '[{"ssh": "a", "ips": ["box-a"]}, {"ssh": "b", "ips": ["10.0.0.2"]}]',
     "host 0: 'box-a' is not an IP address"),
    ("three-for-two", json.dumps([{"ssh": "127.0.0.1", "ips": ["127.0.0.1"]}] * 3),
     "lists 3 hosts but the plan has 2 ranks"),
    ("other-backend", '{"backend": "jaccl", "hosts": []}', "names backend 'jaccl'"),
    ("bad-env", '{"envs": ["=x"], "hosts": []}', "\"envs\": '=x' is not NAME=VALUE"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "content", "message"), BAD_HOSTFILES, ids=[b[0] for b in BAD_HOSTFILES]
)
def test_a_bad_hostfile_is_one_line_exit_2_before_anything_starts(
    name: str,
    content: str | None,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tui.cli import main

    path = tmp_path / f"{name}.json"
    if content is not None:
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    # The model does not exist either: the hostfile is checked first, before any load.
    code = main(["measure", str(tmp_path / "no-model"), "--engine", "mlx", "--tp", "2",
                 "--hostfile", str(path)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"vramscope: error: --hostfile: {path}: ")
    assert message in err, err


def test_a_hostfile_without_a_plan_and_an_unreadable_one_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    path = loopback_hostfile(tmp_path)
    assert main(["measure", "x", "--engine", "mlx", "--hostfile", str(path)]) == 2
    assert "--hostfile: places the ranks of --tp N or --pp N" in capsys.readouterr().err
    assert main(["measure", "x", "--engine", "mlx", "--pp", "2", "--hostfile",
                 str(tmp_path)]) == 2  # fmt: skip
    assert "cannot read it (is a directory)" in capsys.readouterr().err
