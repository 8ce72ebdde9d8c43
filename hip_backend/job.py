"""What the parent hands the measuring child: the request, and what the parent resolved.

The launcher resolves the model name and the in-flight budget (with the estimate's
parser) before the child starts, so the child never reads the environment for them
and a bad name fails fast without importing an engine. The request itself travels
as asked: the child checks it again the one way any request is checked
(`MeasureRequest.__post_init__`), and reads everything else it needs from it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from core.estimate.inflight import ROCM_DEFAULT_MAX_INFLIGHT_MB
from core.measurement.request import MeasureRequest
from hip_backend.model.bench import PREFILL_CHUNK


@dataclass(frozen=True)
class ChildJob:
    """One run, as the child receives it on stdin (one JSON object)."""

    request: MeasureRequest
    """What to measure, as asked (its `model` is the name the result carries)."""
    folder: str | None = None
    """The model folder the request's name resolved to, or None for a built-in profile."""
    profile_id: str | None = None
    inflight_mib: int = ROCM_DEFAULT_MAX_INFLIGHT_MB
    """The in-flight budget, resolved (the request's own text or the environment's)."""
    seed: int = 0
    prefill_chunk: int = PREFILL_CHUNK

    def to_json(self) -> str:
        """The stdin payload (the engine as its name: `MeasureRequest` takes it back)."""
        data = asdict(self)
        data["request"]["engine"] = self.request.engine.value
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> ChildJob:
        """Parse the stdin payload (ValueError or TypeError on anything malformed)."""
        data: Any = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("the job is not a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown job fields: {', '.join(sorted(unknown))}")
        asked = data.get("request")
        if not isinstance(asked, dict):
            raise ValueError("the job names no request")
        dirs = asked.get("models_dirs", ())
        if not isinstance(dirs, list | tuple):
            raise ValueError("the request's models_dirs is not a list")
        request = MeasureRequest(**{**asked, "models_dirs": tuple(dirs)})
        job = cls(**{**data, "request": request})
        if (job.folder is None) == (job.profile_id is None):
            raise ValueError("a job names exactly one of folder and profile_id")
        return job
