"""The explorer's split-load panel: the tensor list a split needs, and the view.

Splitting needs the tensor list, read once per model: a profile's manifest, or a
local folder's safetensors headers (a few milliseconds, on the UI thread); the
split itself is cached on the model's facts (`core.answer`), so every other change
re-sizes it in microseconds.
"""

from __future__ import annotations

from core.answer.answer import Answer
from core.catalog.entry import CatalogEntry
from core.errors import VramscopeError
from core.estimate.snapshot import ModelSnapshot
from core.parallel.plan import Tensor
from tui.model.parallel_view import ParallelView, parallel_view
from tui.widgets.ranks_panel import RanksPanel


def entry_tensors(entry: CatalogEntry | None, snapshot: ModelSnapshot) -> list[Tensor] | None:
    """The tensor list of a catalog entry (None when it has none to give)."""
    if entry is None:
        return None
    # Imported on the first split, not at start-up (they pull in the whole catalog).
    from core.catalog.profiles import load_profile
    from core.catalog.split_source import folder_tensors

    try:
        if entry.profile_id is not None:
            tensors = load_profile(entry.profile_id).tensors
            return list(tensors) if tensors is not None else None
        if entry.path is not None:
            return folder_tensors(entry.path, snapshot)
    except VramscopeError:
        return None
    return None


class RanksController:
    """Shows a split's answer in a RanksPanel (hidden for one device)."""

    def __init__(self, panel: RanksPanel) -> None:
        self.panel = panel

    def show(self, plan: Answer | str | None) -> ParallelView | None:
        """Repaint the panel for a split's answer (a string: why the Per device list does
        not read); None for one device. The view shown, if any."""
        if plan is None:
            self.panel.hide()
            return None
        if isinstance(plan, str):
            self.panel.show_problem("devices", plan)
            return None
        split = plan.question.split
        title = f"{split.ranks} devices · {split.kind.label} (mlx-lm's sharding)"
        if plan.split_problem is not None:
            self.panel.show_problem(title, plan.split_problem)
            return None
        view = parallel_view(plan)
        self.panel.show_view(title, view)
        return view
