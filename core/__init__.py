"""vramscope core: mlxcel's pre-load memory estimate, reproduced byte for byte.

Pure and import-light: standard library only (huggingface_hub lazily, for cache
scanning). No UI, no torch.
"""

from core.available import AvailableMemory, resolve_available_memory
from core.backend import Backend, BackendChoice, detect_backend, resolve_backend
from core.backend_inflight import (
    ROCM_DEFAULT_MAX_INFLIGHT_MB,
    InflightBudget,
    parse_inflight_mb,
    resolve_inflight_budget,
    rocm_inflight_reserve_bytes,
)
from core.errors import (
    ConfigError,
    FileFault,
    HeaderError,
    ModelError,
    ModelNotFoundError,
    UsageError,
    VramscopeError,
)
from core.estimate import (
    DEFAULT_CTX_LEN,
    EstimateSettings,
    MemoryEstimate,
    QuantHint,
    Workload,
    estimate,
    parse_quant_hint,
)
from core.kv_cache import KvArch, KvKind, KvTerm
from core.memory_size import parse_memory_size, parse_optional_memory_size
from core.model import ModelSnapshot, read_model_dir
from core.report import format_estimate, inspect_report, to_json_pretty
from core.units import U64_MAX, format_bytes
from core.weights import WeightsSource, WeightsTerm

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CTX_LEN",
    "ROCM_DEFAULT_MAX_INFLIGHT_MB",
    "U64_MAX",
    "AvailableMemory",
    "Backend",
    "BackendChoice",
    "ConfigError",
    "EstimateSettings",
    "FileFault",
    "HeaderError",
    "InflightBudget",
    "KvArch",
    "KvKind",
    "KvTerm",
    "MemoryEstimate",
    "ModelError",
    "ModelNotFoundError",
    "ModelSnapshot",
    "QuantHint",
    "UsageError",
    "VramscopeError",
    "WeightsSource",
    "WeightsTerm",
    "Workload",
    "__version__",
    "detect_backend",
    "estimate",
    "format_bytes",
    "format_estimate",
    "inspect_report",
    "parse_inflight_mb",
    "parse_memory_size",
    "parse_optional_memory_size",
    "parse_quant_hint",
    "read_model_dir",
    "resolve_available_memory",
    "resolve_backend",
    "resolve_inflight_budget",
    "rocm_inflight_reserve_bytes",
    "to_json_pretty",
]
