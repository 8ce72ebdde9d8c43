"""The model picker: a filter box over the catalog, format and weight size on every row.

The catalog arrives from a worker; until then the list says it is reading.
Rows are grouped by where the model lives (folders, HF cache, copies read from the
Hub, built-in profiles). Typing filters by every word (`llama 4-bit` keeps rows that
contain both); Enter or a click picks a model; Down moves from the box into the list.
A typed repo id (`org/name`) that names no listed model is offered as *read org/name
from the Hub*: Enter posts `HubRequested`, the row says *reading…* until the screen
reports the answer (`hub_done`), and a failure stays under it as its one-line reason.
Rows are cut to the list's width, never wrapped, so columns stay aligned.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from core.catalog.entry import (
    ORIGIN_BUILTIN,
    ORIGIN_FOLDER,
    ORIGIN_GGUF,
    ORIGIN_HF_CACHE,
    ORIGIN_HUB,
    Catalog,
    CatalogEntry,
)
from core.display_text import clean_text
from core.units import format_bytes_short
from tui.model.names import model_arg
from tui.model.scales import short_tokens
from tui.widgets.repaint import KeptLines
from tui.widgets.slider_field import BoxInput

NO_MODELS = (
    "No models found. Add a folder of models with --models-dir DIR (or "
    "VRAMSCOPE_MODELS_DIR), or download one into the Hugging Face cache "
    "(hf download ORG/NAME); a model folder needs config.json and *.safetensors."
)
"""What the list says when the catalog is empty: how to add models, not "no match"."""

GROUPS = (
    (ORIGIN_FOLDER, "Model folders"),
    (ORIGIN_GGUF, "GGUF files (llama.cpp)"),
    (ORIGIN_HF_CACHE, "Hugging Face cache"),
    (ORIGIN_HUB, "Read from the Hub (headers only)"),
    (ORIGIN_BUILTIN, "Built-in profiles (no weights)"),
)


def entry_prompt(entry: CatalogEntry, current: bool, width: int = 40) -> Text:
    """Two lines cut to `width`: the name (org dimmed), then format, weights and context."""
    width = max(width, 20)
    first = Text(no_wrap=True, overflow="ellipsis")
    first.append("● " if current else "  ", "bold")
    org, sep, repo = clean_text(entry.name).rpartition("/")
    room = width - 2 - len(repo)
    if sep and room >= len(org) + 1:
        first.append(org + "/", "dim")
    elif sep:  # the org stays named, cut (at least 3 letters); the repo's end may go
        keep = max(3, room - 2)
        first.append(org[:keep] + "…/", "dim")
    first.append(repo, "bold" if current else "")
    first.truncate(width, overflow="ellipsis")
    ctx = entry.max_position_embeddings
    if ctx:
        ctx_label = f"{short_tokens(ctx)} ctx"
    else:  # a GGUF's header is read whole when picked; a folder's config said nothing
        ctx_label = "ctx on open" if entry.origin == ORIGIN_GGUF else "ctx ?"
    size = format_bytes_short(entry.weight_bytes)
    detail = f"  {clean_text(entry.format_label):<15.15} {size:>10}  {ctx_label}"
    if entry.origin == ORIGIN_HUB:
        detail += "  hub"  # from the store: no weights on disk, read without the network
    second = Text(detail, "dim", no_wrap=True, overflow="ellipsis")
    second.truncate(width, overflow="ellipsis")
    return Text("\n").join([first, second])


def heading(label: str, width: int) -> Text:
    """A group heading row."""
    text = Text(f"{label} ", "bold", no_wrap=True)
    text.append("─" * max(0, width - text.cell_len), "dim")
    text.truncate(width)
    return text


HUB_OPTION = "hub:"
"""The id prefix of the row that offers a Hub read of the typed repo id."""


def hub_offer(query: str, entries: Sequence[CatalogEntry]) -> str | None:
    """The repo id to offer reading from the Hub: the filter when it is shaped like
    `org/name` and no listed model has that name; else None."""
    repo = query.strip()
    if "/" not in repo:
        return None
    from core.hub.store import is_repo_id  # only once a repo id is being typed

    if not is_repo_id(repo) or any(e.name.casefold() == repo.casefold() for e in entries):
        return None
    return repo


def matches(entry: CatalogEntry, query: str) -> bool:
    """True when every word of the query occurs in the row's name, format or origin."""
    haystack = f"{entry.name} {entry.format_label} {entry.origin_label}".casefold()
    return all(word in haystack for word in query.casefold().split())


class KeptOptionList(OptionList, KeptLines):
    """The rows (Textual's `OptionList`, and styled as one), their lines kept between
    frames: a highlight, a hover, a scroll or new rows each refresh it."""


class ModelList(Vertical, KeptLines):
    """Filter box + grouped list of catalog entries; posts `Picked`."""

    class Picked(Message):
        """The user picked a model."""

        def __init__(self, entry: CatalogEntry) -> None:
            self.entry = entry
            super().__init__()

    class HubRequested(Message):
        """The user asked to read a repo id from the Hub."""

        def __init__(self, repo_id: str) -> None:
            self.repo_id = repo_id
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.entries: tuple[CatalogEntry, ...] = ()
        self.current = ""
        self.loaded = False
        self.error = ""
        self._width = 0
        self.border_title = "Models"
        self.hub_enabled = False
        """Whether a typed repo id is offered as a Hub read (the app can reach one)."""
        self.hub_reading = ""
        """The repo id being read from the Hub ("" when none is)."""
        self.hub_failure: tuple[str, str] | None = None
        """The last Hub read that failed: its repo id and one-line reason."""

    def compose(self) -> ComposeResult:
        yield BoxInput(placeholder="/ filter models", id="model-filter", compact=True)
        yield KeptOptionList(Option("Reading the catalog…", disabled=True), id="model-options")

    @property
    def options(self) -> OptionList:
        """The list of rows."""
        return self.query_one(OptionList)

    @property
    def filter_box(self) -> Input:
        """The filter box."""
        return self.query_one("#model-filter", Input)

    @property
    def shown(self) -> list[CatalogEntry]:
        """The entries the filter keeps, in list order."""
        query = self.filter_box.value
        return [e for e in self._grouped() if matches(e, query)]

    def _grouped(self) -> list[CatalogEntry]:
        order = {origin: i for i, (origin, _) in enumerate(GROUPS)}
        return sorted(self.entries, key=lambda e: order.get(e.origin, len(order)))

    def set_entries(self, entries: Sequence[CatalogEntry], skipped: int = 0) -> None:
        """Show the catalog (keeps the filter)."""
        self.entries = tuple(entries)
        self.loaded = True
        self.border_subtitle = f"{len(self.entries)} models" + (
            f" · {skipped} skipped" if skipped else ""
        )
        self._refill()

    def show_catalog(
        self,
        catalog: Catalog | str | None,
        current: str,
        gguf: Sequence[CatalogEntry] = (),
    ) -> None:
        """Show a catalog (or why there is none), and the GGUF files found where it looks,
        with the model on screen marked."""
        if isinstance(catalog, str):
            self.set_error(catalog)
        elif catalog is not None:
            # A folder of GGUF files the catalog skipped is listed in the GGUF group.
            folders = {str(e.path.parent) for e in gguf if e.path is not None}
            skipped = [s for s in catalog.skipped if s.location not in folders]
            self.set_entries((*catalog.entries, *gguf), len(skipped))
            self.set_current(current)

    def set_error(self, text: str) -> None:
        """Say why the catalog could not be read."""
        self.loaded = True
        self.error = text
        self.options.set_options([Option(Text(text, "red"), disabled=True)])

    def set_current(self, name: str) -> None:
        """Mark the model on screen."""
        self.current = name
        self._fit_placeholder()
        if self.loaded:
            self._refill()

    def _fit_placeholder(self) -> None:
        """The filter box names the model on screen where its name fits the box (the
        folded list of narrow screens), else says what the box is for."""
        box = self.filter_box
        placeholder = f"/ filter · {self.current}"
        fitted = placeholder if len(placeholder) <= box.size.width else "/ filter models"
        if box.placeholder != fitted:
            box.placeholder = fitted

    def hub_started(self, repo_id: str) -> None:
        """A Hub read of `repo_id` is in flight: its row says so."""
        self.hub_reading, self.hub_failure = repo_id, None
        self._refill()

    def hub_done(self, repo_id: str, failure: str = "") -> None:
        """The Hub read of `repo_id` answered (`failure`: why it could not be read)."""
        if self.hub_reading == repo_id:
            self.hub_reading = ""
        self.hub_failure = (repo_id, clean_text(failure)) if failure else None
        self._refill()

    def _hub_rows(self, query: str) -> list[Option]:
        repo = hub_offer(query, self.entries) if self.hub_enabled else None
        if repo is None:
            return []
        shown = clean_text(repo)
        if repo == self.hub_reading:
            return [Option(Text(f"… reading {shown} from the Hub", "italic"), disabled=True)]
        rows = [Option(Text(f"↓ read {shown} from the Hub (Enter)", "bold"), id=HUB_OPTION + repo)]
        if self.hub_failure is not None and self.hub_failure[0] == repo:
            rows.append(Option(Text(f"✗ {self.hub_failure[1]}", "red"), disabled=True))
        return rows

    def on_resize(self, event: events.Resize) -> None:
        # The box's width changed with the list's (a narrow screen made wide): a name
        # that fitted the folded list's box is cut short in the wide list's.
        if self.current:
            self._fit_placeholder()
        width = self.options.scrollable_content_region.width
        if width and width != self._width and self.loaded:
            self._refill()

    def _refill(self) -> None:
        if self.error:
            return  # the catalog's error stays in view
        width = self.options.scrollable_content_region.width or 40
        self._width = width
        query = self.filter_box.value
        rows: list[Option] = []
        highlight: int | None = None
        for origin, label in GROUPS:
            group = [
                (i, e)
                for i, e in enumerate(self.entries)
                if e.origin == origin and matches(e, query)
            ]
            if not group:
                continue
            rows.append(Option(heading(label, width), disabled=True))
            for i, entry in group:
                current = model_arg(entry) == self.current
                if current:
                    highlight = len(rows)
                rows.append(Option(entry_prompt(entry, current, width), id=str(i)))
        hub_rows = self._hub_rows(query)
        if hub_rows:  # what was typed comes first, and Enter reads it
            rows, highlight = [*hub_rows, *rows], 0
        if not rows:
            words = NO_MODELS if not self.entries else "no model matches"
            rows = [Option(Text(words, "dim"), disabled=True)]
        options = self.options
        options.set_options(rows)
        if highlight is None or rows[highlight].disabled:
            highlight = next((n for n, o in enumerate(rows) if not o.disabled), None)
        if hub_rows and hub_rows[0].disabled:
            highlight = None  # reading what was typed: Enter must not pick another model
        options.highlighted = highlight

    def _pick(self, option: Option | None) -> None:
        if option is None or option.id is None:
            return
        if option.id.startswith(HUB_OPTION):
            self.post_message(self.HubRequested(option.id.removeprefix(HUB_OPTION)))
        else:
            self.post_message(self.Picked(self.entries[int(option.id)]))

    @on(Input.Changed, "#model-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        if self.loaded:
            self._refill()

    @on(Input.Submitted, "#model-filter")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        self._pick(self.options.highlighted_option)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._pick(event.option)

    def on_key(self, event: events.Key) -> None:
        if event.key == "down" and self.filter_box.has_focus:
            event.stop()
            self.options.focus()
