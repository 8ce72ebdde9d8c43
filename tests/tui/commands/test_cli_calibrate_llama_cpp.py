"""`vramscope calibrate --engine llama.cpp` (#40): the compute term fitted from the
history's `vramscope run` llama.cpp runs. The runs are real `vramscope run`s of a
stand-in `llama-server` on PATH writing a log the vendored llama.cpp really printed
(tests/core/load/data/llama_completion_gemma3.log) to its stderr."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from core.load.llama_cpp_log import parse_llama_log
from tests.gguf_llama_models import write_model
from tests.hip_backend.test_external_run import finished
from tests.hip_backend.test_run_llama_cpp import DATA, FLAGS, SERVER_ON_STDERR, env_for


def test_the_compute_factor_is_fitted_from_recorded_llama_cpp_runs(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    bad = finished(env, "calibrate", "--engine", "llama.cpp")
    assert bad.returncode == 2
    assert bad.stderr.startswith("vramscope: error: no llama.cpp run with its compute buffer")
    assert "Traceback" not in bad.stderr

    source = DATA / "llama_completion_gemma3.log"
    program = tmp_path / "bin" / "llama-server"
    program.parent.mkdir()
    program.write_text(SERVER_ON_STDERR.format(python=sys.executable, source=str(source)))
    program.chmod(0o755)
    env["PATH"] = f"{program.parent}{os.pathsep}{env.get('PATH', '')}"
    model = write_model(tmp_path, "gemma3")
    docs = []
    for _ in range(2):
        ran = finished(env, "run", "--json", "--", "llama-server", "-m", str(model), *FLAGS)
        assert ran.returncode == 0, ran.stderr
        docs.append(json.loads(ran.stdout[len("served\n") :])["llama_cpp"])
    assert docs[0]["architecture"] == "gemma3" and docs[0]["flash_attn"] is True

    done = finished(env, "calibrate", "--engine", "llama.cpp", "--json")
    assert done.returncode == 0, done.stderr
    (fit,) = json.loads(done.stdout)["fits"]
    theirs = parse_llama_log(source.read_text(errors="replace")).by_device()["CPU"]["compute"]
    ours = next(t["vramscope_bytes"] for t in docs[0]["terms"] if t["kind"] == "compute")
    assert (fit["architecture"], fit["flash_attn"]) == ("gemma3", True)
    assert fit["runs"] == ["history:1", "history:2"]
    assert fit["factor"] == round(theirs / ours, 6)
    assert fit["as_is_errors"] == [round(ours / theirs - 1, 6)] * 2
    assert abs(fit["as_is_errors"][0]) <= 0.10  # vramscope's fitted term, as the issue bounds it
    assert fit["held_out_errors"] == [0.0, 0.0] and fit["held_out_covered"] == 2
    assert json.loads(done.stdout)["saved_to"] is None

    text = finished(env, "calibrate", "--engine", "llama.cpp")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].startswith(
        f"llama.cpp compute, gemma3, flash attention on: 2 run(s); llama.cpp's compute "
        f"buffer / vramscope's fitted = {theirs / ours:.4f}"
    )
    assert text.stdout.splitlines()[-1].startswith("Reported, not saved:")
    assert not (tmp_path / "state" / "vramscope" / "calibration.json").exists()
