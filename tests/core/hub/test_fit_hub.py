"""`vramscope fit --hub`: one listing, then each repo's headers, every exact row the
answer `inspect REPO --json` gives; the store answers again and offline; a gated repo,
a 500 mid-listing, a stalled header read and a malformed entry each end in rows kept
and one line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from core.hub.listing import listed_model
from tests.core.hub.hub_fit_repos import AUTHOR, publish_sixty, repo_files
from tests.hub_server import FakeHub, SparseFile
from tui.cli import main

FLAGS = ["--backend", "cpu", "--memory-limit", "8GB", "--max-tokens", "8192"]
STORED = ["--quantizations", "stored"]


@pytest.fixture(scope="session")
def sixty() -> list[dict[str, SparseFile]]:
    """The 60 repos' files (config and one header each), built once."""
    return [repo_files(i) for i in range(60)]


def fit_hub(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict, str]:
    code = main(["fit", "--hub", "--author", AUTHOR, "--json", *FLAGS, *STORED, *extra])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else {}), out.err


def header_requests(hub: FakeHub) -> list[str]:
    return [r for r in hub.requests if ".safetensors" in r]


def test_sixty_repos_ranked_each_row_as_inspect_gives_under_one_percent_fetched(
    hub: FakeHub, sixty: list[dict[str, SparseFile]], capsys: pytest.CaptureFixture[str]
) -> None:
    names = publish_sixty(hub, sixty)
    hub.listing.page_size = 25  # three pages, followed by the Link header
    hub.delay_s = 0.05
    code, doc, err = fit_hub(capsys, "--limit", "60")
    assert code == 0, err
    hub.delay_s = 0.0
    rows = doc["rows"]
    assert sorted(r["model"] for r in rows) == names
    assert all(r["exact"] for r in rows), [r["problem"] for r in rows if not r["exact"]]
    assert sum(1 for r in hub.requests if r.startswith("GET /api/models?")) == 3
    # The listing's bound is the stored weights: the headers agree to the byte.
    assert all(r["bound_weights_bytes"] == r["weights_bytes"] for r in rows)
    listed = sum(r["bound_weights_bytes"] for r in rows)
    assert hub.bytes_sent < listed / 100, (hub.bytes_sent, listed)
    assert doc["inputs"]["hub"]["read"] == 60
    assert "60 listed, 60 read from the Hub" in err
    # fit's ranking: fitting rows first, larger models first among them.
    fits = [r["fits"] and not r["past_trained_context"] for r in rows]
    assert fits == sorted(fits, reverse=True)
    for row in rows:
        assert row["trained_context_tokens"] is not None
        assert row["largest_context_tokens"] <= row["trained_context_tokens"]
    # inspect builds the catalog (the whole Hub store) each time: a spread of 12 rows,
    # every rank from first to last, key by key.
    for row in rows[::5]:
        code = main(["inspect", row["model"], "--json", *FLAGS])
        inspected = json.loads(capsys.readouterr().out)
        assert code == 0
        for key in ("weights_bytes", "total_bytes", "fits", "largest_context",
                    "trained_context_tokens", "params", "past_trained_context"):  # fmt: skip
            assert row[key] == inspected[key], (row["model"], key)


def test_again_within_the_hour_no_request_refresh_lists_offline_answers(
    hub: FakeHub,
    sixty: list[dict[str, SparseFile]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    publish_sixty(hub, sixty[:8])
    code, first, _ = fit_hub(capsys)
    assert code == 0 and len(first["rows"]) == 8
    hub.requests.clear()
    code, again, err = fit_hub(capsys)
    assert code == 0
    assert hub.requests == []  # neither the listing nor a header
    assert again["rows"] == [dict(r, from_store=True) for r in first["rows"]]
    assert "listed within the hour" in err and "8 from the store" in err
    code, refreshed, err = fit_hub(capsys, "--refresh")
    assert code == 0 and len(refreshed["rows"]) == 8
    assert [r for r in hub.requests if r.startswith("GET /api/models?")]
    assert header_requests(hub) == []  # the listed commits are in the store
    hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, offline, err = fit_hub(capsys)
    assert code == 0, err
    assert hub.requests == []
    assert [r["total_bytes"] for r in offline["rows"]] == [r["total_bytes"] for r in first["rows"]]
    assert err.count("the listing of ") == 1 and "HF_HUB_OFFLINE=1" in err
    # Never listed, offline: one line, exit 2.
    code = main(["fit", "--hub", "other", *FLAGS])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "never listed" in err


def test_a_gated_repo_is_listed_with_its_bound_and_read_with_a_token(
    hub: FakeHub,
    sixty: list[dict[str, SparseFile]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    publish_sixty(hub, sixty[:3])
    hub.repos[f"{AUTHOR}/model-01"].gated = True
    code, doc, err = fit_hub(capsys)
    assert code == 0, err
    gated = next(r for r in doc["rows"] if r["model"] == f"{AUTHOR}/model-01")
    assert gated["gated"] and not gated["exact"] and gated["total_bytes"] is None
    assert gated["bound_weights_bytes"] > 0 and "HF_TOKEN" in gated["problem"]
    assert sum(1 for r in doc["rows"] if r["exact"]) == 2
    assert "Traceback" not in err and "gated" in err
    assert not [r for r in hub.requests if "model-01/resolve" in r]  # not even tried
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    code, doc, err = fit_hub(capsys, "--refresh")
    assert code == 0, err
    assert all(r["exact"] for r in doc["rows"])


def test_a_500_in_the_middle_of_the_listing_keeps_the_pages_read(
    hub: FakeHub, sixty: list[dict[str, SparseFile]], capsys: pytest.CaptureFixture[str]
) -> None:
    publish_sixty(hub, sixty[:30])
    hub.listing.page_size = 10
    hub.listing.fail_page = 1
    code, doc, err = fit_hub(capsys, "--limit", "30", "--hub-timeout", "2")
    assert code == 0, err
    assert len(doc["rows"]) == 10 and all(r["exact"] for r in doc["rows"])
    # huggingface_hub retries a 5xx with backoff: the deadline ends it first.
    (line,) = [w for w in err.splitlines() if "warning" in w]
    assert "127.0.0.1" in line and ("HTTP 500" in line or "within 2 s" in line)
    assert "Traceback" not in err


def test_a_malformed_listing_entry_keeps_the_rows_before_it(
    hub: FakeHub, sixty: list[dict[str, SparseFile]], capsys: pytest.CaptureFixture[str]
) -> None:
    names = publish_sixty(hub, sixty[:6])
    hub.listing.malformed = {names[3]}  # downloads order: 5, 4, 3 (bad), ...
    code, doc, err = fit_hub(capsys)
    assert code == 0, err
    assert sorted(r["model"] for r in doc["rows"]) == names[4:]
    assert all(r["exact"] for r in doc["rows"])
    assert "malformed" in err and "Traceback" not in err


def test_a_stalled_header_read_ends_in_one_line_naming_the_host_and_timeout(
    hub: FakeHub, sixty: list[dict[str, SparseFile]], capsys: pytest.CaptureFixture[str]
) -> None:
    names = publish_sixty(hub, sixty[:4])
    hub.listing.stall_header_of = {names[2]}
    started = time.monotonic()
    code, doc, err = fit_hub(capsys, "--hub-timeout", "1")
    assert time.monotonic() - started < 10
    assert code == 0, err
    stalled = next(r for r in doc["rows"] if r["model"] == names[2])
    assert not stalled["exact"] and stalled["total_bytes"] is None
    assert "127.0.0.1" in stalled["problem"]
    assert "1 s" in stalled["problem"] or "timed out" in stalled["problem"]
    assert sum(1 for r in doc["rows"] if r["exact"]) == 3
    assert "Traceback" not in err


def test_an_unreachable_hub_never_listed_is_one_line_exit_2(
    hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    code = main(["fit", "--hub", "x", *FLAGS, "--hub-timeout", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "127.0.0.1:9" in err
    code = main(["fit", "--author", "x", *FLAGS])
    assert code == 2 and "--author: only with --hub" in capsys.readouterr().err


def test_the_text_table_marks_bound_rows_and_has_the_listing_columns(
    hub: FakeHub,
    sixty: list[dict[str, SparseFile]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    publish_sixty(hub, sixty[:2])
    hub.repos[f"{AUTHOR}/model-00"].gated = True
    code = main(["fit", "--hub", "--author", AUTHOR, "--sort", "likes", *FLAGS, *STORED])
    out = capsys.readouterr().out
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("MODEL"))
    for column in ("TRAINED", "DOWNLOADS", "LIKES", "UPDATED"):
        assert column in header
    gated = next(line for line in out.splitlines() if "model-00" in line)
    assert "≈" in gated and "gated" in gated


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"id": "../etc"}, "repo id"),
        ({"id": "a/b\x1b[31m"}, "repo id"),
        ({"id": 7}, "repo id"),
    ],
)
def test_a_listing_entry_without_a_usable_repo_id_is_refused(entry: dict, why: str) -> None:
    assert why in str(listed_model(entry))


def test_a_listing_entry_keeps_only_checked_values() -> None:
    model = listed_model(
        {
            "id": "a/b",
            "downloads": -3,
            "likes": True,
            "sha": "zz",
            "safetensors": {"parameters": {"BF16": 10, "F32": "x", "Q9": 4}},
            "config": {"max_position_embeddings": "big"},
        }
    )
    assert not isinstance(model, str)
    assert (model.downloads, model.likes, model.commit, model.trained_context) == (
        None, None, None, None,
    )  # fmt: skip
    assert model.params_by_dtype == (("BF16", 10), ("Q9", 4))
    assert model.weight_bytes is None  # a dtype vramscope does not know: no bound


def test_a_run_writes_only_into_the_caches_and_a_query_never_names_a_path(
    hub: FakeHub,
    sixty: list[dict[str, SparseFile]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    publish_sixty(hub, sixty[:2])
    before = {p for p in tmp_path.rglob("*")}
    code = main(["fit", "--hub", "../../../outside", "--json", *FLAGS, *STORED])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["rows"] == []  # no repo's name holds it
    code, doc, _ = fit_hub(capsys)
    assert code == 0 and len(doc["rows"]) == 2
    written = [p for p in tmp_path.rglob("*") if p not in before and p.is_file()]
    assert written
    allowed = (tmp_path / "xdg" / "vramscope", tmp_path / "hf-home")
    assert all(p.is_relative_to(allowed[0]) or p.is_relative_to(allowed[1]) for p in written)
    listings = sorted((tmp_path / "xdg" / "vramscope" / "hub-listings").iterdir())
    assert len(listings) == 2 and all(len(p.stem) == 32 for p in listings)
    assert not (tmp_path.parent / "outside").exists()


def test_a_what_if_that_does_not_apply_is_no_row_as_in_fit(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from core.catalog.profiles import load_profile
    from tests.hub_server import sparse_from_folder
    from tests.model_writers import write_skeleton

    profile = "mlx-community/Qwen2.5-7B-Instruct-4bit"  # already 4-bit: no 8-bit what-if
    local = write_skeleton(load_profile(profile), tmp_path / "local", layout="headers")
    hub.add(f"{AUTHOR}/qwen-4bit", sparse_from_folder(local))
    code = main(["fit", "--hub", "--author", AUTHOR, "--json", *FLAGS])
    out = capsys.readouterr()
    assert code == 0, out.err
    rows = json.loads(out.out)["rows"]
    assert rows and all(r["exact"] for r in rows), [(r["quantization"], r["problem"]) for r in rows]
    # `fit` lists the what-ifs of a 4-bit model under "Not computed", not as rows.
    assert [r["quantization"] for r in rows] == ["stored"]


def test_sort_by_a_listing_order_or_any_column_and_a_bad_word_is_one_line(
    hub: FakeHub, sixty: list[dict[str, SparseFile]], capsys: pytest.CaptureFixture[str]
) -> None:
    publish_sixty(hub, sixty[:6])
    code, doc, err = fit_hub(capsys, "--sort", "likes")
    assert code == 0, err
    likes = [r["likes"] for r in doc["rows"]]
    assert likes == sorted(likes, reverse=True)
    code, doc, err = fit_hub(capsys, "--sort", "weights")
    weights = [r["weights_bytes"] for r in doc["rows"]]
    assert code == 0 and weights == sorted(weights, reverse=True)
    code, doc, err = fit_hub(capsys, "--sort", "model")
    assert [r["model"] for r in doc["rows"]] == sorted(r["model"] for r in doc["rows"])
    code, _, err = fit_hub(capsys, "--calibrated")  # not applied: said, not silent
    assert code == 0 and "--calibrated, --models-dir and --no-cache are not applied" in err
    code, _, err = fit_hub(capsys, "--sort", "sideways")
    assert code == 2 and err.count("\n") == 1 and "--sort" in err
