"""The KFD topology in sysfs (`class/kfd/kfd/topology/nodes/*/properties`): each GPU
node's gfx target and whether it is an APU (a node with CPU cores and SIMDs)."""

from __future__ import annotations

import os
from pathlib import Path


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
            text = (nodes / entry / "properties").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        props: dict[str, int] = {}
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                props[key] = int(value.strip())
        if not props.get("simd_count") or "drm_render_minor" not in props:
            continue  # a CPU-only node
        version = props.get("gfx_target_version")
        out[props["drm_render_minor"]] = (
            gfx_target(version) if version else None,
            props.get("cpu_cores_count", 0) > 0,
        )
    return out
