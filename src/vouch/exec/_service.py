"""The run side of a service channel: a run asks its caller for something, as JSON data.

A run started with ``RunSpec(service=True)`` holds a socket at ``SERVICE_FD``. ``request``
sends one JSON message and waits for the answer; the zygote relays it to the handler the
caller gave ``Executor.submit``, which may start further runs (``env.call``). Only JSON
crosses, in both directions, and each message is capped in size.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

from vouch.exec._values import from_data, to_data

SERVICE_FD = 1002
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_HEADER = struct.Struct("<I")


class ServiceError(RuntimeError):
    """The service channel is missing, closed, or the handler refused the request."""


def frame(data: bytes) -> bytes:
    return _HEADER.pack(len(data)) + data


def encode_request(payload: Any) -> bytes:
    """``payload`` as one request's bytes."""
    return json.dumps(to_data(payload)).encode()


def _read_exact(fd: int, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            raise ServiceError("the service channel closed")
        chunks += chunk
    return bytes(chunks)


def request(payload: dict[str, Any]) -> Any:
    """Send ``payload`` to the caller's handler and return its answer (JSON data)."""
    data = encode_request(payload)
    if len(data) > MAX_MESSAGE_BYTES:
        raise ServiceError(f"request of {len(data)} bytes is over the {MAX_MESSAGE_BYTES} byte cap")
    try:
        os.write(SERVICE_FD, frame(data))
        (length,) = _HEADER.unpack(_read_exact(SERVICE_FD, _HEADER.size))
        answer = _read_exact(SERVICE_FD, length)
    except OSError as exc:
        raise ServiceError(f"no service channel in this run ({exc})") from None
    return answer_value(answer)


def answer_value(data: bytes) -> Any:
    """The value of one answer as it came over the channel; raises ServiceError when the
    handler refused the request."""
    answer = json.loads(data)
    if isinstance(answer, dict) and "error" in answer and set(answer) == {"error"}:
        raise ServiceError(str(answer["error"]))
    return from_data(answer["result"]) if isinstance(answer, dict) and "result" in answer else answer


class Splitter:
    """Splits a byte stream into length-prefixed messages, refusing oversized ones.

    The reader takes one message at a time (``pop``) and feeds more bytes only when none is
    complete, so what it holds stays under one message and one read."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def pop(self) -> bytes | None:
        """The next complete message, or None. Raises ServiceError for an oversized one."""
        if len(self._buf) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack_from(self._buf)
        if length > MAX_MESSAGE_BYTES:
            raise ServiceError(f"message of {length} bytes is over the {MAX_MESSAGE_BYTES} byte cap")
        if len(self._buf) < _HEADER.size + length:
            return None
        message = bytes(self._buf[_HEADER.size : _HEADER.size + length])
        del self._buf[: _HEADER.size + length]
        return message
