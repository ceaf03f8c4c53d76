"""The run side of a decision: load a verifier, give it its ``env``, report what it returned.

Runs inside a sandbox as ``Call("vouch.bench._runenv:decide", ...)`` (one case),
``Call("vouch.bench._runenv:decide_many", ...)`` (every case of one task for one verifier, in
the order given) or ``Call("vouch.bench._runenv:decide_verifiers", ...)`` (one case for many
verifiers: V4V's mutants). The verifier file is ``verifier.py`` in the run's working directory
(``verifier-0.py``, ``verifier-1.py``, ... for ``decide_verifiers``).
Everything the env executes (the candidate for a code task, a replay for a state task) is a
request over the service channel, answered by the caller with a separate sandboxed run: the
verifier never shares a process with what it judges.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import random
import signal
import sys
import time
from types import CodeType
from typing import Any

from vouch.exec.runside import (
    CaseRelay,
    describe_exception,
    from_data,
    isolate_parent,
    load_module_file,
    outside_state,
    request,
    to_data,
)

VERIFIER_FILE = "verifier.py"
CALL_TIMEOUT_S = 3.0
"""``env.call``'s time limit when the verifier names none (the pool clamps it to 0.1-30 s)."""

_ANSWERS: dict[str, str] | None = None
"""In a ``decide_verifiers`` run: the candidate's answers the run already has (the pool's first
answer to each call, as JSON), by ``call_key``. ``env.call`` answers from here without asking
the pool, and adds what the pool answers, so the run's later verifiers ask nothing twice."""


def call_key(function: Any, args: Any, timeout: Any) -> str | None:
    """One call of the candidate as canonical JSON, the pool's key of its shared answers (None
    when the call is not JSON, which the pool then refuses)."""
    try:
        clamped = min(max(float(timeout or CALL_TIMEOUT_S), 0.1), 30.0)
        return json.dumps([function, args, clamped], sort_keys=True)
    except (TypeError, ValueError):
        return None


class NoVerifyFunction(Exception):
    """The verifier file defines no callable ``verify``."""


class ReplayFailed(Exception):
    """The harness could not replay the candidate's calls to build the states."""


def _replay(spec: dict[str, Any], candidate: Any) -> dict[str, Any]:
    """State tasks: replay the candidate's calls on the pre-state with the task's replay entry.

    Harness code running the benchmark's own tool functions on the candidate's calls (data, not
    code). It runs when the verifier first reads ``env.pre_state`` or ``env.post_state``: a
    verifier that never reads them (one that replays by itself) does not pay for the snapshots.
    """
    try:
        module_name, _, function = spec["entry"].partition(":")
        replay = getattr(importlib.import_module(module_name), function)
        calls = candidate.get("calls", []) if isinstance(candidate, dict) else []
        states: dict[str, Any] = replay(calls, **spec.get("kwargs", {}))
    except Exception as exc:  # noqa: BLE001 - any failure here is the harness's, reported as such
        raise ReplayFailed(f"{type(exc).__name__}: {exc}") from None
    return states


class ToolCallRunEnv:
    """``env`` of a tool_call task."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self._case: int | None = None

    def _ask(self, payload: dict[str, Any]) -> Any:
        """A request for the caller, naming the case when the run decides several."""
        return request(payload if self._case is None else {**payload, "case": self._case})


class StateRunEnv(ToolCallRunEnv):
    """``env`` of a state task; ``run_public`` replays calls in a separate run.

    The states come from ``pre_state``/``post_state`` when given, else from the task's replay
    entry run here (``replay``: trusted verifiers in a pool that has the benchmark), else from
    the caller over the service channel (sealed runs).
    """

    def __init__(
        self,
        tools: list[dict[str, Any]],
        pre_state: dict[str, Any] | None = None,
        post_state: dict[str, Any] | None = None,
        *,
        replay: dict[str, Any] | None = None,
        candidate: Any = None,
    ) -> None:
        super().__init__(tools)
        given = pre_state is not None or post_state is not None
        self._states = {"pre_state": pre_state or {}, "post_state": post_state or {}} if given else None
        self._replay_spec = replay
        self._candidate = candidate

    def _state(self, key: str) -> dict[str, Any]:
        if self._states is None:
            if self._replay_spec is not None:
                self._states = _replay(self._replay_spec, self._candidate)
            else:
                # A sealed run cannot import the benchmark: the caller replays and sends the states.
                try:
                    self._states = self._ask({"op": "states"})
                except Exception as exc:  # noqa: BLE001 - the caller's replay failed; say so as the in-run path does
                    raise ReplayFailed(f"{type(exc).__name__}: {exc}") from None
        value: dict[str, Any] = self._states.get(key, {})
        return value

    @property
    def pre_state(self) -> dict[str, Any]:
        return self._state("pre_state")

    @property
    def post_state(self) -> dict[str, Any]:
        return self._state("post_state")

    def run_public(self, calls: list[dict[str, Any]]) -> dict[str, Any]:
        answer: dict[str, Any] = self._ask({"op": "run_public", "calls": calls})
        return answer

    def reset(self) -> dict[str, Any]:
        """The pre-state again (each run_public starts from a fresh copy anyway)."""
        return self.pre_state


class CodeRunEnv:
    """``env`` of a code task; ``call`` and ``run_public`` run the candidate in separate runs."""

    def __init__(self, entry_point: str | None) -> None:
        self.entry_point = entry_point
        self._case: int | None = None

    def _ask(self, payload: dict[str, Any]) -> Any:
        return request(payload if self._case is None else {**payload, "case": self._case})

    def call(self, function: str, args: list[Any], timeout: float = 3.0) -> dict[str, Any]:
        key = call_key(function, list(args), timeout) if _ANSWERS is not None else None
        if key is not None and _ANSWERS is not None and key in _ANSWERS:
            known: dict[str, Any] = from_data(json.loads(_ANSWERS[key]))  # a fresh copy each time
            return known
        answer: dict[str, Any] = self._ask({"op": "call", "function": function, "args": list(args), "timeout": timeout})
        if key is not None and _ANSWERS is not None:
            _ANSWERS.setdefault(key, json.dumps(to_data(answer)))
        return answer

    def run_public(self, tests: list[str] | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = self._ask({"op": "run_public", "tests": tests})
        return answer


def make_env(kind: str, env_data: dict[str, Any], candidate: Any = None, case: int | None = None) -> Any:
    env: Any
    if kind == "code":
        env = CodeRunEnv(env_data.get("entry_point"))
    elif kind == "state":
        env = StateRunEnv(
            env_data.get("tools", []),
            env_data.get("pre_state"),
            env_data.get("post_state"),
            replay=env_data.get("replay"),
            candidate=candidate,
        )
    else:
        env = ToolCallRunEnv(env_data.get("tools", []))
    env._case = case
    return env


def decide(kind: str, candidate: Any, env_data: dict[str, Any]) -> dict[str, Any]:
    """Import ``verifier.py``, call ``verify(candidate, env)``, describe what it returned.

    First it tells the caller the harness is ready (``{"op": "ready"}``): a run that ends
    before that ended before the verifier's code ran, for vouch's own reasons."""
    request({"op": "ready"})
    env = make_env(kind, env_data, candidate)
    module = load_module_file(VERIFIER_FILE, "verifier")
    return _verdict(module, candidate, env)


def _verdict(module: Any, candidate: Any, env: Any) -> dict[str, Any]:
    verify = getattr(module, "verify", None)
    if not callable(verify):
        raise NoVerifyFunction(f"{VERIFIER_FILE} defines no callable verify(candidate, env)")
    result = verify(candidate, env)
    if type(result) is bool:
        return {"bool": result}
    return {"bool": None, "type": type(result).__name__, "repr": repr(result)[:200]}


# --- several cases in one run -------------------------------------------------------------


class _CaseTimeout(BaseException):
    """A case of a multi-case run went past its time (a BaseException: ``except Exception``
    in a verifier does not swallow it)."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise _CaseTimeout


_WATCHED_MODULES = (
    "json",
    "copy",
    "math",
    "re",
    "vouch.bench._runenv",
    "vouch.exec.runside",
    "vouch.exec._service",
    "vouch.exec._harness",
)
"""Modules whose attributes a verifier could rebind to change how later cases are decided."""


def _listing(path: str) -> tuple[tuple[str, int, int], ...]:
    try:
        stats = [(entry.name, entry.stat(follow_symlinks=False)) for entry in os.scandir(path)]
    except OSError:
        return ()
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats))


def _shared_state() -> dict[str, Any]:
    """What one case of a multi-case run could change for the next, beyond the verifier's own
    module (made anew for each case) and ``random``'s state (reset for each case)."""
    import builtins

    modules = {name: sys.modules.get(name) for name in _WATCHED_MODULES}
    return {
        "builtins": {k: id(v) for k, v in vars(builtins).items()},
        "modules": {n: (id(m), {k: id(v) for k, v in vars(m).items()}) for n, m in modules.items() if m is not None},
        "sys": (
            list(sys.path),
            [id(f) for f in sys.meta_path],
            [id(h) for h in sys.path_hooks],
            sys.getrecursionlimit(),
            id(sys.gettrace()),
            id(sys.getprofile()),
            id(sys.stdout),
            id(sys.stderr),
        ),
        "environment": dict(os.environ),
        "cwd": os.getcwd(),
        "files": (_listing("."), _listing("/tmp")),  # noqa: S108 - the run's private /tmp
        "alarm": signal.getsignal(signal.SIGALRM) is _alarm,
    }


def _changed(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    names = {
        "builtins": "the builtins",
        "modules": "a module the harness uses",
        "sys": "the interpreter's settings (sys)",
        "environment": "the environment variables",
        "cwd": "the working directory",
        "files": "the files of the working directory or /tmp",
        "alarm": "the SIGALRM handler",
    }
    for key, name in names.items():
        if before[key] != after[key]:
            return name
    return None


def _fresh_module(code: CodeType, file: str = VERIFIER_FILE) -> Any:
    """``file`` as a new ``verifier`` module (as ``load_module_file`` makes it), from code compiled once."""
    path = os.path.abspath(file)
    spec = importlib.util.spec_from_file_location("verifier", path)
    if spec is None:
        raise ImportError(f"cannot load {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["verifier"] = module
    exec(code, module.__dict__)  # noqa: S102 - the verifier's own module body, as an import runs it
    return module


def _compiled(file: str) -> tuple[CodeType | None, BaseException | None]:
    path = os.path.abspath(file)
    try:
        with open(path, "rb") as handle:
            return compile(handle.read(), path, "exec", dont_inherit=True), None
    except Exception as exc:  # noqa: BLE001 - a file that does not compile (too deep, too large) is the verifier's
        return None, exc


class _Stop(Exception):
    """A case of a multi-case run that ends the run: why, for ``stopped``."""


def _decide_one(
    compiled: tuple[CodeType | None, BaseException | None],
    file: str,
    kind: str,
    env_data: dict[str, Any],
    candidate: Any,
    index: int,
    case_timeout_s: float,
) -> dict[str, Any]:
    """One decision of a multi-case run, as ``decide`` makes it alone: a fresh module, ``random``
    as the run started (the caller resets it), the case's own time limit. Raises ``_Stop`` when
    the case ran out of time or memory."""
    code, compile_error = compiled
    started = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, case_timeout_s)
    try:
        env = make_env(kind, env_data, candidate, case=index)
        if code is None:
            assert compile_error is not None
            raise compile_error
        outcome = _verdict(_fresh_module(code, file), candidate, env)
    except _CaseTimeout:
        raise _Stop(f"the case took over {case_timeout_s:g} s") from None
    except MemoryError:
        raise _Stop("the case ran out of memory") from None
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: what a lone run would record
        described = describe_exception(exc)
        outcome = {"raised": {"type": described["type"], "message": described["message"]}}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    outcome["duration_s"] = time.perf_counter() - started
    return outcome


def decide_many(
    kind: str,
    count: int,
    env_data: dict[str, Any],
    case_timeout_s: float,
    budget_s: float | None = None,
) -> dict[str, Any]:
    """Decide ``count`` cases with ``verifier.py``, in the caller's order, each in a child
    process of its own (``vouch.exec.runside.CaseRelay``) that holds only its own case.

    Before each case this process asks the caller to move on (``{"op": "next"}``) and, in the
    same round trip, asks for the case's candidate as the case (``{"op": "candidate"}``), whose
    answer it leaves unread for the child (``CaseRelay.move_on``); the child reads its
    candidate, decides with a fresh verifier module and ``random`` as the run started, and
    reports its outcome (``{"op": "decided", "outcome":
    ...}``: ``decide``'s dict, or ``{"raised": {"type", "message"}}``). The caller keeps the
    outcomes; this returns ``{"cases": [{"alone", "duration_s"}, ...], "stopped": None}``, where
    ``alone`` says why a case needs a run of its own (it ran out of time or memory, or its
    process ended without a decision). It stops early with ``"stopped": {"case": i, "why":
    ...}`` (from case ``i`` on, the caller decides the cases in fresh runs) when the caller says
    so (V4V's C6: a decision other than the expected one), when ``budget_s`` would run out, and
    when a case changed what the next would see outside its own process: the files of the
    working directory or the temporary directories, IPC objects or keys."""
    started = time.monotonic()
    isolate_parent()
    compiled = _compiled(VERIFIER_FILE)
    relay = CaseRelay()
    before = outside_state()
    seeded = random.getstate()
    cases: list[dict[str, Any]] = []
    for index in range(count):
        go = relay.move_on({"op": "next"}, {"op": "candidate"})
        if not (isinstance(go, dict) and go.get("go") is True):
            relay.drop()
            why = go.get("why") if isinstance(go, dict) else None
            return {"cases": cases, "stopped": {"case": index, "why": str(why or "the caller ended the run")}}
        if budget_s is not None and time.monotonic() - started + case_timeout_s > budget_s:
            relay.drop()
            return {"cases": cases, "stopped": {"case": index, "why": "the run's time was running out"}}
        ended = relay.run_case(lambda: _case_child(compiled, kind, env_data, seeded, relay), case_timeout_s)
        cases.append({"alone": ended.alone, "duration_s": ended.duration_s})
        if ended.stop:
            return {"cases": cases, "stopped": {"case": index + 1, "why": ended.alone}}
        if index + 1 < count and outside_state() != before:
            why = "the verifier changed the files of the working directory or /tmp (or IPC objects)"
            return {"cases": cases, "stopped": {"case": index + 1, "why": why}}
    return {"cases": cases, "stopped": None}


def _case_child(
    compiled: tuple[CodeType | None, BaseException | None],
    kind: str,
    env_data: dict[str, Any],
    seeded: Any,
    relay: CaseRelay,
) -> int:
    """One case, in its own child: read the candidate, decide, report the outcome; the exit code."""
    random.setstate(seeded)  # as the run started (the fork reseeded it)
    candidate = relay.first_answer()
    code, compile_error = compiled
    env = make_env(kind, env_data, candidate)
    try:
        if code is None:
            assert compile_error is not None
            raise compile_error
        outcome = _verdict(_fresh_module(code), candidate, env)
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: what a lone run would record
        described = describe_exception(exc)
        outcome = {"raised": {"type": described["type"], "message": described["message"]}}
    request({"op": "decided", "outcome": outcome})
    return 0


MUTANT_FILE = "verifier-{}.py"
"""The files of ``decide_verifiers``'s verifiers, in order (each loads as module ``verifier``)."""


def decide_verifiers(
    kind: str,
    candidate: Any,
    env_data: dict[str, Any],
    case_timeout_s: float,
    count: int,
    answers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Decide one candidate with ``count`` verifiers (``verifier-0.py``, ...), in order, each as
    ``decide`` would alone (V4V's C6: a task's mutants on one case, whose candidate's calls one
    candidate session answers for all of them). ``answers`` (call key -> answer) are the
    candidate's answers the pool already has: ``env.call`` gives them without asking. Returns
    what ``decide_many`` returns, with one entry per verifier; it stops as ``decide_many`` does,
    except on a decision (every verifier decides the case), and also after a verifier that
    changed an answer the later ones would be given."""
    global _ANSWERS
    _ANSWERS = {key: json.dumps(to_data(answer)) for key, answer in (answers or {}).items()}
    signal.signal(signal.SIGALRM, _alarm)
    seeded = random.getstate()
    before = _shared_state()
    results: list[dict[str, Any]] = []
    for index in range(count):
        random.setstate(seeded)
        file = MUTANT_FILE.format(index)
        given = dict(_ANSWERS)
        try:
            outcome = _decide_one(_compiled(file), file, kind, env_data, candidate, index, case_timeout_s)
        except _Stop as stop:
            return {"results": results, "stopped": {"case": index, "why": str(stop)}}
        results.append(outcome)
        what = _changed(before, _shared_state())
        if _ANSWERS is None or any(_ANSWERS.get(key) != value for key, value in given.items()):
            what = "the candidate's answers the run was given"
        if what is not None and index + 1 < count:
            return {"results": results, "stopped": {"case": index + 1, "why": f"the verifier changed {what}"}}
    return {"results": results, "stopped": None}
