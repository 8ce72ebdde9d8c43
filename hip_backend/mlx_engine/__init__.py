"""The `mlx` engine: mlx-lm loads the model in the measuring child and MLX counts its
peak (`child` runs the job, `loader` loads, `workload` is mlxcel's bench on it). mlx
and mlx-lm are imported inside functions; nothing here imports the torch engine.

Its API: `measure`, the run inside `python -m hip_backend.child` (hip_backend/engines.py
imports it there); and what a rank of a split load reuses (hip_backend/ranks/rank.py):
the import, the synthetic load and the workload.
"""

from __future__ import annotations

from hip_backend.mlx_engine.child import measure, peak_kind
from hip_backend.mlx_engine.loader import (
    MlxDevice,
    MlxVersions,
    build_synthetic,
    import_mlx,
    select_device,
)
from hip_backend.mlx_engine.workload import (
    PassFigures,
    WorkloadFigures,
    reset_peak,
    run_pass,
    run_workload,
    weights_bytes,
)

__all__ = [
    "MlxDevice",
    "MlxVersions",
    "PassFigures",
    "WorkloadFigures",
    "build_synthetic",
    "import_mlx",
    "measure",
    "peak_kind",
    "reset_peak",
    "run_pass",
    "run_workload",
    "select_device",
    "weights_bytes",
]
