"""Regenerate core/profile_data/ from the fixture folder (a developer step).

Each real model becomes one xz-compressed JSON file: its config.json text
verbatim, the safetensors `__metadata__`, the shard split where known and the
tensor list (name, dtype, shape). Usage:

    python scripts/build_profiles.py ../shared/fixtures/models
"""

from __future__ import annotations

import json
import lzma
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "core" / "profile_data"

# Profiles of models that were published with a tensor list, plus config-only ones.
CONFIG_ONLY = {
    "Qwen__Qwen3-Next-80B-A3B-Instruct",
    "mlx-community__gemma-2-2b-it-fp16",
    "mlx-community__gemma-3-4b-pt-4bit",
}


def main(src: Path) -> int:
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("*.json.xz"):
        old.unlink()
    total = 0
    for config_path in sorted(src.glob("*.config.json")):
        stem = config_path.name.removesuffix(".config.json")
        tensors_path = src / f"{stem}.tensors.json"
        profile: dict[str, object] = {
            "repo_id": stem.replace("__", "/", 1),
            "config_text": config_path.read_text(encoding="utf-8"),
        }
        if tensors_path.exists():
            data = json.loads(tensors_path.read_text(encoding="utf-8"))
            shards = data.get("shards")
            profile["header_metadata"] = data["header_metadata"]
            profile["total_bytes"] = data["total_bytes"]
            profile["shards"] = (
                {name: info["tensors"] for name, info in shards.items()} if shards else None
            )
            profile["tensors"] = data["tensors"]
        elif stem not in CONFIG_ONLY:
            print(f"skipping {stem}: no tensor list and not a config-only profile")
            continue
        blob = lzma.compress(json.dumps(profile, separators=(",", ":")).encode(), preset=9)
        (OUT / f"{stem}.json.xz").write_bytes(blob)
        total += len(blob)
        print(f"{stem}: {len(blob)} bytes")
    print(f"total {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/fixtures/models")))
