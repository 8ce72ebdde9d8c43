"""The load as an engine really holds it: vramscope's own figure, beside mlxcel's estimate.

mlxcel's estimate (`core.estimate`) is mlxcel's arithmetic over its reading of
`config.json`, reproduced byte for byte, and it stays so. The load is vramscope's own
answer for one engine: the dimensions read from the weights' shapes first, then the
config, then the family's defaults as the engine holds them; the caches built per
layer as the engine builds them; and every figure says where it came from.

Each engine is one module in this package (`mlx_lm` for MLX as mlx-lm and mlxcel run
it, `llama_cpp` for GGUF files under llama.cpp). An engine module reads a model once
into a `LoadPlan` (dimensions resolved, their sources named) whose `at(tokens)` is
pure arithmetic, cheap enough for every key press and for the largest-context search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from core.errors import UsageError
from core.kind import Kind


class LoadEngine(Enum):
    """The engine a load is for."""

    MLX_LM = "mlx-lm"
    """MLX as mlx-lm 0.32.2 and mlxcel run it (safetensors)."""
    LLAMA_CPP = "llama.cpp"
    """llama.cpp on a GGUF file."""

    @property
    def label(self) -> str:
        """The engine's name as printed (`mlx-lm`, `llama.cpp`)."""
        return self.value

    @classmethod
    def named(cls, text: str) -> LoadEngine:
        """The engine a user named (raises UsageError naming the choices)."""
        for member in cls:
            if text.strip().lower() == member.value:
                return member
        choices = ", ".join(m.value for m in cls)
        raise UsageError("--engine", f"unknown load engine {text!r} (choose {choices})")


class Origin(Enum):
    """Where a figure of the load came from, most trusted first."""

    WEIGHTS = "the weights' shapes"
    GGUF = "the GGUF metadata"
    CONFIG = "config.json"
    FAMILY_DEFAULT = "the family's default"
    ENGINE_RULE = "the engine's rule"
    FITTED = "fitted to measured peaks"
    SETTING = "a setting"
    """A flag or variable the user set (the in-flight budget, `--n-gpu-layers`)."""


@dataclass(frozen=True)
class Sourced:
    """One dimension the load used, and where it came from."""

    name: str
    """What it is: `kv_heads`, `head_dim`, `sliding_window`, `trained_context`..."""
    value: int
    origin: Origin
    detail: str = ""
    """How it was read, in words (`k_proj [1024, 2560] / head_dim 256`)."""


class TermKind(Enum):
    """The terms a load is made of; an engine uses those it has."""

    WEIGHTS = "weights"
    KV = "kv"
    """The KV cache and any per-layer state (SSM, linear attention, MLA latents)."""
    TRANSIENT = "transient"
    """The largest step's short-lived buffers (MLX's prefill: logits, scores, routing)."""
    INFLIGHT = "inflight"
    """MLX's ROCm backend in-flight reserve (`MLX_ROCM_MAX_INFLIGHT_MB`)."""
    COMPUTE = "compute"
    """llama.cpp's compute buffer (`graph_reserve` at `n_ubatch`)."""
    OUTPUT = "output"
    """llama.cpp's output buffer (logits)."""
    PROJECTOR = "projector"
    """A multimodal projector (`mmproj-*.gguf`) loaded beside the model."""

    @property
    def is_transient(self) -> bool:
        """Counted in `transient_bytes`: the buffers a step holds, not the model or its cache."""
        return self in (TermKind.TRANSIENT, TermKind.INFLIGHT, TermKind.COMPUTE, TermKind.OUTPUT)


@dataclass(frozen=True)
class LoadTerm:
    """One term of the load, in bytes, with where it came from."""

    kind: TermKind
    bytes: int
    origin: Origin
    detail: str = ""
    """The term in words (`29 of 34 layers sliding-window (1,024 tokens), fp16`)."""


class Placement(Kind):
    """Where a share of the load lives (llama.cpp's partial offload)."""

    DEVICE = "device"
    HOST = "host"


@dataclass(frozen=True)
class DeviceShare:
    """What one place holds: the GPU's share and the host's, under partial offload."""

    placement: Placement
    terms: tuple[LoadTerm, ...]

    @property
    def total_bytes(self) -> int:
        """The share's bytes."""
        return sum(t.bytes for t in self.terms)


@dataclass(frozen=True)
class EngineLoad:
    """The memory one engine holds for one question, term by term."""

    engine: LoadEngine
    tokens: int
    """The context the load is for (prompt and generated tokens together)."""
    terms: tuple[LoadTerm, ...]
    sources: tuple[Sourced, ...] = ()
    notes: tuple[str, ...] = ()
    """One line each: why it differs from mlxcel's estimate, where the weights contradict
    the config, a family the engine module does not know (the standard cache used)."""
    shares: tuple[DeviceShare, ...] = field(default=())
    """Per place, when the load is split between the device and the host; empty when
    the device holds all of it."""

    def bytes_of(self, kind: TermKind) -> int:
        """The bytes of every term of `kind` (0 when the engine has none)."""
        return sum(t.bytes for t in self.terms if t.kind is kind)

    @property
    def weights_bytes(self) -> int:
        """The weights as stored."""
        return self.bytes_of(TermKind.WEIGHTS)

    @property
    def kv_bytes(self) -> int:
        """The KV cache (and state caches) at `tokens`."""
        return self.bytes_of(TermKind.KV)

    @property
    def transient_bytes(self) -> int:
        """The step buffers: transient, in-flight reserve, compute and output buffers."""
        return sum(t.bytes for t in self.terms if t.kind.is_transient)

    @property
    def total_bytes(self) -> int:
        """Every term, wherever it lives."""
        return sum(t.bytes for t in self.terms)

    @property
    def device_bytes(self) -> int:
        """What the device holds: the whole load unless it is split with the host."""
        if not self.shares:
            return self.total_bytes
        return sum(s.total_bytes for s in self.shares if s.placement is Placement.DEVICE)


class LoadPlan(Protocol):
    """One model read by one engine module: `at(tokens)` is arithmetic, no I/O."""

    @property
    def engine(self) -> LoadEngine: ...

    @property
    def sources(self) -> tuple[Sourced, ...]: ...

    def at(self, tokens: int) -> EngineLoad:
        """The load after `tokens` tokens (prompt and generated together)."""
        ...
