"""Framing of the messages between the pool and its zygote: length-prefixed pickles.

Both ends are vouch's own trusted processes; bytes a run produced travel inside the
messages as opaque ``bytes`` and are only decoded (as JSON) by the pool.
"""

from __future__ import annotations

import pickle
import socket
import struct
from typing import Any

_HEADER = struct.Struct("<I")


def send_message(sock: socket.socket, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def pack_message(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


class MessageReader:
    """Splits a byte stream into length-prefixed pickled messages."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._buf += data
        out = []
        while len(self._buf) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buf)
            if len(self._buf) < _HEADER.size + length:
                break
            body = bytes(self._buf[_HEADER.size : _HEADER.size + length])
            del self._buf[: _HEADER.size + length]
            out.append(pickle.loads(body))  # noqa: S301 - both ends are vouch's own processes
        return out
