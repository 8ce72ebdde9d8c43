"""Regenerate core/catalog/profile_data/ from a folder of fixtures (a developer step).

Each model in the folder is a `<org>__<repo>.config.json` (the model's config.json,
kept verbatim) and, unless the profile is config-only, a `<org>__<repo>.tensors.json`
(see docs/models.md for its format); without one, mlx-lm's own model class gives the
list (`scripts/derive_tensors.py`, for the repos in its `DERIVED` table). Each becomes
one xz-compressed profile: the config text, the safetensors `__metadata__`, the shard
split where known and the tensor list folded into a manifest. Every profile is checked
before it is written:
the manifest expands back to the exact list, its bytes equal the fixture's
`total_bytes`, and each known shard's bytes equal the fixture's. Usage:

    python scripts/build_profiles.py [FIXTURE_DIR] [--check]

`--check` writes nothing and exits 1 if a shipped file differs from what it would
write (CI-style drift check).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.catalog.profiles import (
    PROFILE_DIR,
    PROFILE_SUFFIX,
    Tensor,
    decode_profile,
    encode_profile,
    profile_file_name,
)
from core.model.safetensors_header import tensor_bytes
from scripts.derive_tensors import DERIVED, derive

DEFAULT_SRC = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "models"

# Profiles shipped with a config only: the estimate takes the analytical weights path.
# None now: a fixture without a tensor list gets one from mlx-lm (scripts/derive_tensors.py).
CONFIG_ONLY: set[str] = set()


class FixtureError(Exception):
    """A fixture that does not add up; nothing is written."""


def read_fixture(src: Path, stem: str) -> tuple[str, str, dict[str, Any] | None]:
    """(repo id, config text, decoded tensors.json or None)."""
    config_text = (src / f"{stem}.config.json").read_text(encoding="utf-8")
    json.loads(config_text)  # must parse; its bytes are kept verbatim
    tensors_path = src / f"{stem}.tensors.json"
    data = json.loads(tensors_path.read_text(encoding="utf-8")) if tensors_path.exists() else None
    if data is None and stem in DERIVED:
        data = derive(stem, json.loads(config_text))
        print(
            f"{stem}: {data['tensor_count']} tensors, {data['total_bytes']} bytes from mlx-lm's "
            f"own class ({data['parameters']:,} parameters; {DERIVED[stem].card})",
            file=sys.stderr,
        )
    return stem.replace("__", "/", 1), config_text, data


def build_one(stem: str, config_text: str, repo_id: str, data: dict[str, Any] | None) -> bytes:
    """Encode one profile and check it against its fixture."""
    if data is None:
        if stem not in CONFIG_ONLY:
            raise FixtureError(f"{stem}: no tensor list and not listed as config-only")
        return encode_profile(repo_id, config_text, None)
    tensors: list[Tensor] = [(n, d, tuple(s)) for n, d, s in data["tensors"]]
    names = [t[0] for t in tensors]
    shard_sizes: list[tuple[str, int]] | None = None
    if data.get("shards"):
        shard_sizes = []
        flat: list[str] = []
        by_name = {t[0]: t for t in tensors}
        for file, info in data["shards"].items():
            shard_sizes.append((file, len(info["tensors"])))
            flat.extend(info["tensors"])
            got = sum(tensor_bytes(by_name[n][1], by_name[n][2]) for n in info["tensors"])
            if got != info["bytes"]:
                raise FixtureError(f"{stem}: shard {file} adds up to {got}, not {info['bytes']}")
        if flat != names:
            raise FixtureError(f"{stem}: shards are not contiguous runs of the tensor list")
    blob = encode_profile(repo_id, config_text, tensors, data["header_metadata"], shard_sizes)
    profile = decode_profile(blob)
    if profile.tensors != tuple(tensors):
        raise FixtureError(f"{stem}: the manifest does not expand back to the tensor list")
    if profile.weight_bytes != data["total_bytes"] or profile.tensor_count != data["tensor_count"]:
        raise FixtureError(
            f"{stem}: {profile.weight_bytes} bytes in {profile.tensor_count} tensors, fixture "
            f"says {data['total_bytes']} in {data['tensor_count']}"
        )
    if profile.config_text != config_text:
        raise FixtureError(f"{stem}: config text changed on the way")
    return blob


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    blobs: dict[str, bytes] = {}
    try:
        for config_path in sorted(args.src.glob("*.config.json")):
            stem = config_path.name.removesuffix(".config.json")
            repo_id, config_text, data = read_fixture(args.src, stem)
            blobs[profile_file_name(repo_id)] = build_one(stem, config_text, repo_id, data)
    except (FixtureError, OSError, ValueError, KeyError) as exc:
        print(f"build_profiles: {exc}", file=sys.stderr)
        return 1
    if not blobs:
        print(f"build_profiles: no *.config.json in {args.src}", file=sys.stderr)
        return 1
    shipped = {p.name: p.read_bytes() for p in PROFILE_DIR.glob(f"*{PROFILE_SUFFIX}")}
    if args.check:
        stale = sorted(set(shipped) ^ set(blobs) | {n for n in blobs if shipped.get(n) != blobs[n]})
        for name in stale:
            print(f"differs: {name}")
        return 1 if stale else 0
    PROFILE_DIR.mkdir(exist_ok=True)
    for name in set(shipped) - set(blobs):
        (PROFILE_DIR / name).unlink()
    for name, blob in sorted(blobs.items()):
        (PROFILE_DIR / name).write_bytes(blob)
        print(f"{name}: {len(blob)} bytes")
    print(f"total {sum(len(b) for b in blobs.values())} bytes in {len(blobs)} profiles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
