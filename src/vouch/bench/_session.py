"""Candidate sessions: one sandboxed run of a candidate that answers many ``env.call``s.

A verifier of a code task calls the candidate many times (HumanEval's ``check`` makes about
ten calls, some tasks hundreds). Starting a run per call costs a fork and a module import
each time; a session loads the candidate once, in its own sandbox, and answers the calls of
one decision in order, as HumanEval's own harness runs a test's assertions in one process.
The verifier still never shares a process with the candidate: calls and answers cross as
data through the pool.

Run side: ``serve`` (``Call("vouch.bench._session:serve")`` with a service channel) asks
``{"op": "next", "answer": ...}`` for its next call until it is told to stop.
Pool side: ``Session`` hands calls from the verifier's handler to the session's handler.
"""

from __future__ import annotations

import copy
import queue
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from vouch.exec import Call, Executor, Limits, RunResult, RunSpec
from vouch.exec.runside import load_module_file, request, to_data

SESSION_LIMITS = Limits(timeout_s=120.0, memory_mb=512)
_STOP = {"stop": True}


class _CallTimeout(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _CallTimeout


def serve(path: str = "candidate.py") -> int:
    """Run side: load the candidate, then answer calls until told to stop; returns the count.

    The first call is asked for before the candidate loads: a session that ends before asking
    ended in vouch's own harness, not in the candidate."""
    answer: dict[str, Any] | None = None
    call = request({"op": "next", "answer": answer})
    module: Any = None
    load_error = ""
    try:
        module = load_module_file(path, "candidate")
    except BaseException as exc:  # noqa: BLE001 - the candidate failing to load answers every call
        load_error = f"{type(exc).__name__}: {exc}"[:300]
    signal.signal(signal.SIGALRM, _alarm)
    served = 0
    while True:
        if served:
            call = request({"op": "next", "answer": answer})
        if not isinstance(call, dict) or call.get("stop"):
            return served
        served += 1
        if module is None:
            answer = {"ok": False, "value": None, "error": f"the candidate does not load: {load_error}"}
            continue
        answer = _answer(module, call)


def _answer(module: Any, call: dict[str, Any]) -> dict[str, Any]:
    fn = getattr(module, str(call.get("function")), None)
    if not callable(fn):
        return {"ok": False, "value": None, "error": f"the candidate defines no function {call.get('function')!r}"}
    signal.setitimer(signal.ITIMER_REAL, float(call.get("timeout") or 3.0))
    try:
        value = fn(*copy.deepcopy(call.get("args") or []))
    except _CallTimeout:
        return {"ok": False, "value": None, "error": "timeout"}
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: the call failed
        return {"ok": False, "value": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        to_data(value)
    except (TypeError, RecursionError):
        return {"ok": False, "value": None, "error": f"returned {type(value).__name__}, which is not data"}
    return {"ok": True, "value": value, "error": None}


class Session:
    """Pool side of one candidate session, started on the first call."""

    def __init__(
        self,
        executor: Executor,
        source: str,
        hidden: tuple[str, ...],
        name: str,
        preload: tuple[str, ...] = (),
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        """``on_failure(why)`` hears of a session that broke on the pool's side (its run could
        not be started or has no result): vouch's failure, not the candidate's behaviour."""
        self._executor = executor
        self._on_failure = on_failure
        self._preload = preload
        self._source = source
        self._hidden = hidden
        self._name = name
        self._calls: queue.Queue[dict[str, Any]] = queue.Queue()
        self._answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.Lock()
        self._future: Future[RunResult] | None = None
        self._first = True

    def _start(self) -> None:
        spec = RunSpec(
            entry=Call("vouch.bench._session:serve"),
            files={"candidate.py": self._source},
            limits=SESSION_LIMITS,
            hidden=self._hidden,
            service=True,
            nested=True,
            name=f"{self._name}:session",
            preload=self._preload,
        )
        self._future = self._executor.submit(spec, service=self._serve)
        self._future.add_done_callback(self._ended)

    def _serve(self, req: Any) -> Any:
        """The session run's requests: hand back the previous answer, take the next call."""
        if not isinstance(req, dict) or req.get("op") != "next":
            raise ValueError("a session only asks for its next call")
        if self._first:
            self._first = False
        else:
            answer = req.get("answer")
            self._answers.put(answer if isinstance(answer, dict) else {"ok": False, "value": None, "error": "?"})
        try:
            return self._calls.get(timeout=SESSION_LIMITS.timeout_s)
        except queue.Empty:
            return _STOP

    def _ended(self, future: Future[RunResult]) -> None:
        # A session that died (timeout, crash, exit at import) answers what is pending, and any
        # later call starts a fresh one.
        reason = "the candidate's session ended"
        error = future.exception()
        if error is not None:
            reason = f"the candidate's session broke on the pool's side: {error}"[:300]
            if self._on_failure is not None:
                self._on_failure(reason)
        else:
            result = future.result()
            if not result.ok:
                reason = f"the candidate's session ended: {result.status.value} ({result.reason})"
            if not result.ok and self._first and self._on_failure is not None:
                # It never asked for a call: it ended in vouch's harness, before the candidate loaded.
                self._on_failure(f"the candidate's session failed before the candidate loaded: {result.reason}"[:300])
        with self._lock:
            self._future = None
            self._first = True
        self._answers.put({"ok": False, "value": None, "error": reason})

    def call(self, function: str, args: list[Any], timeout: float) -> dict[str, Any]:
        """One call of the candidate: in order, one at a time (a verifier is single-threaded)."""
        with self._lock:
            if self._future is None:
                self._drain()
                try:
                    self._start()
                except Exception as exc:  # noqa: BLE001 - the pool's failure, reported as such
                    reason = f"the candidate's session could not start: {exc}"[:300]
                    if self._on_failure is not None:
                        self._on_failure(reason)
                    return {"ok": False, "value": None, "error": reason}
            self._calls.put({"function": function, "args": args, "timeout": timeout})
        try:
            return self._answers.get(timeout=timeout + 30.0)
        except queue.Empty:
            return {"ok": False, "value": None, "error": "no answer from the candidate's session"}

    def _drain(self) -> None:
        for q in (self._calls, self._answers):
            while not q.empty():
                q.get_nowait()

    def close(self) -> None:
        with self._lock:
            if self._future is not None:
                self._calls.put(_STOP)
