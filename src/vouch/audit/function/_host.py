"""The judged program's process in the function form, built as the benchmark's harness builds it.

T0's deciding run, every witness run, and every time a program is asked apart (a vote, a
confirmation) give the program one process, set up by one path: ``vouch.exec.runside.Program``'s
child (the same streams, descriptors, signals, environment, working directory and ``/proc``),
then ``serve`` here. What the program can observe of that process is the same in all of them;
only the test differs, as the invariant in docs/design.md states:

* **The benchmark's module.** As HumanEval's harness (and EvalPlus's, and MBPP's) runs a
  program, the program and the benchmark's test are executed in one fresh namespace, compiled as
  ``<string>``: ``__name__`` is the builtins', ``check`` and the test's other names sit beside the
  program's, in a T0 run and a witness run alike (the test's text is T0's in both).
* **Where the calls come from.** The program is called from a function named ``check`` in that
  namespace, called by ``serve``. In T0's run it is T0's own ``check`` with each ``assert``
  recorded; in a witness run (or when asked apart) it is a ``check`` whose body answers the
  judge's calls. Both are built by ``_built_check`` with the same free names, so a frame walk
  sees the same frames, names and globals; only the body (the test's content) differs.
* **What it prints** goes to an in-memory stream, as the harness's ``swallow_io`` sends it.

What comes back is the program's own outcome: T0's record there is T0's claim (the benchmark's),
and a witness's answers are compared by the judge, outside this process, on data.
"""

from __future__ import annotations

import ast
import contextlib
import io
import signal
import socket
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vouch.exec.runside import from_data, receive_request, send_answer, to_data

_MESSAGE_CHARS = 200
_SINK_CHARS = 1 << 20
"""What the in-memory stream keeps of what the program prints; the rest is dropped."""


@dataclass(frozen=True)
class Shape:
    """How the benchmark's harness builds the program's module: the benchmark's test source
    (defining ``check(candidate)``, T0) and the entry point ``check`` is called with."""

    test: str
    entry_point: str


class WriteOnlyStringIO(io.StringIO):
    """The stream a program prints to, as the harness's own: writable, never readable."""

    def write(self, s: str) -> int:
        if self.tell() < _SINK_CHARS:
            super().write(s[: _SINK_CHARS - self.tell()])
        return len(s)

    def read(self, *args: Any, **kwargs: Any) -> str:
        raise OSError

    def readline(self, size: int | None = -1, /) -> str:  # type: ignore[override]
        raise OSError

    def readlines(self, hint: int | None = -1, /) -> list[str]:  # type: ignore[override]
        raise OSError

    def readable(self, *args: Any, **kwargs: Any) -> bool:
        return False


@contextlib.contextmanager
def swallowed() -> Iterator[None]:
    stream = WriteOnlyStringIO()
    saved = sys.stdout, sys.stderr, sys.stdin
    sys.stdout = sys.stderr = sys.stdin = stream
    try:
        yield
    finally:
        sys.stdout, sys.stderr, sys.stdin = saved


class CallTimeout(BaseException):
    """An assertion of T0 ran past its timer; a BaseException, so that ``except Exception`` in a
    program misses it."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise CallTimeout


def _describe(exc: BaseException) -> str:
    if isinstance(exc, CallTimeout):
        return "timeout"
    try:
        text = str(exc).splitlines()[0] if str(exc) else ""
    except Exception:  # noqa: BLE001 - a program's exception whose str raises
        text = ""
    return f"{type(exc).__name__}: {text}"[:_MESSAGE_CHARS]


class _Judge:
    """The one free name of every ``check`` the host builds: what T0's recorded asserts report
    to, and where a witness's calls come from and their answers go."""

    def __init__(self, sock: socket.socket | None, namespace: dict[str, Any], first: dict[str, Any] | None) -> None:
        self._sock = sock
        """None: the calls come from this process (``Caller``), already values."""
        self._namespace = namespace
        self.first = first
        self.per_assert_s = 3.0
        self.passed: dict[str, bool] = {}
        self.failures: dict[str, str] = {}
        self.outcome: tuple[str, Any] = ("none", None)

    # --- T0's asserts ---------------------------------------------------------------------

    def enter(self, _tag: str) -> None:
        signal.setitimer(signal.ITIMER_REAL, self.per_assert_s)

    def held(self, tag: str) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.passed.setdefault(tag, True)

    def broke(self, tag: str, exc: BaseException) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.passed[tag] = False
        self.failures.setdefault(tag, _describe(exc))

    # --- a witness's calls ----------------------------------------------------------------

    def target(self, request: dict[str, Any]) -> tuple[Any, list[Any], dict[str, Any]] | None:
        """The callable, arguments and keywords of a call request; None after answering any
        other request (a name got, a name missing) here."""
        name = str(request.get("name"))
        if self._sock is None:
            return self._namespace[name], request["args"], {}
        if name not in self._namespace or name.startswith("__"):
            send_answer(self._sock, {"missing": True})
            return None
        attribute = self._namespace[name]
        if request.get("op") == "get":
            send_answer(self._sock, {"callable": True} if callable(attribute) else _value(attribute))
            return None
        try:
            return attribute, from_data(request.get("args", [])), from_data(request.get("kwargs", {}))
        except Exception as exc:  # noqa: BLE001 - arguments that do not decode are the judge's to see
            send_answer(self._sock, {"raised": type(exc).__name__, "message": _describe(exc)})
            return None

    def returned(self, value: Any) -> dict[str, Any] | None:
        if self._sock is None:
            self.outcome = ("value", value)
            return None
        send_answer(self._sock, _value(value))
        return self.next()

    def raised(self, exc: BaseException) -> dict[str, Any] | None:
        if self._sock is None:
            self.outcome = ("raised", exc)
            return None
        send_answer(self._sock, {"raised": type(exc).__name__, "message": _describe(exc).split(": ", 1)[-1]})
        return self.next()

    def next(self) -> dict[str, Any] | None:
        return None if self._sock is None else receive_request(self._sock)


class Caller:
    """Calls of a program's entry point made in this process as a witness run makes them in the
    program's: from the same ``check`` (``_ANSWERS``), with the same free name, in the benchmark's
    module. The search (``_inrun.outputs``) calls the program through it, so that the function
    that calls the program, and what that function holds, are what its witnesses show it."""

    def __init__(self, namespace: dict[str, Any], entry_point: str) -> None:
        self._judge = _Judge(None, namespace, None)
        self._check = _built_check(_check_def(_ANSWERS, recorded=False), namespace, self._judge)
        self._candidate = namespace[entry_point]
        self._entry_point = entry_point

    def __call__(self, *args: Any) -> Any:
        """The entry point's value on ``args``; raises what it raised (a timer's exception too)."""
        self._judge.first = {"op": "call", "name": self._entry_point, "args": list(args)}
        self._judge.outcome = ("none", None)
        self._check(self._candidate)
        kind, value = self._judge.outcome
        self._judge.outcome = ("none", None)
        if kind == "raised" and isinstance(value, BaseException):
            raise value
        return value


def _value(value: Any) -> dict[str, Any]:
    try:
        return {"value": to_data(value)}
    except (TypeError, ValueError, RecursionError):
        return {"not_data": type(value).__name__}


_ANSWERS = """
def check(candidate):
    request = vouch.first
    while request is not None:
        call = vouch.target(request)
        if call is None:
            request = vouch.next()
            continue
        function, args, kwargs = call
        try:
            value = function(*args, **kwargs)
        except BaseException as exc:
            request = vouch.raised(exc)
        else:
            request = vouch.returned(value)
"""
"""The body of a witness run's ``check``: the judge's calls, answered as data."""


class _RecordedAsserts(ast.NodeTransformer):
    """Each ``assert`` of T0's ``check`` recorded on its own (``L<line>``), the test going on."""

    def visit_Assert(self, node: ast.Assert) -> Any:
        tag = ast.Constant(f"L{node.lineno}")
        judge = ast.Name("vouch", ast.Load())

        def report(method: str, *args: ast.expr) -> ast.Expr:
            return ast.Expr(ast.Call(ast.Attribute(judge, method, ast.Load()), [tag, *args], []))

        handler = ast.ExceptHandler(
            ast.Name("Exception", ast.Load()), "exc", [report("broke", ast.Name("exc", ast.Load()))]
        )
        return ast.Try([report("enter"), node], [handler], [report("held")], [])


def _check_def(source: str, *, recorded: bool) -> ast.FunctionDef:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            if recorded:
                node.body = [_RecordedAsserts().visit(stmt) for stmt in node.body]
            return node
    raise SyntaxError("the test defines no check(candidate)")


def _built_check(definition: ast.FunctionDef, namespace: dict[str, Any], judge: _Judge) -> Any:
    """``definition`` as a function of ``namespace`` named ``check``, whose one free name
    ``vouch`` is the judge (no name is added to the namespace)."""
    maker = ast.FunctionDef(
        name="check",
        args=ast.arguments([], [ast.arg("vouch")], None, [], [], None, []),
        body=[definition, ast.Return(ast.Name("check", ast.Load()))],
        decorator_list=[],
    )
    code = compile(ast.fix_missing_locations(ast.Module([maker], [])), "<string>", "exec", dont_inherit=True)
    maker_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = types.FunctionType(maker_code, namespace)(judge)
    return types.FunctionType(
        inner.__code__.replace(co_qualname="check"), namespace, "check", inner.__defaults__, inner.__closure__
    )


def benchmark_module(source: str, path: str, shape: Shape) -> dict[str, Any]:
    """The benchmark's module: the program (compiled as its file, ``path``) then the benchmark's
    test, executed in one fresh namespace, as the harness executes them. Raises what the program
    raises while it loads, and ``NameError`` when it defines no entry point."""
    namespace: dict[str, Any] = {}
    exec(compile(source, path, "exec", dont_inherit=True), namespace)  # noqa: S102 - the program, where it is judged
    exec(compile(shape.test, "<string>", "exec", dont_inherit=True), namespace)  # noqa: S102 - the benchmark's test
    if shape.entry_point not in namespace:
        raise NameError(f"name {shape.entry_point!r} is not defined")
    return namespace


def serve(sock: socket.socket, path: str, source: str, shape: Shape) -> None:
    """The program's side (``runside.Serve``): the benchmark's module, then one ``check`` called
    with the entry point: T0's recorded one when the judge asks for T0 (``{"op": "t0"}``, one
    record back), else the one that answers the judge's calls until it goes."""
    namespace: dict[str, Any] = {}
    load_error = None
    with swallowed():
        try:
            namespace = benchmark_module(source, path, shape)
        except BaseException as exc:  # noqa: BLE001 - a program that does not load is an answer
            load_error = _describe(exc)
    first = receive_request(sock)
    if load_error is not None:
        while first is not None:
            send_answer(sock, {"load_error": load_error})
            first = receive_request(sock)
        return
    judge = _Judge(sock, namespace, first)
    t0 = first is not None and first.get("op") == "t0"
    if t0 and first is not None:
        judge.per_assert_s = float(first.get("per_assert_s") or 3.0)
    check = _built_check(_check_def(shape.test if t0 else _ANSWERS, recorded=t0), namespace, judge)
    candidate = namespace[shape.entry_point]
    error = None
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    with swallowed():
        try:
            check(candidate)
        except BaseException as exc:  # noqa: BLE001 - a crash of check is an outcome
            error = _describe(exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    if t0:
        send_answer(
            sock,
            {
                "t0": {
                    "passed": sorted(t for t, v in judge.passed.items() if v),
                    "failed": sorted(t for t, v in judge.passed.items() if not v),
                    "failures": judge.failures,
                    "error": "timeout" if error == "timeout" else error,
                }
            },
        )
