"""Fuzz the safetensors header reader: any bytes give a sum or a HeaderError, never a crash."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import HeaderError
from core.model.safetensors_header import DTYPE_ITEMSIZE, header_weight_bytes, read_header_info
from core.units import U64_MAX

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)

valid_tensor = st.tuples(
    st.sampled_from(sorted(DTYPE_ITEMSIZE)), st.lists(st.integers(0, 2**40), max_size=4)
)


def read_bytes(data: bytes) -> int | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.safetensors"
        path.write_bytes(data)
        try:
            return read_header_info(path).weight_bytes
        except HeaderError as exc:
            assert "\n" not in str(exc)
            assert str(exc).startswith(str(path))
            return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    read_bytes(data)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_arbitrary_json_headers_never_crash(header: Any) -> None:
    body = json.dumps(header).encode()
    result = read_bytes(struct.pack("<Q", len(body)) + body)
    if result is not None:
        assert 0 <= result <= U64_MAX


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=10).filter(lambda s: s != "__metadata__"),
        valid_tensor,
        max_size=6,
    )
)
def test_valid_headers_sum_exactly(tensors: dict[str, tuple[str, list[int]]]) -> None:
    header = {name: {"dtype": d, "shape": shape} for name, (d, shape) in tensors.items()}
    expected = 0
    for d, shape in tensors.values():
        n = DTYPE_ITEMSIZE[d]
        for dim in shape:
            n *= dim
        expected += n
    assert header_weight_bytes(header) == min(expected, U64_MAX)
    body = json.dumps(header).encode()
    assert read_bytes(struct.pack("<Q", len(body)) + body) == min(expected, U64_MAX)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**64 - 1), st.binary(max_size=16))
def test_any_declared_length_is_checked_before_reading(declared: int, tail: bytes) -> None:
    result = read_bytes(struct.pack("<Q", declared) + tail)
    if declared == 0 or declared > len(tail):
        assert result is None
