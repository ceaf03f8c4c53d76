"""Inside a run: decide many cases one after another, each in a child process of its own.

A run that decides many cases with one piece of untrusted code (a verifier, say) keeps that
code out of its own process: the run's process is harness code only and never holds a case's
data. For each case it asks the caller to move on and, in the same round trip, fetches the
case's data for the child without reading it (``CaseRelay.move_on``); then it forks a child
(``CaseRelay.run_case``) that holds nothing of any other case: the child reads its own case
(``CaseRelay.first_answer``), runs the untrusted code, and reports its outcome to the caller.
The child never holds the run's service channel or its result descriptor: its requests reach
the caller through this process, which wraps each one as ``["case", request]`` without
reading it. So the caller tells the run's own requests (which move from case to case) from
the case's (which are always about the case the caller moved to), and the code under test can
neither ask for another case nor write the run's result. The bytes a child is given, sends or
is answered pass through one buffer that is zeroed after each case, so that no later child
finds them in the memory it inherits.

The run's process cannot be traced or read by a child (``isolate_parent`` makes it not
dumpable), nor signalled by it (``_linux.guard_parent``), and every process a case left behind
is killed before the next case starts (it is their subreaper). ``outside_state`` is what a case
could leave for the next outside its own memory; a run compares it between cases.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vouch.exec import _linux, _service
from vouch.exec._service import MAX_MESSAGE_BYTES, SERVICE_FD, ServiceError, answer_value, encode_request, frame

PREFIX = b'["case",'
SUFFIX = b"]"
_HEADER = struct.Struct("<I")
OUT_OF_MEMORY = 12
"""A child's exit code when the case ran out of memory."""
HARNESS_FAILED = 13
"""A child's exit code when the harness code of the child failed before or after the code under test."""
_SWEEP_S = 2.0


class _Late(Exception):
    """The case's time ran out."""


class _Broken(Exception):
    """The case's child broke the relay (a message over the cap, or cut short)."""


@dataclass(frozen=True)
class CaseEnd:
    """How one case's child ended, as the parent saw it."""

    alone: str | None
    """Why the case needs a run of its own (None: the child ended as the harness ends it)."""
    duration_s: float
    stop: bool = False
    """The run's service channel is in an unknown state (an answer is still on its way): the
    run must end here."""


def isolate_parent() -> None:
    """Make this process unreadable to its children (no ptrace, no /proc/<pid>/mem or fd) and
    the reaper of every process they leave behind."""
    _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
    _linux.prctl(_linux.PR_SET_CHILD_SUBREAPER, 1)


class CaseRelay:
    """Forks a child per case and carries its service requests to the caller and back."""

    def __init__(self) -> None:
        self._buffer = bytearray(MAX_MESSAGE_BYTES + _HEADER.size)
        self._view = memoryview(self._buffer)
        self._used = 0
        self._held = 0
        """The length of the answer ``move_on`` left in the buffer for the next case's child."""
        self._pending = False
        """A request went to the caller and its answer has not been read yet."""

    def move_on(self, move: dict[str, Any], first: dict[str, Any]) -> Any:
        """Ask the caller to move to the next case (``move``, this process's own request) and, in
        the same round trip, send the case's first request (``first``, wrapped as the case's);
        returns the answer to ``move``.

        The answer to ``first`` stays in the buffer, unread by this process, for the case's
        child to read (``first_answer``); it is zeroed with the case, or by ``drop`` when no
        case follows.

        Raises:
            ServiceError: The service channel closed or broke.
        """
        own, case = encode_request(move), PREFIX + encode_request(first) + SUFFIX
        if max(len(own), len(case)) > MAX_MESSAGE_BYTES:
            raise ServiceError(f"a request over the {MAX_MESSAGE_BYTES} byte cap")
        try:
            _write_all(SERVICE_FD, frame(own) + frame(case), None)
            answer = answer_value(bytes(self._view[: self._read_answer(None)]))
            self._held = self._read_answer(None)
        except OSError as exc:
            raise ServiceError(f"the service channel broke ({exc})") from None
        return answer

    def first_answer(self) -> Any:
        """In the case's child: the caller's answer to the case's first request (``move_on``).

        Raises:
            ServiceError: The caller refused the request.
        """
        return answer_value(bytes(self._view[: self._held]))

    def drop(self) -> None:
        """Zero what ``move_on`` left in the buffer: no case follows."""
        self._zero()

    def run_case(self, child: Callable[[], int], timeout_s: float) -> CaseEnd:
        """Run ``child`` (which returns an exit code) in a forked child with a service channel
        of its own; wait for it at most ``timeout_s``."""
        ours, theirs = socket.socketpair()
        started = time.monotonic()
        # A raw clone: C libraries' fork handlers (a BLAS thread pool's, say) would wait for
        # threads the run's process never had, since it was itself cloned from the pool's.
        pid = _linux.clone_process(0)
        if pid == 0:  # pragma: no cover - the child's side, measured by the tests through runs
            _enter_child(ours, theirs, child)
        theirs.close()
        deadline = started + timeout_s
        why: str | None = None
        stop = False
        try:
            self._relay(ours.fileno(), deadline)
            status = _wait_exit(pid, deadline)
        except _Late:
            status, why = None, f"the case took over {timeout_s:g} s"
            stop = self._pending
        except _Broken as exc:
            status, why = None, str(exc)
        finally:
            ours.close()
            _end_all(pid)
            self._zero()
        duration = time.monotonic() - started
        if why is None:
            why = _why(status)
        return CaseEnd(alone=why, duration_s=duration, stop=stop)

    def _relay(self, fd: int, deadline: float) -> None:
        while True:
            length = self._read_message(fd, deadline)
            if length is None:
                return
            self._pending = True
            total = len(PREFIX) + length + len(SUFFIX)
            _write_all(SERVICE_FD, _HEADER.pack(total) + PREFIX, None)
            _write_all(SERVICE_FD, self._view[:length], None)
            _write_all(SERVICE_FD, SUFFIX, None)
            answer = self._read_answer(deadline)
            self._pending = False
            try:
                _write_all(fd, _HEADER.pack(answer), deadline)
                _write_all(fd, self._view[:answer], deadline)
            except OSError:
                return  # the child went away; its exit status says how

    def _read_message(self, fd: int, deadline: float) -> int | None:
        """The child's next request, into the buffer; None when the child closed its end."""
        header = _read_into(fd, self._view[: _HEADER.size], deadline, eof_ok=True)
        if header == 0:
            return None
        if header < _HEADER.size:
            raise _Broken("the case's process cut a request short")
        length: int = _HEADER.unpack_from(self._buffer)[0]
        if length > MAX_MESSAGE_BYTES:
            raise _Broken(f"the case's process sent a request over the {MAX_MESSAGE_BYTES} byte cap")
        self._used = max(self._used, length)
        if _read_into(fd, self._view[:length], deadline, eof_ok=True) < length:
            raise _Broken("the case's process cut a request short")
        return length

    def _read_answer(self, deadline: float | None) -> int:
        # The caller's answers are well formed; only the case's time can run out meanwhile.
        _read_into(SERVICE_FD, self._view[: _HEADER.size], deadline, eof_ok=False)
        length: int = _HEADER.unpack_from(self._buffer)[0]
        if length > len(self._buffer):
            raise OSError("an answer over the service channel's cap")
        self._used = max(self._used, length)
        _read_into(SERVICE_FD, self._view[:length], deadline, eof_ok=False)
        return length

    def _zero(self) -> None:
        used = max(self._used, _HEADER.size)
        ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(self._buffer)), 0, used)
        self._used = 0
        self._held = 0
        self._pending = False


def _enter_child(ours: socket.socket, theirs: socket.socket, child: Callable[[], int]) -> None:
    """The child's first steps: every descriptor of the run closed but stdio and its own end of
    the relay, which becomes its service channel; a process group of its own; then the case;
    then exit (the harness's result record is the run's, never the child's to write)."""
    code = HARNESS_FAILED
    try:
        ours.close()
        fd = theirs.detach()
        os.closerange(3, fd)  # the run's service, result and readiness descriptors among them
        os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))
        _service.SERVICE_FD = fd  # ``request`` in this process now asks through the relay
        os.setpgid(0, 0)
        # The run's process is no PID 1 that drops signals it has no handler for: the case
        # must not stop or end the run that relays every other case.
        _linux.guard_parent()
        code = child()
    except MemoryError:
        code = OUT_OF_MEMORY
    except BaseException:  # noqa: BLE001, S110 - the harness's own step failed: the exit code says so
        pass
    finally:
        os._exit(code)


def _read_into(fd: int, view: memoryview, deadline: float | None, *, eof_ok: bool) -> int:
    """Fill ``view`` from ``fd``; returns how much was read (less only at end of file)."""
    got = 0
    while got < len(view):
        _wait_readable(fd, deadline)
        try:
            count = os.readv(fd, [view[got:]])
        except OSError:
            count = 0
        if count == 0:
            if not eof_ok:
                raise OSError("the service channel closed")
            return got
        got += count
    return got


def _write_all(fd: int, data: bytes | memoryview, deadline: float | None) -> None:
    view = memoryview(data)
    while view:
        if deadline is not None:
            _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise _Late
        view = view[os.write(fd, view) :]


def _wait_readable(fd: int, deadline: float | None) -> None:
    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        raise _Late


def _wait_exit(pid: int, deadline: float) -> int:
    """The wait status of child ``pid`` once it exits; raises ``_Late`` past ``deadline``."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise _Late
    finally:
        os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    return status


def _end_all(pid: int) -> None:
    """Kill the case's child and everything it started, and reap them all."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    until = time.monotonic() + _SWEEP_S
    while time.monotonic() < until:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if reaped:
            continue
        for child in _children():
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.001)
    raise RuntimeError("a process a case started would not end")


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == me:
            found.append(int(entry))
    return found


def _why(status: int | None) -> str | None:
    if status is None:
        return "the case's process did not end"
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        if code == 0:
            return None
        if code == OUT_OF_MEMORY:
            return "the case ran out of memory"
        return f"the case's process ended without a decision (exit code {code})"
    return f"the case's process ended without a decision (signal {os.WTERMSIG(status)})"


def outside_state() -> tuple[object, ...]:
    """What one case's child could leave for the next outside its own memory: the files of the
    working directory and the private temporary directories, System V IPC objects and keys."""
    listings = tuple(_listing(path) for path in (".", "/tmp", "/var/tmp", "/dev/shm"))  # noqa: S108 - the run's private dirs
    tables = []
    for path in ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem", "/proc/keys"):
        try:
            with open(path) as handle:
                tables.append(handle.read())
        except OSError:
            tables.append("")
    return (*listings, *tables)


def _listing(path: str) -> tuple[tuple[str, int, int, int], ...]:
    try:
        stats = [(entry.name, entry.stat(follow_symlinks=False)) for entry in os.scandir(path)]
    except OSError:
        return ()
    return tuple(sorted((name, st.st_size, st.st_mtime_ns, st.st_ctime_ns) for name, st in stats))
