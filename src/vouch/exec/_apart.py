"""Inside a run: keep a program under judgement in a process of its own, and call it with data.

A witness test judges a program. When both share one interpreter, the program can reach every
comparison the test makes (an ``__eq__`` that is always True, a patched ``math.isclose``, a
frame written with the harness's nonce), so the test's verdict is the program's claim. Here the
judging process (the harness running the test) never imports the program: it forks a child
that loads the program and answers calls, and only JSON data crosses back. A return value that
cannot cross as plain data is not a value any requirement can ask for, and the call fails the
test by an ``AssertionError``.

Before the child exists the judging process makes itself non-dumpable (so the child, which has
the same uid, cannot ptrace it, read or write its memory, or reach its descriptors through
``/proc``), removes the test files from the working directory (the test module is compiled by
then; the program cannot read the expected values off the disk) and drops the working directory
from ``sys.path`` (a module the child writes there is never imported by the judge). The child
closes the harness's result descriptor before the program loads. What the child can still do is
end or stop the judging process (a run that is ``killed`` or ``timeout``): an outcome the audit
never counts as a pass.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from vouch.exec import _linux
from vouch.exec._values import DataError, decode, from_data, to_data

MAX_REPLY_BYTES = 16 * 1024 * 1024
_HEADER = struct.Struct("<I")
_MESSAGE_CHARS = 200


class NotData(AssertionError):
    """The program returned something that is not plain data: not a value a requirement asks for."""


class ProgramGone(Exception):
    """The program's process ended (or broke the channel) instead of answering."""


def _send(sock: socket.socket, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def _recv(sock: socket.socket, limit: int) -> Any:
    """One message, or None when the other end is gone. Raises ValueError on a broken one."""
    head = _recv_exact(sock, _HEADER.size)
    if head is None:
        return None
    (length,) = _HEADER.unpack(head)
    if length > limit:
        raise ValueError(f"a reply of {length} bytes is over the {limit} byte cap")
    body = _recv_exact(sock, length)
    if body is None:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"a reply that is not JSON ({type(exc).__name__})") from None


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text[:_MESSAGE_CHARS]


def _remote_exception(kind: str, message: str) -> Exception:
    """An exception of the type the program raised, rebuilt from its name (never unpickled)."""
    cls = getattr(builtins, kind, None)
    if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == "builtins":
        try:
            rebuilt: Exception = cls(message)
            return rebuilt
        except Exception:  # noqa: BLE001, S110 - a builtin that takes other arguments: named below
            pass
    # Not a builtin Exception (a class of the program's, or SystemExit / KeyboardInterrupt): an
    # Exception of that name, so that the test sees that the program raised instead of returning.
    named: type[Exception] = type(kind if kind.isidentifier() else "ProgramError", (Exception,), {})
    return named(message)


class Program:
    """A program (a Python file of the run) loaded in a child process, called with data.

    Args:
        path: the program's file, imported in the child as ``module_name``.
        module_name: the name the program is imported under.
        hide: files removed from the working directory before the child starts (the tests).
    """

    def __init__(self, path: str, module_name: str, hide: Sequence[str] = ()) -> None:
        self.path = os.path.abspath(path)
        self.module_name = module_name
        self.hide = tuple(os.path.abspath(p) for p in hide)
        self._sock: socket.socket | None = None
        self._pid: int | None = None
        self._gone: str | None = None

    # --- the judging side ---------------------------------------------------------------

    def module(self) -> ModuleType:
        """A module whose attributes are the program's: its callables are called in its process,
        anything else is copied as data (``from solution import f`` fails as it would in-process
        when the program has no ``f``)."""
        program = self
        proxy = ModuleType(self.module_name, f"{self.module_name}, called in a process of its own")

        def __getattr__(name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return program.attribute(name)

        proxy.__getattr__ = __getattr__  # type: ignore[method-assign]
        proxy.__file__ = self.path
        return proxy

    def attribute(self, name: str) -> Any:
        answer = self._ask({"op": "get", "name": name})
        if answer.get("missing"):
            raise AttributeError(f"module {self.module_name!r} has no attribute {name!r}")
        if answer.get("callable"):
            return _Remote(self, name)
        return self._value(f"{self.module_name}.{name}", answer)

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            request = {"op": "call", "name": name, "args": to_data(list(args)), "kwargs": to_data(kwargs)}
        except (TypeError, ValueError, RecursionError) as exc:
            raise TypeError(f"the arguments of {name} cannot cross to the program as data: {exc}") from None
        answer = self._ask(request)
        shown = f"{name}{tuple(args)!r}"[:_MESSAGE_CHARS]
        if answer.get("missing"):
            raise ImportError(f"cannot import name {name!r} from {self.module_name!r}")
        if "raised" in answer:
            raise _remote_exception(str(answer["raised"]), str(answer.get("message", "")))
        return self._value(shown, answer)

    def _value(self, shown: str, answer: dict[str, Any]) -> Any:
        if "not_data" in answer:
            raise NotData(
                f"{shown} returned an object of type {str(answer['not_data'])[:80]}, which is not plain data "
                "(compared in the program's own process it could claim to equal anything)"
            )
        try:
            return decode(answer.get("value"))
        except DataError as exc:
            raise NotData(f"{shown} sent back a value that is not valid data ({exc})") from None

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._gone is not None:
            raise ProgramGone(self._gone)
        sock = self._start()
        try:
            _send(sock, request)
            answer = _recv(sock, MAX_REPLY_BYTES)
        except (OSError, ValueError) as exc:
            answer = None
            self._gone = f"the program broke its channel ({_describe(exc)})"
        if not isinstance(answer, dict):
            self._gone = self._gone or self._ended()
            raise ProgramGone(self._gone)
        if "load_error" in answer:
            raise ImportError(f"the program does not load: {str(answer['load_error'])[:_MESSAGE_CHARS]}")
        return answer

    def _ended(self) -> str:
        if self._pid is None:
            return "the program's process ended"
        try:
            _, status = os.waitpid(self._pid, 0)
        except ChildProcessError:
            return "the program's process ended"
        self._pid = None
        if os.WIFSIGNALED(status):
            return f"the program's process was killed by signal {os.WTERMSIG(status)} instead of answering"
        return f"the program's process exited with code {os.WEXITSTATUS(status)} instead of answering"

    def _start(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        # Nothing of the judge is within the child's reach once it starts: not its memory or
        # descriptors (non-dumpable), not the tests (removed; compiled already), not its imports.
        _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
        workdir = os.path.dirname(self.path)
        sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != workdir]
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; its outcome is what it answers
            parent.close()
            _child_main(child, self.path, self.module_name, self.hide)
        child.close()
        self._sock, self._pid = parent, pid
        return parent

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None


class _Remote:
    """A callable of the program, called in the program's process."""

    def __init__(self, program: Program, name: str) -> None:
        self._program = program
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._program.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<{self._program.module_name}.{self.__name__}, called in the program's process>"


# --- the program's side --------------------------------------------------------------------


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    sink = open(os.devnull, "w")  # noqa: SIM115 - closed below
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = sink
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        sink.close()


def _hide(paths: Sequence[str]) -> None:
    """Cover ``paths`` (the tests) with /dev/null in a mount namespace of the child's own.

    The child has no capability in the run's namespaces; a user namespace of its own (mapping
    only its uid) gives it one to mount with, and it drops every capability before the program
    loads. A mount made in a namespace the program holds no capability over cannot be undone by
    it, nor by any namespace it nests further (the mounts come locked).
    """
    uid, gid = os.getuid(), os.getgid()
    _linux.prctl(_linux.PR_SET_DUMPABLE, 1)  # its own /proc/self files, to write the maps
    _linux.unshare(_linux.CLONE_NEWUSER | _linux.CLONE_NEWNS)
    _linux.map_own_ids(uid, gid)
    for path in paths:
        if os.path.exists(path):
            _linux.mount("/dev/null", path, None, _linux.MS_BIND)
    _linux.drop_all_capabilities()
    _linux.prctl(_linux.PR_SET_NO_NEW_PRIVS, 1)


def _child_main(sock: socket.socket, path: str, module_name: str, hide: Sequence[str]) -> None:
    """Load the program and answer requests until the judge goes away. Never returns."""
    try:
        if hide:
            # Under full isolation a run may always nest a user namespace. Without one (weak
            # isolation, recorded in every result) the tests stay readable to the program.
            with contextlib.suppress(OSError):
                _hide(hide)
        # The harness's result descriptor and every other inherited one go before any of the
        # program's code runs.
        own = sock.fileno()
        os.closerange(3, own)
        os.closerange(own + 1, 1 << 20)
        _serve(sock, path, module_name)
    finally:
        os._exit(0)


def _serve(sock: socket.socket, path: str, module_name: str) -> None:
    from vouch.exec._harness import load_module_file

    module: ModuleType | None = None
    load_error: str | None = None
    with _quiet():
        try:
            module = load_module_file(path, module_name)
        except BaseException as exc:  # noqa: BLE001 - a program that does not load is an answer
            load_error = f"{type(exc).__name__}: {_describe(exc)}"
    while True:
        try:
            request = _recv(sock, MAX_REPLY_BYTES)
        except ValueError:
            return
        if not isinstance(request, dict):
            return
        if module is None:
            _send(sock, {"load_error": load_error})
            continue
        _send(sock, _answer(module, request))


def _answer(module: ModuleType, request: dict[str, Any]) -> dict[str, Any]:
    name = str(request.get("name"))
    try:
        attribute = getattr(module, name)
    except BaseException:  # noqa: BLE001 - a module __getattr__ of the program's may raise anything
        return {"missing": True}
    if request.get("op") == "get":
        if callable(attribute):
            return {"callable": True}
        value = attribute
    else:
        try:
            with _quiet():
                value = attribute(*from_data(request.get("args", [])), **from_data(request.get("kwargs", {})))
        except BaseException as exc:  # noqa: BLE001 - the program raised: that is its answer
            return {"raised": type(exc).__name__, "message": _describe(exc)}
    try:
        return {"value": to_data(value)}
    except (TypeError, ValueError, RecursionError):
        return {"not_data": type(value).__name__}
