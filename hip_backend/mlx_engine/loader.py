"""Loading a model into mlx-lm for the `mlx` engine: real weights, or random arrays
of the real shapes and dtypes when none are on disk.

Which of the two is decided by `model_source.plan_weights`, the same decision the
torch engine makes. Real weights go through `mlx_lm.utils.load_model` unchanged.
Synthetic weights take the same path: `load_model` reads the config, builds the
class, sanitizes and quantizes exactly as for a real folder, but the weights it is
handed are random arrays of the listed names, dtypes and shapes (a header-only
folder's headers, a profile's manifest). A config without any tensor list gets
what `mlx_lm.convert` would write for it: the model class cast to the config's
dtype and quantized as its `quantization` block says.

mlx and mlx-lm are imported inside the functions; errors are MeasureErrors.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.backend import Backend
from core.measurement.engine import Engine
from hip_backend.engines import install_hint, module_found
from hip_backend.errors import (
    BadModelError,
    NoDeviceError,
    NoMlxError,
    UnsupportedModelError,
    import_failure,
)
from hip_backend.host import cpu_name
from hip_backend.model.manifest import WeightPlan

INSTALL_HINT = f"install it with: {install_hint(Engine.MLX)}"

_MLX_DTYPES = {
    "F16": "float16",
    "BF16": "bfloat16",
    "F32": "float32",
    "F64": "float32",
    "U32": "uint32",
    "I32": "int32",
    "U16": "uint16",
    "I16": "int16",
    "U8": "uint8",
    "I8": "int8",
    "BOOL": "bool_",
}


@dataclass(frozen=True)
class MlxVersions:
    """mlx and mlx-lm as imported by the child."""

    mlx: str
    mlx_lm: str


def import_mlx() -> MlxVersions:
    """Import mlx and mlx-lm; NoMlxError naming the interpreter that lacks them, or
    EngineLoadError when they are installed but their import raises."""
    for name in ("mlx", "mlx_lm"):
        if not module_found(name):
            label = name.replace("_", "-")
            raise NoMlxError(
                f"{label} cannot be imported by {sys.executable} (not installed); {INSTALL_HINT}"
            )
    try:
        import mlx.core as mx
    except Exception as exc:  # whatever loading its native library raises
        raise import_failure("mlx", exc, NoMlxError, INSTALL_HINT) from None
    try:
        mlx_lm = _import_mlx_lm_without_torch()
    except Exception as exc:
        raise import_failure("mlx_lm", exc, NoMlxError, INSTALL_HINT) from None
    return MlxVersions(_version(mx), _version(mlx_lm))


def _import_mlx_lm_without_torch() -> Any:
    """mlx-lm, imported with torch hidden when nothing has imported it yet.

    mlx-lm imports transformers for tokenizers this engine never loads, and
    transformers imports torch whenever it is installed: seconds of the child's start
    for a library the mlx engine never calls. Should some transformers need it after
    all, the import is retried with torch visible.
    """
    hide = "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # type: ignore[assignment]  # "import torch" fails
    try:
        import mlx_lm.generate
        import mlx_lm.utils  # what the engine uses, imported while hidden
    except ImportError:
        if not hide:
            raise
        _unhide_torch()
        import mlx_lm.generate
        import mlx_lm.utils
    finally:
        if hide:
            _unhide_torch()
    return mlx_lm


def _unhide_torch() -> None:
    if "torch" in sys.modules and sys.modules["torch"] is None:
        del sys.modules["torch"]


def _version(module: Any) -> str:
    return str(getattr(module, "__version__", "unknown"))


@dataclass(frozen=True)
class MlxDevice:
    """The device an mlx run used."""

    kind: Backend
    """The CPU, Metal, CUDA or ROCm (an MLX ROCm build: a gfx architecture)."""
    name: str
    arch: str | None
    total_bytes: int | None


def gpu_kind(mx: Any, info: dict[str, Any]) -> Backend:
    """The kind of MLX's GPU (NoDeviceError for one no backend of the estimate names)."""
    if mx.metal.is_available():
        return Backend.METAL
    cuda = getattr(mx, "cuda", None)
    if cuda is not None and cuda.is_available():
        return Backend.CUDA
    if str(info.get("architecture", "")).startswith("gfx"):
        return Backend.ROCM
    # A GPU none of the estimate's backends names: no formula to hold its peak against.
    arch = info.get("architecture") or info.get("device_name") or "unknown"
    raise NoDeviceError(f"MLX's GPU here ({arch}) is not one vramscope has a formula for")


def select_device(choice: str) -> MlxDevice:
    """Make `auto`, `cpu`, `cuda` or `rocm` MLX's default device (NoDeviceError if absent)."""
    import mlx.core as mx

    gpu_ok = mx.is_available(mx.gpu)
    asked = (
        None if choice == "auto" else Backend.named(choice, "--device")
    )  # None: whatever MLX has
    if asked is Backend.CPU or (asked is None and not gpu_ok):
        mx.set_default_device(mx.cpu)
        return MlxDevice(Backend.CPU, cpu_name(), None, None)
    if not gpu_ok:
        wheel = "mlx-cuda-12 or mlx-cuda-13" if asked is Backend.CUDA else "an MLX ROCm build"
        raise NoDeviceError(
            f"{choice.upper()} was asked for, but mlx {_version(mx)} has no GPU backend "
            f"here (install {wheel})"
        )
    mx.set_default_device(mx.gpu)
    info = dict(mx.device_info(mx.gpu))
    kind = gpu_kind(mx, info)
    if asked is not None and kind is not asked:
        raise NoDeviceError(f"{choice.upper()} was asked for, but MLX's GPU here is {kind.value}")
    total = info.get("memory_size", info.get("total_memory"))
    arch = info.get("architecture")
    return MlxDevice(
        kind,
        str(info.get("device_name") or kind.value),
        str(arch) if arch else None,
        int(total) if isinstance(total, int) else None,
    )


def model_classes(config: dict[str, Any]) -> tuple[Any, Any]:
    """mlx-lm's model and args classes for the config, or UnsupportedModelError with
    mlx-lm's reason (custom model code is never run)."""
    from mlx_lm.utils import _get_classes

    if config.get("model_file") is not None:
        raise UnsupportedModelError(
            "this model ships its own model code (model_file); the mlx engine never runs it"
        )
    try:
        classes: tuple[Any, Any] = _get_classes(config=config)
    except (ValueError, KeyError) as exc:
        family = config.get("model_type")
        raise UnsupportedModelError(
            f"mlx-lm {_mlx_lm_version()} cannot load model_type {family!r}: {exc}"
        ) from None
    return classes


def _mlx_lm_version() -> str:
    import mlx_lm

    return _version(mlx_lm)


def load_real(folder: Path, config: dict[str, Any]) -> Any:
    """`mlx_lm.utils.load_model` on the folder (weights evaluated, no tokenizer)."""
    from mlx_lm.utils import load_model

    model_classes(config)
    try:
        model, _ = load_model(folder, lazy=False, strict=True)
    except (ValueError, KeyError, TypeError, FileNotFoundError) as exc:
        raise BadModelError(f"mlx-lm cannot load {folder}: {_one_line(exc)}") from None
    return model


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _random_array(dtype: Any, shape: tuple[int, ...], key: Any) -> Any:
    """Random values of an mlx dtype: words for integers, small floats otherwise."""
    import mlx.core as mx

    if dtype == mx.bool_:
        return mx.random.bernoulli(0.5, shape, key=key)
    if mx.issubdtype(dtype, mx.integer):
        high = 1 << min(31, 8 * dtype.size - (1 if mx.issubdtype(dtype, mx.signedinteger) else 0))
        return mx.random.randint(0, high, shape, key=key).astype(dtype)
    return mx.random.uniform(-0.05, 0.05, shape, dtype=dtype, key=key)


def _random_weights(tensors: list[tuple[str, Any, tuple[int, ...]]], seed: int) -> dict[str, Any]:
    """`{name: random array}` for (name, mlx dtype, shape) rows."""
    import mlx.core as mx

    keys = mx.random.split(mx.random.key(seed), max(2, len(tensors)))
    return {
        name: _random_array(dtype, shape, keys[i]) for i, (name, dtype, shape) in enumerate(tensors)
    }


def _mlx_dtype(safetensors_dtype: str) -> Any:
    import mlx.core as mx

    return getattr(mx, _MLX_DTYPES.get(safetensors_dtype, "float16"))


def build_synthetic(config: dict[str, Any], plan: WeightPlan | None, seed: int = 0) -> Any:
    """The model built by mlx-lm over random weights, not yet evaluated (a rank shards it
    before anything is materialised): the listed tensors when there is a tensor list,
    else what `mlx_lm.convert` would write for the config."""
    if plan is None:
        return _converted_from_config(config, seed)
    listed = [(t.name, _mlx_dtype(t.dtype), t.shape) for t in plan.tensors.values()]
    return _loaded_with(config, model_classes(config)[0], _random_weights(listed, seed))


def load_synthetic(config: dict[str, Any], plan: WeightPlan | None, seed: int = 0) -> Any:
    """`build_synthetic`, evaluated (see the module docstring)."""
    import mlx.core as mx

    model = build_synthetic(config, plan, seed)
    mx.eval(model.parameters())
    return model


def _loaded_with(config: dict[str, Any], model_class: Any, weights: dict[str, Any]) -> Any:
    """`load_model` over a folder holding only the config, handed `weights` through the
    class's `sanitize` (which load_model calls before it quantizes and loads)."""
    from mlx_lm.utils import load_model

    base_sanitize = getattr(model_class, "sanitize", None)
    sanitized: dict[str, Any] = {}

    class WithRandomWeights(model_class):  # type: ignore[misc]
        def sanitize(self, _no_files: dict[str, Any]) -> dict[str, Any]:
            out = base_sanitize(self, dict(weights)) if base_sanitize else dict(weights)
            sanitized.update(out)
            return out

    def classes(config: dict[str, Any]) -> tuple[Any, Any]:
        return WithRandomWeights, model_classes(config)[1]

    with tempfile.TemporaryDirectory(prefix="vramscope-mlx-") as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(config))
        try:
            model, _ = load_model(Path(tmp), lazy=True, strict=False, get_model_classes=classes)
            # strict=False only because there is no weight file: check names and shapes
            # now (the same arrays again, nothing is copied).
            model.load_weights(list(sanitized.items()), strict=True)
        except (ValueError, KeyError, TypeError) as exc:
            raise BadModelError(f"mlx-lm cannot build the model: {_one_line(exc)}") from None
    return model


def _converted_from_config(config: dict[str, Any], seed: int) -> Any:
    """What `mlx_lm.convert` writes for the config: cast, then quantized per its block."""
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten, tree_map_with_path

    model_class, args_class = model_classes(config)
    try:
        model = model_class(args_class.from_dict(config))
    except (ValueError, KeyError, TypeError) as exc:
        raise BadModelError(f"mlx-lm cannot build the model: {_one_line(exc)}") from None
    dtype = _config_dtype(config)
    model.update(
        tree_map_with_path(
            lambda _p, v: v.astype(dtype) if mx.issubdtype(v.dtype, mx.floating) else v,
            model.parameters(),
        )
    )
    quant = config.get("quantization")
    if isinstance(quant, dict):
        group_size = int(quant.get("group_size", 64))

        def predicate(path: str, module: Any) -> Any:
            if path in quant:
                return quant[path]
            weight = getattr(module, "weight", None)
            return (
                hasattr(module, "to_quantized")
                and weight is not None
                and weight.shape[-1] % group_size == 0
            )

        nn.quantize(
            model,
            group_size=group_size,
            bits=int(quant.get("bits", 4)),
            mode=str(quant.get("mode", "affine")),
            class_predicate=predicate,
        )
    listed = [(n, v.dtype, tuple(v.shape)) for n, v in tree_flatten(model.parameters())]
    randoms = _random_weights(listed, seed)
    model.load_weights(list(randoms.items()), strict=True)
    model.eval()
    return model


def _config_dtype(config: dict[str, Any]) -> Any:
    import mlx.core as mx

    text = config.get("text_config")
    sources = [config, text] if isinstance(text, dict) else [config]
    for source in sources:
        for key in ("torch_dtype", "dtype"):
            value = source.get(key)
            if value in ("bfloat16", "float16", "float32"):
                return getattr(mx, value)
    return mx.float16
