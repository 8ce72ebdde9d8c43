"""The measuring engines and their choices: vramscope's torch decoder (`hip_backend`,
emulating MLX-ROCm's in-flight queue) and real MLX through mlx-lm (the ground truth)."""

from __future__ import annotations

ENGINE_CHOICES = ("torch", "mlx")
DEFAULT_ENGINE = "torch"
ENGINE_LABELS = {"torch": "torch engine", "mlx": "MLX (mlx-lm)"}
EMULATE_CHOICES = ("auto", "rocm", "none")
"""The torch engine's in-flight queue: MLX-ROCm's (`rocm`), none, or `auto` (ROCm's on
ROCm and the CPU, none on CUDA, where MLX has no bound)."""
ATTENTION_CHOICES = ("auto", "mlx-fallback", "torch-sdpa")
"""The torch engine's attention: MLX's unfused fallback (scores materialised, what MLX
runs on the CPU and on ROCm), torch's fused SDPA (like MLX's CUDA kernels), or `auto`
(the one MLX runs on the measured backend)."""
ATTENTION_LABELS = {"mlx-fallback": "MLX's unfused attention", "torch-sdpa": "torch's SDPA"}
"""How a result names the attention a torch run ran (`extra["attention"]`)."""
FUSE_BF16_CHOICES = ("auto", "on", "off")
"""The torch engine's model of MLX-ROCm's fused BF16-scale quantized kernel (no
dequantized copy): `auto` on a ROCm device with the queue emulated."""
