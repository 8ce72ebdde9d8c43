"""The user's calibrations: `$XDG_STATE_HOME/vramscope/calibration.json`.

One JSON object, versioned (`schema`), written whole to a temporary file in the same
folder, flushed and renamed over the old one, so a reader sees the old file or the new
one, never half of either. A file that is damaged, too large, not a regular file or of
another schema is ignored with one warning: the built-in calibration still applies.
Such a file is never written over: `save_merged` keeps it aside under a dated name
(`core/kept_aside.py`) and says where. Every calibration written is first read back
through the reader's own checks (`Calibration.checked`), so a fit the reader would
refuse is never saved. A save reads, merges and replaces the file under its lock
(`core.atomic_write.locked`): concurrent `calibrate` runs keep every calibration.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.atomic_write import atomic_write, locked
from core.calibration.key import CalibrationKey
from core.calibration.record import Calibration, CalibrationOrigin
from core.display_text import clean_text
from core.errors import OversizedFileError, describe_os_error
from core.kept_aside import kept_aside_line, set_aside
from core.model.config import decode_json, read_small_file
from core.paths import state_dir

CALIBRATION_FILE = "calibration.json"
SCHEMA_VERSION = 1
KIND = "vramscope-calibrations"
SIZE_CAP = 4 * 2**20
"""A calibration file is a few kB; anything past this is not one."""
MAX_CALIBRATIONS = 256


def default_path() -> Path:
    """Where `vramscope calibrate` saves and `inspect --calibrated` looks."""
    return state_dir() / CALIBRATION_FILE


@dataclass(frozen=True)
class StoreRead:
    """The calibrations that decoded, and at most one warning."""

    calibrations: tuple[Calibration, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)
    problem: str | None = None
    """Why the file was ignored, without the path (None when it was read)."""


def read_store(path: Path, origin: CalibrationOrigin = CalibrationOrigin.USER) -> StoreRead:
    """Every calibration in `path`; a missing file is empty, a damaged one a warning.
    `CalibrationOrigin.FILE` marks each with `path`."""
    try:
        raw = read_small_file(path, SIZE_CAP, "a calibration file is a few kB, so this is not one")
    except FileNotFoundError:
        return StoreRead()
    except OSError as exc:
        return _ignored(path, describe_os_error(exc))
    except OversizedFileError as exc:  # read_small_file refuses models; here: ignored
        return _ignored(path, exc.problem)
    try:
        data: Any = decode_json(raw, CALIBRATION_FILE)
        where = str(path) if origin is CalibrationOrigin.FILE else None
        cals = _decode(data, origin, where)
    except ValueError as exc:
        return _ignored(path, str(exc))
    return StoreRead(cals)


def _ignored(path: Path, why: str) -> StoreRead:
    why = clean_text(why)
    line = clean_text(f"{path}: ignored the calibration file ({why})")
    return StoreRead((), (line,), why)


def _decode(data: Any, origin: CalibrationOrigin, where: str | None) -> tuple[Calibration, ...]:
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ValueError(f"not a {KIND} file")
    if data.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"schema {data.get('schema')!r}, this vramscope reads {SCHEMA_VERSION}")
    items = data.get("calibrations")
    if not isinstance(items, list) or len(items) > MAX_CALIBRATIONS:
        raise ValueError(f"calibrations: expected a list of at most {MAX_CALIBRATIONS}")
    out = []
    for n, item in enumerate(items):
        try:
            out.append(Calibration.from_dict(item, origin, where))
        except ValueError as exc:
            raise ValueError(f"calibrations[{n}].{exc}") from None
    return tuple(out)


def key(cal: Calibration) -> CalibrationKey:
    """What a calibration is for: (engine, backend, device, the kind measured on)."""
    return cal.key


def merged(old: Sequence[Calibration], new: Sequence[Calibration]) -> list[Calibration]:
    """`old` with every calibration of the same key replaced by the one in `new`."""
    keys = {key(c) for c in new}
    return [c for c in old if key(c) not in keys] + list(new)


def encode(cals: Sequence[Calibration], version: str) -> bytes:
    """The file's bytes."""
    doc = {
        "schema": SCHEMA_VERSION,
        "kind": KIND,
        "vramscope_version": version,
        "calibrations": [c.to_dict() for c in cals],
    }
    return (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8")


def write_store(path: Path, cals: Sequence[Calibration], version: str) -> None:
    """Replace `path` atomically with `cals` (OSError when the folder cannot be written;
    ValueError, before anything is written, for a calibration the reader would refuse)."""
    atomic_write(path, encode([c.checked() for c in cals], version))


def save_merged(path: Path, new: Sequence[Calibration], version: str) -> tuple[str, ...]:
    """Add `new` to the calibrations saved in `path`, replacing those of the same key;
    the lines to show. A file that cannot be read is renamed aside first (and the line
    says where); OSError when it cannot be renamed or the new file cannot be written,
    ValueError for a calibration the reader would refuse: then `path` is untouched."""
    checked = [c.checked() for c in new]
    lines: list[str] = []
    with locked(path):  # another calibrate's save never merges into the same old file
        old = read_store(path)
        if old.problem is not None and os.path.lexists(path):
            aside = set_aside(path)
            lines.append(kept_aside_line(path, aside, old.problem))
        write_store(path, merged(old.calibrations, checked), version)
    return tuple(lines)
