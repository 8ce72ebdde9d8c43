"""Each Hub failure raises its own type where it is known, so callers catch by type
(never by the message's words): gated, unreachable, timed out, off, not found."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import (
    HubAuthError,
    HubClientClosedError,
    HubError,
    HubNotFoundError,
    HubOfflineError,
    HubTimedOutError,
    HubUnreachableError,
)
from core.fit.hub import _transient
from core.hub.listing import ListingQuery, list_hub
from core.hub.remote import HubOptions, read_hub_model
from core.hub.search import search_hub
from tests.core.hub.hub_fit_repos import AUTHOR, publish_sixty, repo_files
from tests.core.hub.test_hub_read import MLX_4BIT, _closed_port, publish
from tests.hub_server import FakeHub, Misbehaviour


def test_a_gated_repo_without_a_token_is_an_auth_error(hub: FakeHub, tmp_path: Path) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/gated", "headers")
    hub.repos["test-org/gated"].gated = True
    with pytest.raises(HubAuthError, match="a token with access is needed"):
        read_hub_model("test-org/gated")


def test_a_closed_port_is_unreachable_and_not_a_timeout(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(HubUnreachableError) as caught:
        read_hub_model("test-org/never")
    assert not isinstance(caught.value, HubTimedOutError)
    assert _transient(caught.value)  # fit --hub tries a lost connection again


def test_a_stalled_hub_is_a_timeout_which_is_not_tried_again(hub: FakeHub, tmp_path: Path) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/slow", "headers")
    hub.delay_s = 3.0
    with pytest.raises(HubTimedOutError) as caught:
        read_hub_model("test-org/slow", HubOptions(timeout_s=0.5))
    assert isinstance(caught.value, HubUnreachableError)  # a stored copy may still answer
    assert not _transient(caught.value)


def test_a_header_read_that_stalls_past_the_deadline_is_a_timeout(
    hub: FakeHub, tmp_path: Path
) -> None:
    publish(hub, tmp_path, MLX_4BIT, "test-org/slow", "headers")
    hub.misbehaviours.append(Misbehaviour(where=".safetensors", stall_s=60))
    with pytest.raises(HubTimedOutError, match="did not finish the read within 1 s"):
        read_hub_model("test-org/slow", HubOptions(timeout_s=1.0))


def test_off_and_never_read_is_not_found_and_the_listing_and_search_say_off(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(HubNotFoundError, match="never read from the Hub"):
        read_hub_model("test-org/never", HubOptions(offline=True))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubOfflineError, match="never listed"):
        list_hub(ListingQuery(search="nothing"))
    with pytest.raises(HubOfflineError, match="searching needs it"):
        search_hub("qwen")
    assert hub.requests == []


def test_a_listing_unreachable_is_answered_from_the_store_and_raises_without_one(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_sixty(hub, [repo_files(i) for i in range(3)])
    query = ListingQuery(author=AUTHOR)
    first = list_hub(query)
    assert len(first.models) == 3 and not first.from_store
    # The same endpoint, now stalled past the deadline: the stored listing answers.
    hub.misbehaviours.append(Misbehaviour(where="/api/models", stall_s=60))
    again = list_hub(query, refresh=True, timeout_s=1.0)
    assert again.from_store and [m.repo_id for m in again.models] == [
        m.repo_id for m in first.models
    ]
    assert "the Hub is unreachable" in (again.note or "")
    with pytest.raises(HubTimedOutError):
        list_hub(ListingQuery(author="someone-else"), timeout_s=1.0)


def test_only_a_lost_connection_is_tried_again() -> None:
    assert _transient(HubUnreachableError("r", "the Hub at h stopped answering (reset)"))
    assert _transient(HubClientClosedError("r", "unexpected answer from the Hub: RuntimeError"))
    # A message that merely reads like one is not: the type decides.
    assert not _transient(HubError("r", "the Hub at h is unreachable (connection reset)"))
    assert not _transient(HubTimedOutError("r", "unreachable (timed out after 1 s)"))
    assert not _transient(HubAuthError("r", "gated"))


def test_a_gguf_read_of_an_unreachable_hub_is_typed_alike(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.hub.gguf_remote import read_hub_gguf

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(HubUnreachableError) as caught:
        read_hub_gguf("test-org/never-gguf")
    assert not isinstance(caught.value, HubTimedOutError)
