"""From a resolved model (folder or built-in profile) to its architecture and tensors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.config import ModelConfig, load_config
from core.errors import FileFault
from hip_backend.arch import ArchSpec, arch_from_config
from hip_backend.errors import BadModelError
from hip_backend.layout import TensorShape, tensors_from_config
from hip_backend.manifest import WeightPlan, plan_from_folder, synthetic_plan, without_data


@dataclass(frozen=True)
class ModelSource:
    """A model folder or a built-in profile id (exactly one is set)."""

    folder: Path | None = None
    profile_id: str | None = None


@dataclass(frozen=True)
class ResolvedModel:
    """What the engine builds from."""

    config: ModelConfig
    arch: ArchSpec
    plan: WeightPlan


def resolve_source(source: ModelSource, force_synthetic: bool = False) -> ResolvedModel:
    """Read the config, check the family and plan the weights (raises MeasureError)."""
    if source.profile_id is not None:
        from core.profiles import load_profile

        try:
            profile = load_profile(source.profile_id)
        except KeyError:
            raise BadModelError(f"no built-in profile named '{source.profile_id}'") from None
        config = profile.config
        arch = arch_from_config(config)
        if profile.tensors is not None:
            listed = (TensorShape(n, d, tuple(s)) for n, d, s in profile.tensors)
            plan = synthetic_plan(listed, "built-in profile (no weights on disk)")
        else:
            plan = synthetic_plan(tensors_from_config(arch), "built-in profile (config only)")
        return ResolvedModel(config, arch, plan)
    assert source.folder is not None
    try:
        config = load_config(source.folder)
    except FileFault as exc:
        raise BadModelError(str(exc)) from None
    arch = arch_from_config(config)
    try:
        folder_plan = plan_from_folder(source.folder)
    except OSError as exc:
        raise BadModelError(f"{source.folder}: {exc}") from None
    if folder_plan is None:
        plan = synthetic_plan(
            tensors_from_config(arch), "no weight files (shapes from config.json)"
        )
    elif force_synthetic and not folder_plan.synthetic:
        plan = without_data(folder_plan, "synthetic weights requested")
    else:
        plan = folder_plan
    return ResolvedModel(config, arch, plan)
