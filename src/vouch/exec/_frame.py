"""The result record a run's harness writes, and its strict reader.

The harness writes exactly one frame, at offset 0 of a file only the run holds, after the
code under test has finished: ``MAGIC + nonce + length + JSON``. The nonce is fresh per
run and known to the pool, so text the code prints or writes to descriptors it inherited
does not parse as a frame. Code in the run's own process can still find the nonce and write a
frame; reading it is therefore total and bounded (a size cap, a parser depth cap, and a cap on what
decoding may allocate: ``json_refusal``), so that whatever a run writes is that run's outcome, never
an error of the pool. The frame never decides a status
on its own: the parent's observation (exit status, signal, limits) comes first, and a frame only
turns an observed clean exit into ``ok`` and carries a call's return value as JSON data.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

MAGIC = b"VOUCH-FRAME-1\n"
_LENGTH = struct.Struct("<Q")
MAX_FRAME_BYTES = 16 * 1024 * 1024
"""The largest result record the pool reads: a return value carries a verdict and its evidence,
not bulk data (a run writes that into a kept working directory)."""
HEADER_BYTES = len(MAGIC) + 16 + _LENGTH.size
"""What precedes the JSON body: the magic, the 16-byte nonce and the length."""
_DECODE_FLOOR = 192 * 1024 * 1024
"""What any record may decode to: a benchmark state of some megabytes (a tau2 database of 6 MB,
about 680,000 values, is bounded at 70 MiB) passes; a forged 8 MiB of empty lists (bounded at
about 280 MiB) does not."""
_DECODE_RATIO = 8
_BYTES_PER_TOKEN = 100
"""An upper bound of what Python's JSON decoder allocates per container or separator: an empty
list is 56 bytes and its slot in the outer list 8 more, a short string about 80 with its slot."""


@dataclass(frozen=True)
class Frame:
    outcome: str
    """``completed`` (script ran to its end), ``returned`` (call returned) or ``raised``."""
    value: Any
    exception: dict[str, str] | None
    clock: tuple[float, float] | None = None
    """When the harness took over and when the entry ended (``CLOCK_MONOTONIC``, shared with the
    pool): profiling figures only, written by the run's process like the rest of the frame."""


class FrameError(ValueError):
    """The result file does not hold exactly one well-formed frame for this run."""


def encode(nonce: bytes, payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload, allow_nan=True, separators=(",", ":")).encode()
    return MAGIC + nonce + _LENGTH.pack(len(body)) + body


def json_refusal(body: bytes) -> str | None:
    """Why decoding ``body`` as JSON could take more memory than the pool gives it, or None.

    JSON of many small values (``[[],[],...]``) decodes to about 30 times its size in Python
    objects. An upper bound of the decoded size, counted without decoding (one pass per byte
    value, in C), must stay within ``max(192 MiB, 8 x size)``: a string of a megabyte passes,
    a megabyte of empty lists does not. Brackets and separators inside strings count too, so
    the bound errs towards refusing.
    """
    size = len(body)
    if size * (4 + _BYTES_PER_TOKEN) <= _DECODE_FLOOR:
        return None  # small enough that no shape of it can pass the floor
    per_byte = 1 if body.isascii() and b"\\u" not in body else 4  # str is 4 bytes a character at worst
    tokens = body.count(b"[") + body.count(b"{") + body.count(b",") + body.count(b":")
    estimate = per_byte * size + _BYTES_PER_TOKEN * tokens
    budget = max(_DECODE_FLOOR, _DECODE_RATIO * size)
    if estimate <= budget:
        return None
    return (
        f"JSON of {size} bytes with {tokens} values would decode to up to {estimate >> 20} MiB, "
        f"over the {budget >> 20} MiB a record of its size may take"
    )


def load_json(body: bytes) -> Any:
    """``json.loads`` within the memory ``json_refusal`` allows. Raises FrameError."""
    refusal = json_refusal(body)
    if refusal is not None:
        raise FrameError(refusal)
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the parser goes (a forged record); ValueError
        # covers bad UTF-8 and integers past Python's digit limit.
        raise FrameError(f"not JSON: {type(exc).__name__}: {exc}"[:300]) from None


def decode(data: bytes, nonce: bytes) -> Frame:
    head = len(MAGIC) + len(nonce)
    if len(data) < head + _LENGTH.size:
        raise FrameError("no result record")
    if data[: len(MAGIC)] != MAGIC or data[len(MAGIC) : head] != nonce:
        raise FrameError("result record does not carry this run's nonce")
    (length,) = _LENGTH.unpack_from(data, head)
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"result record of {length} bytes is over the {MAX_FRAME_BYTES} byte cap")
    body = data[head + _LENGTH.size :]
    if length != len(body):
        raise FrameError("result record length does not match its content")
    try:
        payload = load_json(body)
    except FrameError as exc:
        raise FrameError(f"result record: {exc}") from None
    if not isinstance(payload, dict) or payload.get("outcome") not in ("completed", "returned", "raised"):
        raise FrameError("result record has no valid outcome")
    exception = payload.get("exception")
    if exception is not None and not (
        isinstance(exception, dict) and all(isinstance(v, str) for v in exception.values())
    ):
        raise FrameError("result record has a malformed exception")
    clock = payload.get("clock")
    if not (isinstance(clock, list) and len(clock) == 2 and all(type(t) is float for t in clock)):
        clock = None
    return Frame(
        outcome=payload["outcome"],
        value=payload.get("value"),
        exception=exception,
        clock=(clock[0], clock[1]) if clock else None,
    )
