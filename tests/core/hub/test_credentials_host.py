"""The HF token goes only to the endpoint's own host (#41).

A listing's `Link: rel="next"` naming another host ends the listing there, with one
warning: that host receives nothing. A file read redirected to another host (as the
Hub's own CDN redirects are) is followed without the token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.core.hub.hub_fit_repos import AUTHOR, repo_files
from tests.hub_server import FakeHub, Misbehaviour
from tui.cli import main

FLAGS = ["--backend", "cpu", "--memory-limit", "8GB", "--max-tokens", "8192"]
STORED = ["--quantizations", "stored"]
TOKEN = "hf_x"


@pytest.fixture
def elsewhere() -> Iterator[FakeHub]:
    """A second local Hub on another port: it must never see the token."""
    server = FakeHub().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return TOKEN


def _host(url: str) -> str:
    return urlsplit(url).netloc


def test_a_next_page_on_another_host_is_never_asked_for(
    hub: FakeHub, elsewhere: FakeHub, token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(3):
        files = repo_files(i)
        hub.add(f"{AUTHOR}/model-{i:02d}", files)
        elsewhere.add(f"{AUTHOR}/model-{i:02d}", files)
    hub.listing.page_size = 1
    hub.listing.next_base = elsewhere.url
    code = main(["fit", "--hub", "--author", AUTHOR, "--refresh", "--json", *FLAGS, *STORED])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert elsewhere.seen == []
    # The first page was asked of the endpoint with the token, and its row is kept.
    listing_asks = [s for s in hub.seen if s[1].startswith("/api/models?")]
    assert listing_asks and all(auth == f"Bearer {token}" for _, _, auth in listing_asks)
    assert [r["model"] for r in json.loads(out.out)["rows"]] == [f"{AUTHOR}/model-00"]
    warnings = [line for line in out.err.splitlines() if _host(elsewhere.url) in line]
    assert len(warnings) == 1, out.err
    assert "warning" in warnings[0] and "another host" in warnings[0]


def test_a_search_never_follows_a_page_to_another_host(
    hub: FakeHub, elsewhere: FakeHub, token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(2):
        hub.add(f"{AUTHOR}/model-{i:02d}", repo_files(i))
    hub.listing.page_size = 1
    hub.listing.next_base = elsewhere.url
    code = main(["models", "--hub", "model"])
    out = capsys.readouterr()
    assert elsewhere.seen == []
    assert code == 0, out.err
    assert f"{AUTHOR}/model-00" in out.out
    assert sum(_host(elsewhere.url) in line for line in out.err.splitlines()) == 1, out.err


def test_a_redirect_to_another_host_is_followed_without_the_token(
    hub: FakeHub, elsewhere: FakeHub, token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files = repo_files(4)
    repo = f"{AUTHOR}/model-04"
    hub.add(repo, files)
    elsewhere.add(repo, files)
    hub.misbehaviours.append(Misbehaviour(where="/resolve/", redirect_to=elsewhere.url))
    code = main(["inspect", repo, "--json", *FLAGS])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["weights_bytes"] > 0
    assert any("config.json" in path for _, path, _ in elsewhere.seen)
    assert any(".safetensors" in path for _, path, _ in elsewhere.seen)
    assert [auth for _, _, auth in elsewhere.seen] == [None] * len(elsewhere.seen)
    assert all(auth == f"Bearer {token}" for _, _, auth in hub.seen)
