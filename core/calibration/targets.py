"""What a calibration can fit: the recorded figures `vramscope calibrate --target` picks.

Its own module, with no imports, so that the command line can offer the choices
without importing the fit.
"""

from __future__ import annotations

DEFAULT_TARGET = "mlx_peak"
"""The figure fitted by default: MLX's peak (`mx.get_peak_memory()`), as in mlxcel's rows."""
TARGET_LABELS = {
    "mlx_peak": "MLX's peak (mx.get_peak_memory)",
    "active_plus_cache": "MLX's active + cache peak (freed-buffer cache included)",
    "os_peak": "the process's OS peak (VmHWM on the CPU, its device memory on ROCm)",
    "peak": "the recorded peak",
}
"""What a calibration can fit (`calibrate --target`); `peak` is only read, from old files."""
TARGETS = ("mlx_peak", "active_plus_cache", "os_peak")
"""The figures `calibrate --target` picks from, each recorded by `measure` (mlx engine)."""
