"""The KFD topology in sysfs (`class/kfd/kfd/topology/nodes/*/properties`): each GPU
node's gfx target and whether it is an APU (a node with CPU cores and SIMDs).

A properties file is read only as a regular file of at most `PROPERTIES_CAP` bytes;
a value that is not decimal digits within u64 is left out."""

from __future__ import annotations

import os
from pathlib import Path

from core.numbers import decimal_to_int
from core.regular_file import read_small_text
from core.units import U64_MAX

PROPERTIES_CAP = 64 * 1024
"""A node's properties are about 1.5 kB."""


def gfx_target(version: int) -> str:
    """KFD's `gfx_target_version` (110501) as a gfx name (`gfx1151`)."""
    major, minor, step = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor:x}{step:x}"


def read_kfd_nodes(root: Path) -> dict[int, tuple[str | None, bool]]:
    """Render minor -> (gfx target, is an APU) for every GPU node of the KFD topology."""
    nodes = root / "class" / "kfd" / "kfd" / "topology" / "nodes"
    out: dict[int, tuple[str | None, bool]] = {}
    try:
        entries = sorted(os.listdir(nodes))
    except OSError:
        return out
    for entry in entries:
        try:
            text = read_small_text(nodes / entry / "properties", PROPERTIES_CAP)
        except OSError:
            continue
        props: dict[str, int] = {}
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            digits = value.strip()
            number = decimal_to_int(digits) if digits.isascii() and digits.isdigit() else None
            if number is not None and number <= U64_MAX:
                props[key] = number
        if not props.get("simd_count") or "drm_render_minor" not in props:
            continue  # a CPU-only node
        version = props.get("gfx_target_version")
        out[props["drm_render_minor"]] = (
            gfx_target(version) if version else None,
            props.get("cpu_cores_count", 0) > 0,
        )
    return out
