"""What every rank of a split MLX load reads (the job file), and where it writes.

Kept apart from `rank`, the module `mlx.launch` runs as `__main__`, so that the
parent (hip_backend/ranks/launch.py) can write the job without importing it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from core.measurement.request import (
    DEFAULT_GEN_TOKENS,
    DEFAULT_PROMPT_TOKENS,
    DEFAULT_WARMUP_TOKENS,
)
from core.parallel.sharding import ParallelKind

RANK_FILE = "rank-{rank}.jsonl"
SINGLE_FILE = "single.jsonl"


@dataclass(frozen=True)
class RankJob:
    """What every rank reads from the job file."""

    display: str
    kind: ParallelKind
    ranks: int
    out_dir: str
    folder: str | None = None
    profile_id: str | None = None
    synthetic: bool = False
    """Random weights of the real names, shapes and dtypes (no weights on disk, or asked)."""
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    gen_tokens: int = DEFAULT_GEN_TOKENS
    warmup_tokens: int = DEFAULT_WARMUP_TOKENS
    seed: int = 0

    def to_json(self) -> str:
        """The job file's text."""
        return json.dumps(asdict(self) | {"kind": self.kind.value})

    @classmethod
    def from_json(cls, text: str) -> RankJob:
        """Parse a job file (ValueError on anything malformed)."""
        data: Any = json.loads(text)
        if not isinstance(data, dict) or set(data) - {f.name for f in fields(cls)}:
            raise ValueError("not a rank job")
        job = cls(**(data | {"kind": ParallelKind.named(data.get("kind"), "kind")}))
        if (job.folder is None) == (job.profile_id is None):
            raise ValueError("a rank job needs kind tp|pp and exactly one of folder, profile_id")
        if job.profile_id is not None and not job.synthetic:
            raise ValueError("a built-in profile has no weights: synthetic only")
        return job
