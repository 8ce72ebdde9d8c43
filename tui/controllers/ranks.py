"""The explorer's split-load panel: the tensor list, the cached split, the view.

Splitting reads the tensor list once per (model, plan): a profile's manifest,
or a local folder's safetensors headers (a few milliseconds, on the UI thread);
every other change re-sizes the cached split in microseconds.
"""

from __future__ import annotations

from core.catalog.entry import CatalogEntry
from core.errors import VramscopeError
from core.estimate.available import AvailableMemory
from core.model.snapshot import ModelSnapshot
from core.parallel.plan import ParallelPlan, ParallelSplit, Tensor
from tui.model.parallel_view import ParallelView, parallel_view, plan_of, rank_limits, split_for
from tui.model.state import ExplorerState
from tui.widgets.ranks_panel import RanksPanel

DEFAULT_PLAN_LIMIT = 1 << 20
"""Largest context the plan solver tries when the model does not say its trained context."""


def entry_tensors(entry: CatalogEntry | None, snapshot: ModelSnapshot) -> list[Tensor] | None:
    """The tensor list of a catalog entry (None when it has none to give)."""
    if entry is None:
        return None
    # Imported on the first split, not at start-up (they pull in the whole catalog).
    from core.catalog.profiles import load_profile
    from core.parallel.source import folder_tensors

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
    """Shows the state's split in a RanksPanel (hidden for one device)."""

    def __init__(self, panel: RanksPanel) -> None:
        self.panel = panel
        self._key: tuple[str, ParallelPlan] | None = None
        self._split: ParallelSplit | str = ""

    def show(
        self,
        state: ExplorerState,
        entry: CatalogEntry | None,
        snapshot: ModelSnapshot | None,
        available: AvailableMemory | None,
        trained: int | None,
    ) -> ParallelView | str | None:
        """Recompute and repaint the panel for this state; the view shown (or why the
        model cannot be split), None for one device."""
        plan = plan_of(state)
        if plan is None or snapshot is None or available is None:
            self.panel.hide()
            return None
        title = f"{state.devices} devices · {plan.kind.label} (mlx-lm's sharding)"
        key = (snapshot.display, plan)
        if self._key != key:
            self._key = key
            self._split = split_for(snapshot, entry_tensors(entry, snapshot), plan)
        if isinstance(self._split, str):
            self.panel.show_problem(title, self._split)
            return self._split
        try:
            limits = rank_limits(state)
        except VramscopeError as exc:
            self.panel.show_problem(title, str(exc))
            return str(exc)
        limit = trained or DEFAULT_PLAN_LIMIT
        view = parallel_view(snapshot, self._split, state, available, limit, limits)
        self.panel.show_view(title, view)
        return view
