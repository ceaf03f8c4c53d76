"""The result record: what the harness writes and the strict reader the pool uses."""

from __future__ import annotations

import json
import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vouch.exec import _frame
from vouch.exec._frame import MAGIC, Frame, FrameError, decode, encode

NONCE = bytes(range(16))
OTHER_NONCE = bytes(range(1, 17))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25,
)


def payload(outcome: str = "returned", value: object = None, exception: dict[str, str] | None = None) -> dict:
    return {"outcome": outcome, "value": value, "exception": exception}


def raw(nonce: bytes, body: bytes, length: int | None = None) -> bytes:
    """A record built by hand: any body, any declared length."""
    return MAGIC + nonce + struct.pack("<Q", len(body) if length is None else length) + body


# --- round trip ----------------------------------------------------------------------------


@given(value=json_values, nonce=st.binary(min_size=16, max_size=16))
def test_round_trip_of_any_json_value(value: object, nonce: bytes) -> None:
    frame = decode(encode(nonce, payload("returned", value)), nonce)
    assert frame == Frame(outcome="returned", value=value, exception=None)


@given(
    exception=st.dictionaries(st.sampled_from(["type", "message", "traceback_tail"]), st.text()),
)
def test_round_trip_of_an_exception(exception: dict[str, str]) -> None:
    frame = decode(encode(NONCE, payload("raised", None, exception)), NONCE)
    assert frame.outcome == "raised"
    assert frame.exception == exception


@pytest.mark.parametrize("outcome", ["completed", "returned", "raised"])
def test_every_outcome_round_trips(outcome: str) -> None:
    assert decode(encode(NONCE, payload(outcome)), NONCE).outcome == outcome


def test_non_finite_floats_survive() -> None:
    frame = decode(encode(NONCE, payload("returned", [math.inf, -math.inf])), NONCE)
    assert frame.value == [math.inf, -math.inf]
    assert math.isnan(decode(encode(NONCE, payload("returned", math.nan)), NONCE).value)


def test_record_layout() -> None:
    data = encode(NONCE, payload("completed"))
    assert data.startswith(MAGIC + NONCE)
    (length,) = struct.unpack_from("<Q", data, len(MAGIC) + len(NONCE))
    assert length == len(data) - len(MAGIC) - len(NONCE) - 8
    assert json.loads(data[len(MAGIC) + len(NONCE) + 8 :]) == payload("completed")


def test_encode_refuses_non_json_values() -> None:
    with pytest.raises((TypeError, ValueError)):
        encode(NONCE, payload("returned", {1, 2}))
    with pytest.raises((TypeError, ValueError)):
        encode(NONCE, payload("returned", object()))


# --- what must not parse -------------------------------------------------------------------


def test_wrong_nonce() -> None:
    with pytest.raises(FrameError, match="nonce"):
        decode(encode(OTHER_NONCE, payload("returned", True)), NONCE)


def test_wrong_magic() -> None:
    data = encode(NONCE, payload("returned", True))
    with pytest.raises(FrameError):
        decode(b"VOUCH-FRAME-2\n" + data[len(MAGIC) :], NONCE)


@pytest.mark.parametrize("data", [b"", b"VOUCH", MAGIC, MAGIC + NONCE, MAGIC + NONCE + b"\0\0\0"], ids=repr)
def test_too_short_for_a_header(data: bytes) -> None:
    with pytest.raises(FrameError):
        decode(data, NONCE)


@given(cut=st.integers(min_value=0))
def test_every_truncation_is_rejected(cut: int) -> None:
    data = encode(NONCE, payload("returned", {"verdict": True, "why": "x" * 20}))
    cut %= len(data)
    with pytest.raises(FrameError):
        decode(data[:cut], NONCE)


@pytest.mark.parametrize("garbage", [b" ", b"\n", b"\0", b"{}", encode(NONCE, payload("returned", False))], ids=repr)
def test_trailing_garbage(garbage: bytes) -> None:
    """Anything after the declared body, a second record included, is refused."""
    with pytest.raises(FrameError, match="length"):
        decode(encode(NONCE, payload("returned", True)) + garbage, NONCE)


def test_declared_length_longer_than_body() -> None:
    body = json.dumps(payload("returned", True)).encode()
    with pytest.raises(FrameError, match="length"):
        decode(raw(NONCE, body, length=len(body) + 1), NONCE)


@pytest.mark.parametrize(
    "body",
    [b"not json", b"{", b'{"outcome": "returned",}', b"\xff\xfe", b"", b"{'outcome': 'returned'}"],
    ids=["words", "open-brace", "trailing-comma", "not-utf8", "empty", "single-quotes"],
)
def test_body_not_json(body: bytes) -> None:
    with pytest.raises(FrameError):
        decode(raw(NONCE, body), NONCE)


@pytest.mark.parametrize(
    "document",
    [
        [],
        "returned",
        True,
        None,
        {},
        {"outcome": "passed"},
        {"outcome": "PASS", "value": True},
        {"outcome": None},
        {"value": True},
    ],
    ids=repr,
)
def test_json_without_a_valid_outcome(document: object) -> None:
    with pytest.raises(FrameError, match="outcome"):
        decode(raw(NONCE, json.dumps(document).encode()), NONCE)


@pytest.mark.parametrize(
    "exception",
    ["boom", ["type", "ValueError"], {"type": 1}, {"type": "ValueError", "message": None}],
    ids=repr,
)
def test_malformed_exception(exception: object) -> None:
    with pytest.raises(FrameError, match="exception"):
        decode(raw(NONCE, json.dumps({"outcome": "raised", "exception": exception}).encode()), NONCE)


def test_frame_error_is_a_value_error() -> None:
    assert issubclass(FrameError, ValueError)
    assert _frame.MAX_FRAME_BYTES > 0


def test_clock_readings_round_trip_and_bad_ones_are_dropped() -> None:
    frame = decode(encode(NONCE, {**payload(value=1), "clock": [1.5, 2.5]}), NONCE)
    assert frame.clock == (1.5, 2.5)
    for bad in ([1, 2], [1.5], "now", [1.5, "x"], None):
        assert decode(encode(NONCE, {**payload(value=1), "clock": bad}), NONCE).clock is None


_MIB = 1 << 20


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        (b'"' + b"x" * (12 * _MIB) + b'"', False),  # one long string: its size in Python
        (json.dumps(["a line of output, with words"] * 200_000).encode(), False),
        (json.dumps(list(range(100_000))).encode(), False),  # small: under the floor whatever its shape
        (b"[" + b"[]," * (2 * _MIB) + b"[]]", True),  # 6 MiB of empty lists: some 170 MB decoded
        (b"[" + b"{}," * (2 * _MIB) + b"{}]", True),
        (b"[" + b"0," * (4 * _MIB) + b"0]", True),
        (json.dumps({str(i): 0 for i in range(1_200_000)}, separators=(",", ":")).encode(), True),
    ],
    ids=["long-string", "strings", "small-ints", "empty-lists", "empty-objects", "zeros", "wide-object"],
)
def test_json_whose_decoded_size_could_pass_the_budget_is_refused(body: bytes, refused: bool) -> None:
    reason = _frame.json_refusal(body)
    assert (reason is not None) == refused, reason
    if refused:
        with pytest.raises(FrameError, match="would decode to"):
            decode(raw(NONCE, b'{"outcome":"returned","value":' + body + b',"exception":null}'), NONCE)


def test_a_record_longer_than_the_cap_is_refused_by_its_length() -> None:
    data = MAGIC + NONCE + struct.pack("<Q", _frame.MAX_FRAME_BYTES + 1) + b"{}"
    with pytest.raises(FrameError, match="over the"):
        decode(data, NONCE)
