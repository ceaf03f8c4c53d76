"""Each case in a child of its own (``vouch.exec.runside.CaseRelay``): moving to the next case and
fetching the case's data for its child take one round trip, and this process never reads the
case's data (the multi-case runs themselves are tested through scoring, tests/bench/test_multi_case.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from vouch.exec import _service
from vouch.exec.runside import CaseRelay, ServiceError, to_data

HEADER = struct.Struct("<I")
GUARD_S = 60.0
"""How long a side waits for the other before the test gives up (a deadlock guard, not a timing)."""


@pytest.fixture
def caller() -> Iterator[socket.socket]:
    """The caller's end of a service channel whose run end is at ``SERVICE_FD`` in this process."""
    ours, theirs = socket.socketpair()
    saved = None
    try:
        saved = os.dup(_service.SERVICE_FD)
    except OSError:
        pass
    os.dup2(theirs.fileno(), _service.SERVICE_FD)
    theirs.close()
    ours.settimeout(GUARD_S)
    try:
        yield ours
    finally:
        ours.close()
        if saved is None:
            os.close(_service.SERVICE_FD)
        else:
            os.dup2(saved, _service.SERVICE_FD)
            os.close(saved)


def _read_frame(sock: socket.socket) -> bytes:
    def exact(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            assert chunk, "the run closed the channel"
            data += chunk
        return data

    (length,) = HEADER.unpack(exact(HEADER.size))
    return exact(length)


def _answer(value: Any) -> bytes:
    data = json.dumps(value).encode()
    return HEADER.pack(len(data)) + data


def _move_on(relay: CaseRelay, caller: socket.socket, answers: list[Any]) -> tuple[Any, list[Any]]:
    """``relay.move_on`` against a caller that reads both requests before it answers either."""
    seen: list[Any] = []

    def serve() -> None:
        seen.extend(json.loads(_read_frame(caller)) for _ in range(2))
        caller.sendall(b"".join(_answer(a) for a in answers))

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    got: list[Any] = []
    mover = threading.Thread(target=lambda: got.append(relay.move_on({"op": "next"}, {"op": "candidate"})), daemon=True)
    mover.start()
    mover.join(GUARD_S)
    server.join(GUARD_S)
    assert got, "move_on waited for an answer before it sent the case's request"
    return got[0], seen


def test_moving_on_and_fetching_the_case_are_one_round_trip(caller: socket.socket) -> None:
    relay = CaseRelay()
    candidate = {"calls": [{"name": "f", "arguments": {"x": (1, 2)}}]}
    answer, seen = _move_on(relay, caller, [{"result": {"go": True}}, {"result": to_data(candidate)}])
    assert answer == {"go": True}
    assert seen == [{"op": "next"}, ["case", {"op": "candidate"}]]
    assert relay.first_answer() == candidate  # what the case's child reads, tuple and all


def test_a_refused_case_request_is_the_childs_error(caller: socket.socket) -> None:
    relay = CaseRelay()
    answer, _ = _move_on(relay, caller, [{"result": {"go": True}}, {"error": "IndexError: no such case"}])
    assert answer == {"go": True}
    with pytest.raises(ServiceError, match="no such case"):
        relay.first_answer()


def test_when_no_case_follows_what_was_fetched_is_zeroed(caller: socket.socket) -> None:
    relay = CaseRelay()
    secret = "the case's candidate"
    answer, _ = _move_on(relay, caller, [{"result": {"go": False, "why": "done"}}, {"result": secret}])
    assert answer == {"go": False, "why": "done"}
    relay.drop()
    assert secret.encode() not in bytes(relay._buffer)


def test_a_case_cannot_signal_the_run_that_relays_it() -> None:
    """The relaying process is no PID 1 that drops signals: a case's signal to it fails, and it
    goes on to the next case."""
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: received.append(number))

    def child() -> int:
        try:
            os.kill(os.getppid(), signal.SIGUSR1)
        except ProcessLookupError:
            return 0
        return 3

    try:
        end = CaseRelay().run_case(child, GUARD_S)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert end.alone is None and not received, (end, received)
