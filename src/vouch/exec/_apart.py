"""Inside a run: keep a program under judgement in a process of its own, and call it with data.

A witness test judges a program. When both share one interpreter, the program can reach every
comparison the test makes (an ``__eq__`` that is always True, a patched ``math.isclose``, a
frame written with the harness's nonce), so the test's verdict is the program's claim. Here the
judging process (the harness running the test) never imports the program: it starts a child
that loads the program and answers calls, and only JSON data crosses back. A return value that
cannot cross as plain data is not a value any requirement can ask for, and the call fails the
test by an ``AssertionError``.

Before the child exists the judging process makes itself non-dumpable (so the child, which has
the same uid, cannot ptrace it, read or write its memory, or reach its descriptors through
``/proc``), drops the working directory from ``sys.path`` (a module the child writes there is
never imported by the judge) and ignores every signal it has no use for, so that no signal the
program sends does anything to it (the child puts the dispositions back before the program
loads). Where the run may nest namespaces, the child starts in user, mount and PID namespaces of
its own: the test files are covered in its mount namespace (the test module is compiled by then;
the program cannot read the expected values off the disk), and it is PID 1 of its PID namespace,
as the harness is of the run's, so it can name no other process and ``getppid()`` is 0 as in
every other run. Where the run may not (``user.max_user_namespaces`` is 0 in it), the child is a
plain fork leading a session of its own, and the test files are empty while it lives. The child
closes the harness's result descriptor before the program loads.

What the program does to its judge is its own failure. Each answer has a deadline; a program
that does not answer within it (it sleeps, stops, loops), ends its process or breaks the channel
fails the call by an ``AssertionError`` that names what happened (``ProgramGone``), and the judge
ends the program and goes on to report the test.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import resource
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

from vouch.exec import _linux
from vouch.exec._values import DataError, decode, from_data, to_data

MAX_REPLY_BYTES = 16 * 1024 * 1024
_HEADER = struct.Struct("<I")
_MESSAGE_CHARS = 200
_OWN_NAMESPACES = _linux.CLONE_NEWUSER | _linux.CLONE_NEWNS | _linux.CLONE_NEWPID
HANDSHAKE_S = 60.0
"""How long the judge waits for the child's setup to say it is ready (no program code runs before)."""
_EXIT_GRACE_S = 0.5
"""How long a program whose channel ended may take to exit before it is ended."""


class NotData(AssertionError):
    """The program returned something that is not plain data: not a value a requirement asks for."""


class ProgramGone(AssertionError):
    """The program did not answer: its process ended, broke the channel, or ran past its deadline.

    An ``AssertionError``: the program owes the test an answer, and what it did instead is the
    program's failure, never the judge's."""


class NoAnswer(ProgramGone):
    """The program gave no answer within its deadline; the judge ended it."""


class ChildSetupError(BaseException):
    """The child could not be set up before the program loaded: the judge's own failure, so not
    an ``Exception`` (a test that turns every exception of a call into an assertion lets it by)."""


def _send(sock: socket.socket, payload: dict[str, Any], deadline: float | None = None) -> None:
    data = json.dumps(payload).encode()
    _settimeout(sock, deadline)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _settimeout(sock: socket.socket, deadline: float | None) -> None:
    if deadline is None:
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    sock.settimeout(left)


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        # The deadline is for the whole message: a program that sends a byte at a time gains nothing.
        _settimeout(sock, deadline)
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def _recv(sock: socket.socket, limit: int, deadline: float | None = None) -> Any:
    """One message, or None when the other end is gone. Raises ValueError on a broken one and
    TimeoutError when ``deadline`` (``time.monotonic()``) passes first."""
    head = _recv_exact(sock, _HEADER.size, deadline)
    if head is None:
        return None
    (length,) = _HEADER.unpack(head)
    if length > limit:
        raise ValueError(f"a reply of {length} bytes is over the {limit} byte cap")
    body = _recv_exact(sock, length, deadline)
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
        hide: files covered in the child's mount namespace before the program loads (the tests).
        answer_s: how long the judge waits for any one answer (None: for ever).
        answers_s: how long the judge waits for all the program's answers together (None: no
            bound), so that a program that answers just in time, again and again, cannot hold
            the judge past its run's limit either.
        env: the program's environment (default: the run's as it is now, when the judge has not
            started the test yet). The child starts with it, so a program sees what it sees in
            any other run of its own (T0's), not what the judging test adds
            (``PYTEST_CURRENT_TEST``, ``PYTEST_VERSION``).
        serve: the program's side (``Serve``): given the channel, the program's path and its
            source, it loads the program and answers until the judge goes. Default: the program
            imported as a module whose names the judge gets and calls (``serve_module``). A
            caller that builds the program's process as a benchmark's harness builds it (the
            function form's T0 and witness runs) passes its own.

    The child's process is the same whoever judges it: its standard streams are the run's as
    they were when the ``Program`` was made (not a test runner's capture), the channel is
    descriptor 3 and no other is open, every signal has a fresh interpreter's disposition, and,
    where the run may nest namespaces, its working directory is an empty directory of its own
    (the run's files, the tests among them, out of sight) and ``/proc`` shows its own PID
    namespace alone.
    """

    def __init__(
        self,
        path: str,
        module_name: str,
        hide: Sequence[str] = (),
        *,
        answer_s: float | None = None,
        answers_s: float | None = None,
        env: dict[str, str] | None = None,
        serve: Serve | None = None,
    ) -> None:
        self.path = os.path.abspath(path)
        self.serve = serve or partial(serve_module, module_name=module_name)
        # The run's own streams, before a test runner captures them: the program writes where
        # any run's program writes, whoever judges it.
        self._stdio = [os.dup(fd) for fd in (0, 1, 2)]
        self.env = _program_environment(dict(os.environ) if env is None else env)
        self.module_name = module_name
        self.hide = tuple(os.path.abspath(p) for p in hide)
        self.answer_s = answer_s
        self.answers_s = answers_s
        self._waited = 0.0
        self._sock: socket.socket | None = None
        self._pid: int | None = None
        self._gone: str | None = None
        self._apart = False
        self._orphan = False
        """The program's parent is the run's init, not the judge (``_start_orphan``)."""
        self._saved: dict[int, Any] = {}
        self._removed: dict[str, bytes] = {}

    # --- the judging side ---------------------------------------------------------------

    @property
    def gone(self) -> str | None:
        """Why the program answers no more (its process ended, or the judge ended it); None
        while it may still answer."""
        return self._gone

    def module(self) -> ModuleType:
        """A module whose attributes are the program's: its callables are called in its process,
        anything else is copied as data (``from solution import f`` fails as it would in-process
        when the program has no ``f``).

        A program that does not load, or that does not answer while the test module imports
        (it stalls, ends or breaks the channel at import), fails each call of the names the test
        imported instead: the test runs, and fails by what the program did."""
        program = self
        proxy = ModuleType(self.module_name, f"{self.module_name}, called in a process of its own")

        def __getattr__(name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            try:
                return program.attribute(name)
            except (ProgramGone, NotLoaded) as exc:
                return _Failed(name, exc)

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

    def _deadline(self) -> tuple[str, float | None]:
        """How the wait for the next answer is bounded (for the message), and its deadline on the
        monotonic clock (None: no bound)."""
        bounds = []
        if self.answer_s is not None:
            bounds.append((self.answer_s, f"{_seconds(self.answer_s)} s"))
        if self.answers_s is not None:
            left = max(0.0, self.answers_s - self._waited)
            bounds.append((left, f"the {_seconds(self.answers_s)} s its answers may take in all"))
        if not bounds:
            return "", None
        wait, shown = min(bounds)
        return shown, time.monotonic() + wait

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._gone is not None:
            raise ProgramGone(self._gone)
        sock = self._start()
        bound, deadline = self._deadline()
        began = time.monotonic()
        broken = None
        try:
            _send(sock, request, deadline)
            answer = _recv(sock, MAX_REPLY_BYTES, deadline)
        except TimeoutError:
            self._end(f"the program gave no answer within {bound}; it was ended")
            raise NoAnswer(f"the program gave no answer within {bound}") from None
        except (OSError, ValueError) as exc:
            answer = None
            broken = f"the program broke its channel ({_describe(exc)})"
        except BaseException:
            # Interrupted between question and answer (the test's own timer): the channel is out
            # of step from here on, so no later call may read this answer as its own.
            self._end("a call was interrupted before the program answered; the program was ended")
            raise
        finally:
            self._waited += time.monotonic() - began
        if not isinstance(answer, dict):
            self._end(self._ended() or broken or "the program closed its channel instead of answering")
            raise ProgramGone(self._gone)
        if "setup_error" in answer or "setup" in answer:
            # The child's setup spoke once, before the program loaded (``_handshake``): whatever
            # comes after is the program speaking, and vouch's failure is not its to claim.
            self._end("the program sent a setup message after its process was set up")
            raise ProgramGone(self._gone or "the program sent a setup message after its process was set up")
        if "load_error" in answer:
            raise NotLoaded(f"the program does not load: {str(answer['load_error'])[:_MESSAGE_CHARS]}")
        return answer

    def _ended(self) -> str | None:
        """How the program's process ended, after its channel did; None when it lives on past a
        short grace (it closed its end of the channel, or sent what is not a message)."""
        if self._pid is None:
            return "the program's process ended"
        give_up = time.monotonic() + _EXIT_GRACE_S
        if self._orphan:
            return self._orphan_ended(give_up)
        while True:
            try:
                pid, status = os.waitpid(self._pid, os.WNOHANG)
            except ChildProcessError:
                self._pid = None
                return "the program's process ended"
            if pid:
                break
            if time.monotonic() > give_up:
                return None
            time.sleep(0.01)
        self._pid = None
        if os.WIFSIGNALED(status):
            return f"the program's process was killed by signal {os.WTERMSIG(status)} instead of answering"
        return f"the program's process exited with code {os.WEXITSTATUS(status)} instead of answering"

    def _orphan_ended(self, give_up: float) -> str | None:
        """``_ended`` for a program whose parent is the run's init (``_start_orphan``)."""
        assert self._pid is not None
        while not _ended_orphan(self._pid):
            if time.monotonic() > give_up:
                return None
            time.sleep(0.01)
        self._pid = None
        return "the program's process ended instead of answering"

    def _end(self, why: str) -> None:
        self._gone = self._gone or why
        self.close()

    def start(self) -> None:
        """Start the program's process now (else it starts at the first request). A judge starts
        it before it does anything else, so that the program's process is made from the same
        judge whatever the judge goes on to do; the files in ``hide`` are out of the program's
        reach from here on (a judge that runs a test from them reads them first)."""
        if self._sock is None and self._gone is None:
            self._start()

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request of the caller's own kind (``serve`` answers it); the program's answer.

        Raises:
            ProgramGone: The program did not answer (``NoAnswer`` past its deadline).
            NotLoaded: The program does not load.
        """
        return self._ask(request)

    def _start(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        # Nothing of the judge is within the child's reach once it starts: not its memory or
        # descriptors (non-dumpable), not the tests (covered), not its imports, not its process.
        _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
        workdir = os.path.dirname(self.path)
        sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != workdir]
        # A signal the judge has no use for does nothing to it while the program lives (a PID 1
        # drops those it keeps the default action for; its own handlers, SIGINT's
        # KeyboardInterrupt first, are set aside). The child sets every one afresh before the program loads.
        self._saved = _set_aside_signals()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        setup = _Setup(self.path, self.module_name, self.hide, self.env, self._stdio, self.serve)
        # The process is made by a thread of its own: the child's stack is that thread's, the same
        # whichever judge (T0's run, a witness's, a vote's) started it and wherever it was.
        pid = _from_a_thread(lambda: self._spawn(parent, child, setup, (os.getuid(), os.getgid())))
        child.close()
        self._sock, self._pid = parent, pid
        self._handshake(parent)
        return parent

    def _spawn(self, parent: socket.socket, child: socket.socket, setup: _Setup, ids: tuple[int, int]) -> int:
        try:
            pid = _linux.clone_process(_OWN_NAMESPACES)
            self._apart = True
        except OSError:
            # The run may not nest namespaces: a fork, and the tests are empty while the program
            # lives (the judge holds what it needs of them by now).
            self._removed = _remove(self.hide)
            self._apart = False
            self._orphan = True
            return _start_orphan(lambda: _child_main(child, setup, None), parent)
        if pid == 0:  # pragma: no cover - the child; its outcome is what it answers
            parent.close()
            _child_main(child, setup, ids)
        return pid

    def _handshake(self, sock: socket.socket) -> None:
        """Read the child's setup outcome, which it sends before the program loads and before
        any request: the program's code has not run when it is written, and a stream keeps its
        order, so nothing the program writes can come first. A setup failure, or no word at
        all (the child ended or stalled before the program could load), is vouch's own failure."""
        try:
            first = _recv(sock, MAX_REPLY_BYTES, time.monotonic() + HANDSHAKE_S)
        except (TimeoutError, OSError, ValueError) as exc:
            first = {"setup_error": f"no word from the child's setup ({_describe(exc)})"}
        if first == {"setup": "ready"}:
            return
        if not isinstance(first, dict) or "setup_error" not in first:
            first = {"setup_error": "the child's setup ended before it said whether it could run the program"}
        self._end("its process could not be set up")
        raise ChildSetupError(f"the program's process could not be set up: {str(first['setup_error'])[:200]}")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._pid is not None:
            # PID 1 of its namespace: when it goes, the kernel ends every process it started.
            # A plain fork leads a session: its process group goes with it.
            if not self._apart:
                with contextlib.suppress(OSError):
                    os.killpg(self._pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            if not self._orphan:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self._pid, 0)
            self._pid = None
        _restore_signals(self._saved)
        self._saved = {}
        for fd in self._stdio:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._stdio = []
        for path, data in self._removed.items():
            # Written anew by path, never opened: the program may have left a FIFO there.
            with contextlib.suppress(OSError):
                fresh = f"{path}.{os.getpid()}.restored"
                with open(fresh, "xb") as f:
                    f.write(data)
                os.replace(fresh, path)
        self._removed = {}


_KEPT_SIGNALS = {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGCONT, signal.SIGALRM, signal.SIGPIPE}
"""Signals the judge keeps as they are: those no process can ignore, those whose default is
harmless, SIGALRM (a witness's own timer) and SIGPIPE (Python ignores it already)."""


def _from_a_thread(spawn: Callable[[], int]) -> int:
    """``spawn()`` called by a new thread named as a main thread is; its result, or what it raised.

    A process forked by that thread has that thread alone, so its stack holds none of the judge's
    frames (a fork copies the forking thread's stack): the judge waits here, holding no lock."""
    out: list[Any] = []

    def run() -> None:
        try:
            with warnings.catch_warnings():
                # Python 3.12 warns of a fork in a process with threads; the other is waiting here.
                warnings.simplefilter("ignore", DeprecationWarning)
                out.append(spawn())
        except BaseException as exc:  # noqa: BLE001 - raised again in the judge's thread
            out.append(exc)

    thread = threading.Thread(target=run, name="MainThread", daemon=True)
    thread.start()
    thread.join()
    if not out:
        raise ChildSetupError("the program's process could not be set up: its starter thread gave nothing")
    if isinstance(out[0], BaseException):
        raise out[0]
    return int(out[0])


def _start_orphan(main: Callable[[], None], judge_end: socket.socket) -> int:
    """Start ``main`` in a grandchild whose parent exits at once, so that the kernel makes the
    run's init its parent: a run's own process (T0's, the search's) has that parent too, and the
    program's parent must not tell a witness run from them. Returns the grandchild's pid.

    The child guards the judge (``_linux.guard_parent``) while the judge is still its parent;
    the grandchild inherits the filter, so the program cannot signal its judge either.

    Raises:
        ChildSetupError: The child could not guard the judge or start the grandchild.
    """
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:  # pragma: no cover - the child; it only starts the grandchild
        try:
            os.close(read_end)
            judge_end.close()
            _linux.guard_parent()
            second = os.fork()
            if second == 0:
                os.close(write_end)
                main()
            os.write(write_end, str(second).encode())
        except BaseException:  # noqa: BLE001, S110 - the judge reads that no pid came
            pass
        finally:
            os._exit(0)
    os.close(write_end)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(first, 0)
    try:
        data = os.read(read_end, 32)
    finally:
        os.close(read_end)
    if not data.isdigit():
        raise ChildSetupError("the program's process could not be set up: its starter gave no pid")
    return int(data)


def _ended_orphan(pid: int) -> bool:
    """Whether a process that is not the judge's child has ended (a zombie, or gone), from
    ``/proc``. How it ended is not readable: the kernel shows its exit code only to a process
    that may trace it, and the judge made the program non-dumpable before it started."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return True
    fields = stat[stat.rfind(")") + 2 :].split()
    return bool(fields) and fields[0] in ("Z", "X")


_JUDGE_ENV_PREFIXES = ("PYTEST_", "_PYTEST")
"""What a test runner (pytest) adds to the environment of the process it runs a test in."""


def _program_environment(env: dict[str, str]) -> dict[str, str]:
    """The environment a program judged apart runs with: the run's own, without what a test
    runner adds (a program that asks ``PYTEST_CURRENT_TEST`` must not learn it is judged)."""
    return {k: v for k, v in env.items() if not k.startswith(_JUDGE_ENV_PREFIXES)}


def _set_aside_signals() -> dict[int, Any]:
    """Ignore every other signal; returns the dispositions it replaced."""
    saved: dict[int, Any] = {}
    for signum in signal.valid_signals():
        if signum in _KEPT_SIGNALS:
            continue
        with contextlib.suppress(OSError, ValueError):
            saved[signum] = signal.signal(signum, signal.SIG_IGN)
    return saved


def _restore_signals(saved: dict[int, Any]) -> None:
    for signum, handler in saved.items():
        with contextlib.suppress(OSError, ValueError, TypeError):
            # None: a handler set outside Python (faulthandler's); the default stands in for it.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _remove(paths: Sequence[str]) -> dict[str, bytes]:
    """Empty each file (it stays, for pytest's checks by path); returns what they held."""
    removed = {}
    for path in paths:
        with contextlib.suppress(OSError), open(path, "r+b") as f:
            removed[path] = f.read()
            f.truncate(0)
    return removed


def _seconds(value: float | None) -> str:
    return f"{value or 0.0:.3g}"


class NotLoaded(ImportError):
    """The program raised while it loaded in its process."""


class _Remote:
    """A callable of the program, called in the program's process."""

    def __init__(self, program: Program, name: str) -> None:
        self._program = program
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._program.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<{self._program.module_name}.{self.__name__}, called in the program's process>"


class _Failed:
    """A name the test imported while the program did not answer (or did not load): each call
    fails as the import would have."""

    def __init__(self, name: str, error: Exception) -> None:
        self._error = error
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise type(self._error)(*self._error.args)

    def __repr__(self) -> str:
        return f"<{self.__name__}: {_describe(self._error)}>"


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


Serve = Callable[[socket.socket, str, str], None]
"""The program's side of a ``Program``: ``serve(channel, path, source)`` loads the program (its
source was read before the run's files went out of sight) and answers requests until the judge
goes (``receive`` gives None). It runs in the child, after the setup's word."""


@dataclass(frozen=True)
class _Setup:
    """What the child needs to set itself up and load the program (``_child_main``)."""

    path: str
    module_name: str
    hide: Sequence[str]
    env: dict[str, str]
    stdio: Sequence[int]
    serve: Serve


CHANNEL_FD = 3
"""The descriptor of the program's end of the channel, in every child."""
_ALONE_TMPFS = "size=64m,mode=0700"


def _own_namespaces(ids: tuple[int, int], paths: Sequence[str]) -> None:
    """In the user, mount and PID namespaces the child was cloned into: map its ids to
    themselves (the program sees the uid it has in every other run), cover ``paths`` (the tests)
    with /dev/null and the working directory with an empty directory of its own, show ``/proc``
    of its own PID namespace, and drop every capability before the program loads.

    A mount made in a namespace the program holds no capability over cannot be undone by it, nor
    by any namespace it nests further (the mounts come locked).
    """
    _linux.prctl(_linux.PR_SET_DUMPABLE, 1)  # its own /proc/self files, to write the maps
    _linux.map_own_ids(*ids)
    for path in paths:
        if os.path.exists(path):
            _linux.mount("/dev/null", path, None, _linux.MS_BIND)
    # As a benchmark's harness runs a program in an empty directory of its own: the run's files
    # (the program's file, the tests) are out of sight, and what the program writes stays here.
    here = os.getcwd()
    _linux.mount("tmpfs", here, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, _ALONE_TMPFS)
    os.chdir(here)
    with contextlib.suppress(OSError):
        # Its own PID namespace's processes only (the judge is not among them). A run whose
        # /proc is partly covered may not mount another: every child then sees the same /proc.
        _linux.mount("proc", "/proc", "proc", _linux.MS_NOSUID | _linux.MS_NODEV | _linux.MS_NOEXEC)
    _linux.drop_all_capabilities()
    _linux.prctl(_linux.PR_SET_NO_NEW_PRIVS, 1)


PROGRAM_CPU_S = 20
"""CPU seconds a program's process may use (its soft limit is one more, the hard two), or the
run's own limit where that is lower."""
_AS_STEP = 64 << 20


def _steady_limits() -> None:
    """Limits that do not say which run the process is in: the CPU limit ``PROGRAM_CPU_S`` and
    the address space the run allows, both capped, rounded down to a multiple of 64 MB (a run's
    limit is counted from its judge's size when it started, which differs a little by judge)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    cpu = [PROGRAM_CPU_S + 1, PROGRAM_CPU_S + 2]
    resource.setrlimit(
        resource.RLIMIT_CPU,
        (min(soft, cpu[0]) if soft >= 0 else cpu[0], min(hard, cpu[1]) if hard >= 0 else cpu[1]),
    )
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard >= 0:
        space = max(_AS_STEP, hard // _AS_STEP * _AS_STEP)
        resource.setrlimit(resource.RLIMIT_AS, (space, space))


def _fresh_signals() -> None:
    """Every signal's disposition as a fresh interpreter has it, whatever the judge had set."""
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for ignored in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(ignored, signal.SIG_IGN)


def _child_main(sock: socket.socket, setup: _Setup, ids: tuple[int, int] | None) -> None:
    """Set the child up, load the program and answer requests until the judge goes away. Never returns."""
    try:
        _fresh_signals()
        # The run's environment as any other run of the program has it, not the judging test's.
        os.environ.clear()
        os.environ.update(setup.env)
        setup_error = None
        source = ""
        try:
            with open(setup.path, encoding="utf-8", errors="surrogateescape") as f:
                source = f.read()
        except OSError as exc:
            setup_error = f"the program's file: {type(exc).__name__}: {_describe(exc)}"
        if ids is not None and setup_error is None:
            try:
                _own_namespaces(ids, setup.hide)
            except OSError as exc:
                setup_error = f"{type(exc).__name__}: {_describe(exc)}"
        elif setup_error is None:
            with contextlib.suppress(OSError):
                os.chdir(tempfile.mkdtemp(prefix="tmp"))
        # A session of its own: its old process group (the judge's) is out of reach of killpg.
        with contextlib.suppress(OSError):
            os.setsid()
        # The run's streams as 0, 1 and 2, the channel as 3; the harness's result descriptor and
        # every other inherited one go before any of the program's code runs.
        for fd, saved in enumerate(setup.stdio):
            os.dup2(saved, fd)
        if sock.fileno() != CHANNEL_FD:
            os.dup2(sock.fileno(), CHANNEL_FD)
            sock.detach()
            sock = socket.socket(fileno=CHANNEL_FD)
        os.closerange(CHANNEL_FD + 1, 1 << 20)
        sys.stdin = sys.__stdin__
        sys.argv[:] = [""]
        _steady_limits()
        # The setup's word goes first, before any of the program's code can write to the socket.
        with contextlib.suppress(OSError, ValueError):
            _send(sock, {"setup_error": setup_error} if setup_error is not None else {"setup": "ready"})
        if setup_error is None:
            setup.serve(sock, setup.path, source)
    finally:
        os._exit(0)


def send(sock: socket.socket, payload: dict[str, Any]) -> None:
    """Send one message on a program's channel (the program's side)."""
    _send(sock, payload)


def receive(sock: socket.socket) -> dict[str, Any] | None:
    """The judge's next request on a program's channel; None once the judge is gone (or sent
    what is not a request)."""
    try:
        request = _recv(sock, MAX_REPLY_BYTES)
    except ValueError:
        return None
    return request if isinstance(request, dict) else None


def serve_module(sock: socket.socket, path: str, source: str, module_name: str = "solution") -> None:
    """The default program side: the program imported as a module, its names got and called."""
    module: ModuleType | None = None
    load_error: str | None = None
    with _quiet():
        try:
            module = ModuleType(module_name)
            module.__file__ = path
            sys.modules[module_name] = module
            exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - the program, in its own process
        except BaseException as exc:  # noqa: BLE001 - a program that does not load is an answer
            module = None
            load_error = f"{type(exc).__name__}: {_describe(exc)}"
    while (request := receive(sock)) is not None:
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
