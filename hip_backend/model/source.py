"""From a resolved model (folder or built-in profile) to its architecture and tensors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import FileFault
from core.model.config import ModelConfig, load_config
from hip_backend.errors import BadModelError
from hip_backend.model.arch import ArchSpec, arch_from_config
from hip_backend.model.layout import TensorShape, tensors_from_config
from hip_backend.model.manifest import WeightPlan, plan_from_folder, synthetic_plan, without_data

if TYPE_CHECKING:
    from core.catalog.profiles import Profile


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


@dataclass(frozen=True)
class SourcePlan:
    """A model's config and where its weights come from, whatever engine runs it.

    `plan` lists the tensors with their bytes on disk, or (synthetic) only their
    names, dtypes and shapes from headers or a profile's manifest. None means
    there is no tensor list at all (a config-only profile or folder): each engine
    derives the shapes mlx-lm would write from the config.
    """

    config: ModelConfig
    plan: WeightPlan | None
    reason: str = ""
    """Why the weights are synthetic when `plan` is None."""

    @property
    def synthetic(self) -> bool:
        """True when no weight data will be read from disk."""
        return self.plan is None or self.plan.synthetic


def load_source_config(source: ModelSource) -> ModelConfig:
    """The profile's or the folder's config (raises BadModelError)."""
    if source.profile_id is not None:
        return _profile(source.profile_id).config
    assert source.folder is not None
    try:
        return load_config(source.folder)
    except FileFault as exc:
        raise BadModelError(str(exc)) from None


def _profile(profile_id: str) -> Profile:
    from core.catalog.profiles import load_profile

    try:
        return load_profile(profile_id)
    except KeyError:
        raise BadModelError(f"no built-in profile named '{profile_id}'") from None


def plan_weights(
    source: ModelSource, config: ModelConfig, force_synthetic: bool = False
) -> SourcePlan:
    """Where the weights come from: a folder's files, its headers only, a profile's
    manifest, or nothing but the config (raises BadModelError for broken files)."""
    if source.profile_id is not None:
        profile = _profile(source.profile_id)
        if profile.tensors is not None:
            listed = (TensorShape(n, d, tuple(s)) for n, d, s in profile.tensors)
            return SourcePlan(
                config, synthetic_plan(listed, "built-in profile (no weights on disk)")
            )
        return SourcePlan(config, None, "built-in profile (config only)")
    assert source.folder is not None
    try:
        folder_plan = plan_from_folder(source.folder)
    except OSError as exc:
        raise BadModelError(f"{source.folder}: {exc}") from None
    if folder_plan is None:
        return SourcePlan(config, None, "no weight files (shapes from config.json)")
    if force_synthetic and not folder_plan.synthetic:
        return SourcePlan(config, without_data(folder_plan, "synthetic weights requested"))
    return SourcePlan(config, folder_plan)


def resolve_source(source: ModelSource, force_synthetic: bool = False) -> ResolvedModel:
    """Read the config, check the family and plan the weights (raises MeasureError)."""
    config = load_source_config(source)
    arch = arch_from_config(config)  # an unsupported family fails before any file is read
    planned = plan_weights(source, config, force_synthetic)
    plan = planned.plan
    if plan is None:
        plan = synthetic_plan(tensors_from_config(arch), planned.reason)
    return ResolvedModel(config, arch, plan)
