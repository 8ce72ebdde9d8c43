"""The measuring child's protocol: one JSON object per line, and the events the
launcher hands the UI (`encode_event` / `decode_event`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from core.measurement.result import MeasuredPeak, MeasurementFailure, checked_peak

# -- events: the child's JSON lines, and what the launcher hands the UI ---------------


@dataclass(frozen=True)
class MeasureProgress:
    """A step of the run: `phase` is load, warmup, prefill or decode."""

    phase: str
    done: int
    total: int
    detail: str = ""

    @property
    def fraction(self) -> float:
        """done / total in [0, 1] (0 when the total is unknown)."""
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0


@dataclass(frozen=True)
class MeasureNotice:
    """A line worth showing that is not an error (synthetic weights, a budget fallback)."""

    message: str


@dataclass(frozen=True)
class MeasureResult:
    """The run finished: its peak (with the estimate attached by the launcher)."""

    peak: MeasuredPeak


@dataclass(frozen=True)
class MeasureFailed:
    """The run ended without a peak."""

    failure: MeasurementFailure


MeasureEvent = MeasureProgress | MeasureNotice | MeasureResult | MeasureFailed


def event_to_dict(event: MeasureEvent) -> dict[str, Any]:
    """The JSON object of one event line."""
    if isinstance(event, MeasureProgress):
        return {"event": "progress", **asdict(event)}
    if isinstance(event, MeasureNotice):
        return {"event": "notice", "message": event.message}
    if isinstance(event, MeasureResult):
        return {"event": "result", "peak": event.peak.to_dict()}
    return {"event": "failure", **event.failure.to_dict()}


def encode_event(event: MeasureEvent) -> str:
    """One line of the child's protocol (no newline)."""
    return json.dumps(event_to_dict(event), separators=(",", ":"), allow_nan=False)


def decode_event(line: str) -> MeasureEvent | None:
    """Parse one protocol line; None for anything that is not a well-formed event."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nesting past the decoder's depth
        return None
    if not isinstance(data, dict):
        return None
    try:
        name = data.get("event")
        if name == "progress":
            return MeasureProgress(
                str(data["phase"]), int(data["done"]), int(data["total"]), str(data["detail"])
            )
        if name == "notice":
            return MeasureNotice(str(data["message"]))
        if name == "result":
            return MeasureResult(checked_peak(data["peak"]))
        if name == "failure":
            return MeasureFailed(MeasurementFailure.from_dict(data))
    except (KeyError, TypeError, ValueError):
        return None
    return None
