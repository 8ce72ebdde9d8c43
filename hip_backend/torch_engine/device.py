"""Picking the device and describing it: ROCm (torch's HIP build), CUDA, or the CPU.

A ROCm build of torch exposes HIP devices through the `torch.cuda` API, with
`torch.version.hip` set; that is how the two GPU kinds are told apart.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.backend import Backend
from core.measurement.engine import Engine
from hip_backend.engines import install_hint, module_found
from hip_backend.errors import (
    NoDeviceError,
    NoTorchError,
    UnsupportedDeviceError,
    import_failure,
)
from hip_backend.host import cpu_name
from hip_backend.torch_engine import int4_cpu
from hip_backend.torch_engine.inflight import Event, LaggingEvent
from hip_backend.torch_engine.quant import quantized_matmul

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class DeviceInfo:
    """The device a run used, for the result."""

    kind: Backend
    """ROCm, CUDA or the CPU."""
    name: str
    arch: str | None
    torch_version: str
    runtime_version: str | None
    total_bytes: int | None = None
    bus_id: str | None = None
    """PCI address (`0000:03:00.0`) from torch's device properties, when it has them."""
    index: int = 0
    """torch's device index (after the visible-device lists)."""

    @property
    def is_gpu(self) -> bool:
        """True for ROCm and CUDA."""
        return self.kind is not Backend.CPU


def import_torch() -> Any:
    """torch; NoTorchError naming the interpreter that lacks it, or EngineLoadError when
    it is installed but its import raises (the two are told apart by finding it first)."""
    if not module_found("torch"):
        raise NoTorchError(
            f"torch cannot be imported by {sys.executable} (not installed); "
            f"install it with: {install_hint(Engine.TORCH)}"
        )
    try:
        import torch
    except Exception as exc:  # OSError, ImportError, RuntimeError: whatever its load raises
        hint = f"install it with: {install_hint(Engine.TORCH)}"
        raise import_failure("torch", exc, NoTorchError, hint) from None
    return torch


def select_device(choice: str) -> tuple[torch.device, DeviceInfo]:
    """The torch device for `auto`, `rocm`, `cuda` or `cpu` (NoDeviceError if absent)."""
    torch = import_torch()
    hip = getattr(torch.version, "hip", None)
    cuda = getattr(torch.version, "cuda", None)
    build = f"torch {torch.__version__}"
    gpu_ok = bool(torch.cuda.is_available()) if (hip or cuda) else False
    asked = (
        None if choice == "auto" else Backend.named(choice, "--device")
    )  # None: whatever torch has
    if asked is Backend.CPU or (asked is None and not gpu_ok):
        return torch.device("cpu"), DeviceInfo(
            Backend.CPU, cpu_name(), None, torch.__version__, None
        )
    if asked is Backend.ROCM and not hip:
        raise NoDeviceError(f"ROCm was asked for, but {build} is not a ROCm (HIP) build")
    if asked is Backend.CUDA and not cuda:
        what = "a ROCm build (use --device rocm)" if hip else "not a CUDA build"
        raise NoDeviceError(f"CUDA was asked for, but {build} is {what}")
    kind = Backend.ROCM if hip else Backend.CUDA
    if not gpu_ok:
        raise NoDeviceError(f"{build} sees no {kind.value.upper()} device")
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    if hip:
        arch = str(getattr(props, "gcnArchName", "") or "").split(":")[0] or None
    else:
        arch = f"sm_{props.major}{props.minor}"
    info = DeviceInfo(
        kind=kind,
        name=str(props.name),
        arch=arch,
        torch_version=torch.__version__,
        runtime_version=str(hip or cuda),
        total_bytes=int(props.total_memory),
        bus_id=props_bus_id(props),
        index=int(index),
    )
    return torch.device("cuda", index), info


def props_bus_id(props: Any) -> str | None:
    """`0000:03:00.0` from a device's properties (`pci_domain_id`, `pci_bus_id`,
    `pci_device_id`), or None where this torch build does not expose them."""
    try:
        domain = int(getattr(props, "pci_domain_id", 0))
        bus = int(props.pci_bus_id)
        dev = int(props.pci_device_id)
    except (AttributeError, TypeError, ValueError):
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.0"


NO_KERNEL_MESSAGES = (
    "no kernel image is available for execution on the device",
    "invalid device function",
    "hiperrornobinaryforgpu",
    "no binary for gpu",
)
"""What CUDA and HIP say when a wheel has no code for the GPU's architecture."""


def unsupported_device(exc: BaseException, info: DeviceInfo) -> UnsupportedDeviceError | None:
    """The typed failure for a torch build without kernels for this GPU, else None."""
    text = str(exc)
    lowered = text.lower()
    if not any(message in lowered for message in NO_KERNEL_MESSAGES):
        return None
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    arch = info.arch or "this GPU"
    runtime = (
        f"HIP {info.runtime_version}"
        if info.kind is Backend.ROCM
        else f"CUDA {info.runtime_version}"
    )
    return UnsupportedDeviceError(
        f"torch {info.torch_version} ({runtime}) has no kernels for {arch} ({info.name}): "
        f"{first}; install a torch build made for {arch}"
    )


ALLOC_CONF_VARIABLES = ("PYTORCH_HIP_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def allocator_settings(env: dict[str, str]) -> dict[str, str]:
    """The caching allocator's settings from the environment (unset ones left out):
    `expandable_segments`, `garbage_collection_threshold` etc. change reserved memory."""
    return {name: env[name] for name in ALLOC_CONF_VARIABLES if name in env}


SDPA_BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def sdpa_backend(
    query: torch.Tensor, key: torch.Tensor, *, causal: bool, mask: torch.Tensor | None
) -> str:
    """The kernel torch picks for this attention call (`torch._fused_sdp_choice`).

    `math` materialises the whole [heads x L x S] score matrix per call, which MLX's
    fused attention never does; the result says which one ran.
    """
    import torch

    try:
        choice = torch._fused_sdp_choice(
            query,
            key,
            key,
            attn_mask=mask,
            is_causal=causal,
            scale=query.shape[-1] ** -0.5,
            enable_gqa=query.shape[1] != key.shape[1],
        )
    except (RuntimeError, TypeError, AttributeError):
        return "unknown"
    return SDPA_BACKENDS.get(int(choice), f"backend {int(choice)}")


def math_sdpa_scratch_bytes(heads: int, length: int, keys: int, itemsize: int) -> int:
    """Bytes of the score matrix (and its softmax) the math SDPA path allocates per call."""
    return 2 * heads * length * keys * itemsize


def event_factory(device: torch.device) -> Callable[[], Event]:
    """Completion events for the in-flight queue: stream events on a GPU, lagging on the CPU."""
    if device.type != "cuda":
        return LaggingEvent
    import torch

    def record() -> Event:
        event: Event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record()  # type: ignore[attr-defined]
        return event

    return record


def synchronize(device: torch.device) -> None:
    """Wait for all queued device work (a no-op on the CPU)."""
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def warm_up_shapes(
    device: torch.device,
    *,
    hidden: int,
    widest: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    chunk: int,
    dtype: torch.dtype,
) -> None:
    """Run a GEMM and the attention calls once at the model's real sizes before the
    baseline, so library workspaces (hipBLASLt / cuBLAS, flash attention) that are
    sized by the shapes are allocated before it, as MLX's warm-up leaves them."""
    import torch
    import torch.nn.functional as F

    x = torch.zeros(1, chunk, hidden, device=device, dtype=dtype)
    w = torch.zeros(widest, hidden, device=device, dtype=dtype)
    F.linear(x, w)
    F.linear(x[:, -1:], w)
    del x, w
    q = torch.zeros(1, heads, chunk, head_dim, device=device, dtype=dtype)
    k = torch.zeros(1, kv_heads, 2 * chunk, head_dim, device=device, dtype=dtype)
    gqa = heads != kv_heads
    F.scaled_dot_product_attention(
        q, k[:, :, :chunk], k[:, :, :chunk], is_causal=True, enable_gqa=gqa
    )
    mask = torch.ones(chunk, 2 * chunk, dtype=torch.bool, device=device).tril(chunk)
    F.scaled_dot_product_attention(q, k, k, attn_mask=mask, enable_gqa=gqa)
    F.scaled_dot_product_attention(q[:, :, -1:], k, k, enable_gqa=gqa)
    del q, k, mask
    synchronize(device)


def warm_up_kernels(device: torch.device) -> None:
    """Run every kind of op the engine uses once on tiny tensors, in both 16-bit dtypes.

    First use of an op sets up thread pools, kernel caches and scratch buffers that
    stay for the life of the process (about 16 MB on the CPU); doing it before the
    baseline keeps that one-time cost out of the measured peak, as MLX's warm-up does.
    """
    import torch
    import torch.nn.functional as F

    for dtype in (torch.float16, torch.bfloat16):
        x = torch.randn(2, 8, 64, device=device).to(dtype)
        w = torch.randn(64, 64, device=device).to(dtype)
        y = F.linear(x, w, torch.zeros(64, device=device, dtype=dtype))
        y = F.silu(y) * F.linear(x[:, -1:], w)
        xf = y.float()
        (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)).to(dtype)
        q = torch.randn(1, 4, 8, 16, device=device).to(dtype)
        k = torch.randn(1, 2, 8, 16, device=device).to(dtype)
        mask = torch.ones(8, 8, dtype=torch.bool, device=device).tril()
        for kwargs in ({"is_causal": True}, {"attn_mask": mask}, {}):
            F.scaled_dot_product_attention(q, k, k, enable_gqa=True, **kwargs)
        F.scaled_dot_product_attention(q[:, :, :1], k, k, enable_gqa=True)
        probs = torch.softmax(xf, dim=-1).to(dtype)
        _scores, experts = probs.reshape(-1, 64).topk(2, dim=-1)
        order = torch.argsort(experts.reshape(-1), stable=True)
        torch.bincount(experts.reshape(-1), minlength=64).tolist()
        total = torch.zeros(16, 64, dtype=torch.float32, device=device)
        total.index_add_(0, order[:4] // 2, y.reshape(-1, 64)[:4].float())
        packed = torch.randint(0, 255, (64, 32), dtype=torch.uint8, device=device)
        out = torch.empty(64, 64, dtype=dtype, device=device)
        out.view(64, 32, 2)[..., 0] = packed & 15
        out.view(64, 32, 2)[..., 1] = packed >> 4
        out.view(64, 2, 32).mul_(w[:, :2, None]).add_(w[:, :2, None])
        torch.cat((k, torch.zeros_like(k)), dim=2)
        # The unsorted gather of a MoE decode step (`decoder._gather`) and the embedding
        # lookup of 4-bit rows: their first use pages in about 1 MB of torch's code.
        for index in torch.unique(experts.reshape(-1)).tolist():
            where = (experts.reshape(-1) == index).nonzero().squeeze(-1)
            out[where] = y.reshape(-1, 64)[where // 2]
        torch.where(order[:4, None] > 2, packed[order[:4]] >> 4, packed[order[:4]] & 15)
        # The fused quantized kernel, which also creates its CPU scratch buffers.
        words = torch.randint(0, 2**31 - 1, (64, 8), dtype=torch.int32, device=device)
        quantized_matmul(x[0], words, w[:, :1], w[:, :1], 4, 64)
        if device.type == "cpu" and int4_cpu.layout_supported():
            int4 = int4_cpu.from_mlx(words.clone(), w[:, :1], w[:, :1], 64)
            int4.matmul(x[0])
            int4.dequantize()
        positions = torch.arange(8, device=device, dtype=torch.float32)
        positions[:, None].cos() * positions[None, :].sin()
        int(y.argmax().item())
    synchronize(device)
