"""The HF cache as huggingface_hub sees it: folder from the environment, offline scan,
which snapshot is shown, and the import cost kept out of `import core`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.catalog.hf_cache import scan_hf_cache, scan_hf_cache_repo
from core.paths import hf_cache_dir, repo_folder_name
from tests.core.catalog.catalog_fixtures import HubCache, commit_hash
from tests.model_writers import write_ref


@pytest.fixture
def hub_cache(tmp_path: Path) -> HubCache:
    return HubCache(tmp_path / "hf" / "hub")


ROOT = Path(__file__).resolve().parents[3]
ENV_CASES = [
    {},
    {"HF_HOME": "/srv/hf"},
    {"HF_HOME": "/srv/hf", "HF_HUB_CACHE": "/data/hub"},
    {"HUGGINGFACE_HUB_CACHE": "/legacy/hub", "HF_HOME": "/srv/hf"},
    {"HF_HUB_CACHE": "/data/hub", "HUGGINGFACE_HUB_CACHE": "/legacy/hub"},
    {"XDG_CACHE_HOME": "/xdg"},
    {"HF_HOME": "~/hfhome"},
    {"HF_HUB_CACHE": "$BASE/hub", "BASE": "/vars"},
    {"HF_HOME": "${BASE}/h", "BASE": "/vars", "HUGGINGFACE_HUB_CACHE": "~/legacy"},
    {"XDG_CACHE_HOME": "~/xdg"},
    {"HF_HOME": ""},
]


def _hub_env(extra: dict[str, str], home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.pop("XDG_CACHE_HOME", None)
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", **extra)
    return env


@pytest.mark.parametrize("extra", ENV_CASES)
def test_cache_folder_is_the_one_huggingface_hub_uses(
    extra: dict[str, str], tmp_path: Path
) -> None:
    env = _hub_env(extra, tmp_path)
    code = "import huggingface_hub.constants as c; print(c.HF_HUB_CACHE)"
    hub_says = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert str(hf_cache_dir(env)) == hub_says


def test_a_hub_layout_is_found_where_the_hub_resolves_it(hub_cache: HubCache) -> None:
    snapshot = hub_cache.add_tiny("org/tiny-llama")
    scan = scan_hf_cache(hub_cache.root)
    assert scan.exists and scan.problems == ()
    (model,) = scan.models
    assert (model.repo_id, model.refs, model.snapshot_path) == (
        "org/tiny-llama",
        ("main",),
        snapshot,
    )
    assert model.repo_path.name == repo_folder_name("org/tiny-llama") == "models--org--tiny-llama"
    # The same folder the hub itself resolves, offline.
    import huggingface_hub

    resolved = huggingface_hub.snapshot_download(
        "org/tiny-llama", cache_dir=hub_cache.root, local_files_only=True
    )
    assert Path(resolved) == snapshot
    assert (snapshot / "config.json").is_symlink()
    assert os.readlink(snapshot / "config.json").startswith("../../blobs/")


def test_the_snapshot_main_points_to_is_shown(hub_cache: HubCache) -> None:
    old = hub_cache.add_tiny("org/m", commit=commit_hash("old"))
    new = hub_cache.add_tiny("org/m", commit=commit_hash("new"), refs=())
    os.utime(new.parent.parent / "blobs", (2e9, 2e9))
    write_ref(hub_cache.repo_path("org/m"), "main", commit_hash("old"))
    (model,) = scan_hf_cache(hub_cache.root).models
    assert model.snapshot_path == old
    assert model.other_revisions == (commit_hash("new"),)


def test_without_refs_the_newest_snapshot_is_shown(hub_cache: HubCache) -> None:
    first = hub_cache.add_files("org/m", {"config.json": b"1"}, commit=commit_hash("1"), refs=())
    second = hub_cache.add_files("org/m", {"config.json": b"2"}, commit=commit_hash("2"), refs=())
    for snapshot, when in ((first, 1.7e9), (second, 1.8e9)):
        blob = (snapshot / "config.json").resolve()
        os.utime(blob, (when, when))
    (model,) = scan_hf_cache(hub_cache.root).models
    assert model.snapshot_path == second and model.refs == ()


def test_other_repo_types_and_broken_repos_are_reported_not_listed(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("org/good")
    (hub_cache.root / "datasets--org--data" / "snapshots" / commit_hash("d")).mkdir(parents=True)
    (hub_cache.root / "models--org--nosnapshots").mkdir()
    (hub_cache.root / "not-a-repo").mkdir()
    (hub_cache.root / ".locks").mkdir()
    scan = scan_hf_cache(hub_cache.root)
    assert [m.repo_id for m in scan.models] == ["org/good"]
    reasons = {Path(p.location).name: p.reason for p in scan.problems}
    assert reasons["datasets--org--data"] == "a dataset repo, not a model"
    assert "Snapshots dir doesn't exist" in reasons["models--org--nosnapshots"]
    assert "not a valid HuggingFace cache directory" in reasons["not-a-repo"]
    assert ".locks" not in reasons


def test_a_missing_cache_is_no_error_and_imports_nothing(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from core.catalog.resolve import build_catalog;"
        f"c = build_catalog(hf_cache_dir=Path({str(tmp_path / 'none')!r}));"
        "print(len(c.entries), len(c.skipped), 'huggingface_hub' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[1:] == ["0", "False"] and int(out[0]) >= 12
    assert scan_hf_cache(tmp_path / "none").exists is False


def test_import_core_does_not_import_huggingface_hub() -> None:
    code = (
        "import sys, core, core.catalog.resolve, core.catalog.hf_cache; "
        "print('huggingface_hub' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_one_repo_reads_like_the_whole_scan(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("org/a")
    hub_cache.add_tiny("org/b")
    (hub_cache.repo_path("org/b") / "blobs" / "0123.incomplete").write_bytes(b"part")
    whole = {m.repo_id: m for m in scan_hf_cache(hub_cache.root).models}
    for repo_id in ("org/a", "org/b"):
        assert scan_hf_cache_repo(hub_cache.root, repo_id).models == (whole[repo_id],)
    assert whole["org/b"].incomplete_files[0].name == "0123.incomplete"
    assert scan_hf_cache_repo(hub_cache.root, "org/absent").models == ()


def test_scan_sets_offline_mode_before_importing_the_hub(hub_cache: HubCache) -> None:
    hub_cache.add_tiny("org/a")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    code = (
        "import json, sys; from pathlib import Path; "
        "from core.catalog.hf_cache import scan_hf_cache;"
        f"s = scan_hf_cache(Path({str(hub_cache.root)!r}));"
        "import huggingface_hub.constants as c;"
        "print(json.dumps([len(s.models), c.HF_HUB_OFFLINE]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert json.loads(out.stdout) == [1, True], out.stderr
