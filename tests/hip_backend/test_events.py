"""The child's JSON lines decode to the same events, and junk decodes to nothing."""

from __future__ import annotations

import json

import pytest

from core.measurement.comparison import margin
from core.measurement.protocol import (
    MeasureFailed,
    MeasureNotice,
    MeasureProgress,
    MeasureResult,
    decode_event,
    encode_event,
)
from core.measurement.request import MeasureRequest
from core.measurement.result import FailureKind, MeasuredPeak, MeasurementFailure
from tests.hip_backend.test_history import peak


@pytest.mark.parametrize(
    "event",
    [
        MeasureProgress("load", 3, 743, ""),
        MeasureNotice("synthetic weights: built-in profile"),
        MeasureResult(peak(6_145_000_000)),
        MeasureFailed(MeasurementFailure(FailureKind.OUT_OF_MEMORY, "HIP out of memory")),
    ],
)
def test_events_round_trip_through_one_line(event: object) -> None:
    line = encode_event(event)  # type: ignore[arg-type]
    assert "\n" not in line
    assert decode_event(line) == event


@pytest.mark.parametrize(
    "line",
    [
        "",
        "garbage",
        "[1]",
        '{"event": "progress"}',
        '{"event": "nope"}',
        '{"event":"failure","kind":"x","message":"m"}',
    ],
)
def test_malformed_lines_are_not_events(line: str) -> None:
    assert decode_event(line) is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("peak_bytes", "6145000000"), ("peak_bytes", -1), ("engine", 3), ("model", None)],
)
def test_a_result_line_of_the_wrong_types_is_not_a_result(field: str, value: object) -> None:
    """The child's result is checked field by field, as history records are: a damaged
    line is no event (the launcher then reports the run as failed), never a bad peak."""
    good = json.loads(encode_event(MeasureResult(peak(6_145_000_000))))
    good["peak"][field] = value
    assert decode_event(json.dumps(good)) is None


def test_margin_and_coverage_against_a_published_row() -> None:
    """mlxcel's smallest margin: Llama-3.1-8B at 4096 tokens, default budget."""
    m = margin(6_955_000_000 + 221_877_772, 6_955_000_000)
    assert m.bytes == 221_877_772
    assert m.covered
    assert not margin(1, 2).covered
    measured = MeasuredPeak.from_dict({**peak(100).to_dict(), "estimate_bytes": 90, "new": 1})
    assert measured.margin is not None
    assert measured.margin.bytes == -10
    assert measured.context_tokens == 640


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"prompt_tokens": 0}, "at least 1"),
        ({"gen_tokens": -1}, "gen_tokens"),
        ({"device": "tpu"}, "device"),
        ({"engine": "jax"}, "engine"),
        ({"prompt_tokens": 2**64 - 1}, "at most 16777216"),
        ({"warmup_tokens": 2**24 + 1}, "at most 16777216"),
        ({"kv_int8": True}, "mlx engine only"),
    ],
)
def test_requests_with_impossible_values_are_refused(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        MeasureRequest("m", **kwargs)  # type: ignore[arg-type]
