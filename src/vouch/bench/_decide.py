"""Deciding cases: one verifier on one case, as a sandboxed run, to PASS, FAIL or INVALID.

Domain code never spawns processes: it builds ``RunSpec``s and service handlers and asks the
executor. For a state task the run first replays the candidate's calls with the task's
``replay`` entry (harness code, before the verifier loads) to get the states its verifier
sees; a code task's ``env.call`` and ``env.run_public`` are answered by nested runs of the
candidate (a candidate session).
"""

from __future__ import annotations

import enum
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vouch.bench._runenv import MUTANT_FILE, call_key
from vouch.bench._session import Session
from vouch.core import Case, TaskSpec, load_cases, load_task_spec
from vouch.errors import InfrastructureError, UsageError
from vouch.exec import Call, Executor, Limits, PytestRecordError, PytestRun, RunResult, RunSpec, Status
from vouch.sources import SOURCES

PRELOAD = ("vouch.bench._runenv", "vouch.bench._session")
"""Modules a pool that decides cases should pre-import (``LocalExecutor(preload=...)``):
importing them in every run would cost each decision tens of milliseconds."""
VERIFIER_LIMITS = Limits(timeout_s=30.0, memory_mb=1024)


def preload_for(tasks: Sequence[Task]) -> list[str]:
    """What a pool deciding these tasks' cases should pre-import (and warm): ``PRELOAD``, the
    ``decide_preload`` of each source whose tasks (by benchmark, or by a replay entry in the
    source's module) are there, in the registry's order, then the modules of the tasks' replay
    entries."""
    replays = {t.spec.replay.split(":")[0] for t in tasks if t.spec.replay}
    benchmarks = {t.spec.source.benchmark for t in tasks}
    first = [
        module
        for name, entry in SOURCES.items()
        if name in benchmarks or entry.module in replays
        for module in entry.decide_preload
    ]
    return [*PRELOAD, *first, *sorted(replays - set(first))]


def _pool_of(task: Task) -> tuple[str, ...]:
    """The preload set of a task's runs (``RunSpec.preload``: a ``PoolSet`` routes by it)."""
    return tuple(preload_for([task]))


CALL_LIMITS = Limits(timeout_s=3.0, memory_mb=512)
REPLAY_LIMITS = Limits(timeout_s=60.0, memory_mb=1024)
_PYTEST_ARGS = ["-q", "-p", "no:cacheprovider"]


class Decision(enum.StrEnum):
    PASS = "PASS"  # noqa: S105 - a decision, not a password
    FAIL = "FAIL"
    INVALID = "INVALID"
    ERROR = "ERROR"
    """vouch could not decide the case (its pool, its harness, a harness run on the candidate
    failed): not a verdict about the verifier. Counted apart, never stored, decided again on the
    next run."""


@dataclass(frozen=True)
class DecisionResult:
    """A verifier's decision on one case, with why it is INVALID when it is."""

    decision: Decision
    reason: str | None
    duration_s: float
    note: str | None = None
    """Why the case was decided in a run of its own although its task's other cases shared one
    (``decide_cases``'s multi-case runs): its run crashed, or an earlier case changed state."""


@dataclass(frozen=True)
class Task:
    """A task directory, loaded: its spec, public materials and hidden cases."""

    root: Path
    spec: TaskSpec
    tools: list[dict[str, Any]]
    public_tests: str | None
    cases: list[Case]

    @property
    def id(self) -> str:
        return self.spec.id


def load_task(task_dir: Path) -> Task:
    """Load a task directory. Raises UsageError naming the file and field at fault."""
    spec = load_task_spec(task_dir)
    tools: list[dict[str, Any]] = []
    tools_path = task_dir / "environment" / "tools.json"
    if tools_path.exists():
        try:
            tools = json.loads(tools_path.read_text())
        except json.JSONDecodeError as exc:
            raise UsageError(f"{tools_path}: not valid JSON: {exc}") from None
    tests_path = task_dir / "environment" / "public_tests.py"
    public_tests = tests_path.read_text() if tests_path.exists() else None
    return Task(root=task_dir, spec=spec, tools=tools, public_tests=public_tests, cases=load_cases(task_dir))


def load_tasks(tasks_dir: Path) -> list[Task]:
    if not tasks_dir.is_dir():
        raise UsageError(f"no such tasks directory: {tasks_dir}")
    # A tasks directory may hold several builds (tasks/humaneval, tasks/bfcl, ...).
    tasks = [load_task(p.parent) for p in sorted(tasks_dir.rglob("task.toml"))]
    seen: dict[str, Path] = {}
    for task in tasks:
        if task.id in seen:
            raise UsageError(f"task id {task.id!r} appears twice: {seen[task.id]} and {task.root}")
        seen[task.id] = task.root
    if not tasks:
        raise UsageError(f"{tasks_dir} holds no task directories (none has a task.toml)")
    return tasks


@dataclass
class _Item:
    task: Task
    case: Case
    verifier: str | None
    hidden: tuple[str, ...]
    env_data: dict[str, Any] = field(default_factory=dict)
    answers: CallAnswers | None = None
    """Candidate answers shared between decisions (``decide_cases``'s ``call_answers``)."""
    calls: list[str] = field(default_factory=list)
    """The candidate calls of this decision so far, each as canonical JSON."""
    failure: str | None = None
    """Why vouch itself failed while this decision was made (set on the pool's side only: what
    the verifier's run says can never set it). The decision is then ERROR."""
    ready: bool = False
    """The decision's lone run said its harness was ready before the verifier's code ran."""
    box: dict[str, Session] = field(default_factory=dict)
    """Holds the decision's candidate session; the decisions of one ``decide_verifiers`` run
    (one candidate, many verifiers) share one box, so one session answers all of them."""

    def fail(self, why: str) -> None:
        """Record vouch's own failure in this decision (the first one says why)."""
        self.failure = self.failure or why[:300]

    @property
    def session(self) -> Session | None:
        return self.box.get("session")

    @session.setter
    def session(self, value: Session | None) -> None:
        if value is None:
            self.box.pop("session", None)
        else:
            self.box["session"] = value


class CallAnswers(dict[tuple[str, str], dict[str, Any]]):
    """(candidate source hash, one call as canonical JSON) -> the first answer that call got,
    with the answers of each candidate apart (``of``), for runs that take them along."""

    def __init__(self) -> None:
        super().__init__()
        self._by_candidate: dict[str, dict[str, dict[str, Any]]] = {}

    def setdefault(self, key: tuple[str, str], default: dict[str, Any]) -> dict[str, Any]:
        if key in self:
            return self[key]
        self[key] = default
        self._by_candidate.setdefault(key[0], {})[key[1]] = default
        return default

    def of(self, candidate_hash: str) -> dict[str, dict[str, Any]]:
        """The answers of one candidate so far: call key -> answer."""
        return dict(self._by_candidate.get(candidate_hash, {}))


def _answers_of(answers: dict[tuple[str, str], dict[str, Any]] | None, candidate: Any) -> dict[str, Any]:
    source = candidate.get("source") if isinstance(candidate, dict) else None
    if answers is None or not isinstance(source, str):
        return {}
    digest = hashlib.sha256(source.encode()).hexdigest()
    if isinstance(answers, CallAnswers):
        return answers.of(digest)
    return {call: answer for (h, call), answer in answers.items() if h == digest}


def classify(result: RunResult) -> tuple[Decision, str | None]:
    """A decision run's result -> PASS, FAIL or INVALID with a one-line reason."""
    if result.status is Status.OK:
        return _classify_value(result.value)
    exc = result.exception
    if result.status is Status.ERROR and exc is not None:
        return _classify_raised(exc.type, exc.message)
    if result.status is Status.ERROR:
        return Decision.INVALID, f"exited before returning ({result.reason})"[:300]
    return Decision.INVALID, f"{result.status.value}: {result.reason}"[:300]


def _classify_value(value: Any) -> tuple[Decision, str | None]:
    if isinstance(value, dict) and isinstance(value.get("bool"), bool):
        return (Decision.PASS if value["bool"] else Decision.FAIL), None
    kind = value.get("type", "?") if isinstance(value, dict) else type(value).__name__
    shown = value.get("repr", "") if isinstance(value, dict) else ""
    return Decision.INVALID, f"verify returned {kind}, not bool: {shown}"[:300]


def _classify_raised(kind: str, message: str) -> tuple[Decision, str | None]:
    if kind in ("SyntaxError", "IndentationError", "TabError"):
        return Decision.INVALID, f"syntax error in the verifier: {message}"[:300]
    if kind == "NoVerifyFunction":
        return Decision.INVALID, "the verifier defines no verify(candidate, env)"
    if kind == "ReplayFailed":
        return Decision.INVALID, f"the harness could not replay the candidate: {message}"[:300]
    return Decision.INVALID, f"verify raised {kind}: {message}"[:300]


def _classify_case(outcome: Any) -> tuple[Decision, str | None]:
    """One case's entry of a multi-case run, classified as a lone run's result would be."""
    raised = outcome.get("raised") if isinstance(outcome, dict) else None
    if isinstance(raised, dict):
        return _classify_raised(str(raised.get("type", "?")), str(raised.get("message", "")))
    return _classify_value(outcome)


def _service(executor: Executor, item: _Item) -> Callable[[Any], Any]:
    """The requests of one decision's run. A failure of vouch's own machinery while answering
    (the pool, or the replay of the case's own candidate) marks the decision as vouch's failure."""
    task, candidate = item.task, item.case.candidate

    def handle(req: Any) -> Any:
        if not isinstance(req, dict):
            raise ValueError("a request is a JSON object")
        try:
            return answer(req)
        except InfrastructureError as exc:
            item.failure = item.failure or f"vouch's pool failed while answering the verifier: {exc}"[:300]
            raise

    def answer(req: dict[str, Any]) -> Any:
        op = req.get("op")
        if op == "ready":
            item.ready = True
            return {}
        if task.spec.kind == "code" and op == "call":
            return candidate_call(executor, task, candidate, req, item.hidden, item)
        if task.spec.kind == "code" and op == "run_public" and _is_patch_task(task):
            # A SWE-bench task: the public tests in the candidate patch's world. Only the task's
            # own reference verifier learns FAIL_TO_PASS outcomes (the hidden tests are its check).
            from vouch.sources.swebench import run_public

            patch = candidate.get("patch") if isinstance(candidate, dict) else None
            if not isinstance(patch, str):
                raise ValueError("a SWE-bench candidate is an object with a 'patch' string")
            tests = req.get("tests")
            if tests is not None and not (isinstance(tests, list) and all(isinstance(t, str) for t in tests)):
                raise ValueError("run_public takes a list of test ids (or none for the public tests)")
            return run_public(executor, task.root, patch, tests, hidden=_is_reference(task, item.verifier))
        if task.spec.kind == "code" and op == "run_public":
            return public_tests(executor, task, candidate, item.hidden)
        if task.spec.kind == "state" and op == "states":
            calls = candidate.get("calls", []) if isinstance(candidate, dict) else []
            try:
                states = replay_calls(executor, task, calls if isinstance(calls, list) else [], nested=True)
            except Exception as exc:
                # The case's own calls, replayed by the harness: no verifier has a say in them.
                item.failure = item.failure or f"the harness could not replay the candidate: {exc}"[:300]
                raise
            return {"pre_state": states.get("pre_state", {}), "post_state": states.get("post_state", {})}
        if task.spec.kind == "state" and op == "run_public":
            calls = req.get("calls")
            if not isinstance(calls, list):
                raise ValueError("run_public takes a list of calls")
            return replay_calls(executor, task, calls, nested=True)
        raise ValueError(f"{op!r} is not available in a {task.spec.kind} task's env")

    return handle


def candidate_call(
    executor: Executor,
    task: Task,
    candidate: dict[str, Any],
    req: dict[str, Any],
    hidden: tuple[str, ...],
    item: _Item | None = None,
) -> dict[str, Any]:
    """``env.call``: run ``function(*args)`` of the candidate in its own sandbox.

    Within one decision the calls go to one candidate session (loaded once); without a
    decision to attach it to, each call is a run of its own.
    """
    function = req.get("function")
    args = req.get("args", [])
    if not isinstance(function, str) or not function.isidentifier() or not isinstance(args, list):
        raise ValueError("call takes a function name and a list of arguments")
    timeout = float(req.get("timeout") or CALL_LIMITS.timeout_s)
    timeout = min(max(timeout, 0.1), 30.0)
    source = candidate.get("source")
    if not isinstance(source, str):
        return {"ok": False, "value": None, "error": "the candidate has no source"}
    if item is not None:
        # With shared answers, a call the same candidate already answered (in another decision:
        # the reference's, another mutant's) gets that first answer again, whatever calls came
        # before it: two verifiers are compared on the same behaviour of the candidate. A call
        # nobody made yet starts the decision's session, which first makes this decision's
        # earlier calls, so that the candidate is where this decision has brought it.
        call = call_key(function, args, timeout)
        if call is None:
            raise ValueError("call takes JSON arguments")
        key = (hashlib.sha256(source.encode()).hexdigest(), call)
        item.calls.append(call)
        if item.answers is not None and item.session is None and key in item.answers:
            return item.answers[key]
        session = item.session
        if session is None:
            session = item.session = Session(
                executor, source, hidden, f"{task.id}/{item.case.id}", preload=_pool_of(task), on_failure=item.fail
            )
            for earlier in item.calls[:-1]:
                session.call(*json.loads(earlier))
        answer = session.call(function, args, timeout)
        if item.answers is not None:
            answer = item.answers.setdefault(key, answer)
        return answer
    spec = RunSpec(
        entry=Call(f"candidate.py:{function}", args=tuple(args)),
        files={"candidate.py": source},
        limits=Limits(timeout_s=timeout, memory_mb=CALL_LIMITS.memory_mb),
        hidden=hidden,
        nested=True,
        name=f"{task.id}:call",
        preload=_pool_of(task),
    )
    result = executor.run(spec)
    if result.ok:
        return {"ok": True, "value": result.value, "error": None}
    error = result.reason or result.status.value
    if result.exception is not None:
        error = f"{result.exception.type}: {result.exception.message}"
    return {"ok": False, "value": None, "error": error}


def public_tests(executor: Executor, task: Task, candidate: dict[str, Any], hidden: tuple[str, ...]) -> dict[str, Any]:
    """``env.run_public`` of a code task: the task's public tests with the candidate in place."""
    if task.public_tests is None:
        return {"ok": False, "outcomes": {}, "error": "this task has no public tests"}
    spec = RunSpec(
        entry=Call("vouch.exec._pytest:run_pytest", args=([*_PYTEST_ARGS, "test_public.py"],)),
        files={"candidate.py": candidate.get("source") or "", "test_public.py": task.public_tests},
        limits=Limits(timeout_s=30.0, memory_mb=CALL_LIMITS.memory_mb),
        hidden=hidden,
        nested=True,
        name=f"{task.id}:run_public",
        preload=_pool_of(task),
    )
    result = executor.run(spec)
    if not result.ok:
        return {"ok": False, "outcomes": {}, "error": result.reason}
    try:
        record = PytestRun.from_json(result.value)
    except PytestRecordError as exc:
        return {"ok": False, "outcomes": {}, "error": f"the run's pytest record could not be read: {exc}"}
    return {"ok": record.exit_code == 0, "outcomes": record.outcomes}


def replay_spec(task: Task, calls: list[Any], nested: bool) -> RunSpec:
    """The run that replays ``calls`` with the task's replay entry (harness code, in the task's pool)."""
    if task.spec.replay is None:
        raise UsageError(f"{task.root / 'task.toml'}: field replay: a state task needs a replay entry")
    return RunSpec(
        entry=Call(task.spec.replay, args=(calls,), kwargs=dict(task.spec.replay_args)),
        limits=REPLAY_LIMITS,
        nested=nested,
        name=f"{task.id}:replay",
        preload=_pool_of(task),
    )


def replay_calls(executor: Executor, task: Task, calls: list[Any], *, nested: bool) -> dict[str, Any]:
    result = executor.run(replay_spec(task, calls, nested))
    if not result.ok or not isinstance(result.value, dict):
        raise RuntimeError(f"replay failed: {result.reason}")
    answer: dict[str, Any] = result.value
    return answer


def _is_patch_task(task: Task) -> bool:
    """A code task whose candidates are patches of a repository (``vouch data build swebench``)."""
    return task.spec.source.benchmark == "swebench"


def _is_reference(task: Task, verifier: str | None) -> bool:
    """The decision's verifier is the task's own reference verifier, to the byte."""
    path = task.root / "reference" / "verifier.py"
    try:
        return verifier is not None and verifier == path.read_text()
    except OSError:
        return False


def _withheld(task: Task, hide: Sequence[str]) -> tuple[str, ...]:
    """The paths a decision's run must not read: the caller's (the tasks' withheld files), and
    for a verifier under test of a SWE-bench task also its worlds and repository."""
    if not hide or not _is_patch_task(task):
        return tuple(hide)
    from vouch.sources.swebench import withheld_paths

    return (*hide, *withheld_paths(task.root))


def _env_data(task: Task, *, sealed: bool) -> dict[str, Any]:
    if task.spec.kind == "code":
        return {"entry_point": task.spec.entry_point}
    if task.spec.kind == "state":
        if task.spec.replay is None:
            raise UsageError(f"{task.root / 'task.toml'}: field replay: a state task needs a replay entry")
        if sealed:
            # The run cannot import the benchmark: it asks for the states over the service channel.
            return {"tools": task.tools}
        # The states are built inside the verifier's run, when first read: one run per
        # decision, and the (large) snapshots never cross a process boundary.
        return {"tools": task.tools, "replay": {"entry": task.spec.replay, "kwargs": dict(task.spec.replay_args)}}
    return {"tools": task.tools}


MULTI_CASE_MAX_S = 300.0
"""The most a multi-case run may take: past it, the cases without a decision run alone."""
_RUN_MARGIN_S = 5.0
"""What a multi-case run keeps of its time for its end: it starts no case that could run past it."""


def _multi_case_limits(cases: int) -> Limits:
    """A multi-case run's limits: each case keeps the lone run's time in the run (an alarm),
    and the run as a whole gets a lone run's time plus some for each further case."""
    timeout = min(VERIFIER_LIMITS.timeout_s + 10.0 * (cases - 1), MULTI_CASE_MAX_S)
    return Limits(timeout_s=timeout, memory_mb=VERIFIER_LIMITS.memory_mb)


def _group_service(executor: Executor, items: Sequence[_Item]) -> Callable[[Any], Any]:
    """The service of a multi-case run: each request names its case and goes to that case's
    handler. Cases run in order, so a request for a later case ends the candidate sessions of
    the earlier ones (each holds a nested lane)."""
    handlers = [_service(executor, item) for item in items]
    lock = threading.Lock()
    current = 0

    def handle(req: Any) -> Any:
        nonlocal current
        case = req.get("case") if isinstance(req, dict) else None
        if type(case) is not int or not 0 <= case < len(items):
            raise ValueError("a request of a multi-case run names its case")
        with lock:
            for earlier in items[current:case]:
                if earlier.session is not None and earlier.box is not items[case].box:
                    earlier.session.close()
            current = max(current, case)
        return handlers[case]({k: v for k, v in req.items() if k != "case"})

    return handle


def _case_service(
    executor: Executor, items: Sequence[_Item], expect: Sequence[str | None] | None
) -> tuple[Callable[[Any], Any], dict[int, Any]]:
    """The service of a multi-case run (``_runenv.decide_many``) and the outcomes its cases
    report, by position.

    The run's own process (harness code) moves from case to case with ``{"op": "next"}``;
    the requests of the case being decided come wrapped as ``["case", request]`` (the run wraps
    whatever its case's process sends, and that process cannot send anything else). A wrapped
    request is always about the case the run last moved to, whatever it names: a verifier gets
    its own candidate, its own candidate's answers, its own states, and nothing of another case.
    Moving on ends the earlier cases' candidate sessions (each holds a nested lane)."""
    handlers = [_service(executor, item) for item in items]
    outcomes: dict[int, Any] = {}
    lock = threading.Lock()
    current = -1

    def handle(req: Any) -> Any:
        nonlocal current
        if isinstance(req, list) and len(req) == 2 and req[0] == "case":
            if current < 0 or not isinstance(req[1], dict):
                raise ValueError("a case's request is a JSON object, sent while the case is decided")
            inner = {k: v for k, v in req[1].items() if k != "case"}
            if inner.get("op") == "candidate":
                items[current].ready = True
                return items[current].case.candidate
            if inner.get("op") == "decided":
                outcomes[current] = inner.get("outcome")
                return {}
            return handlers[current](inner)
        if isinstance(req, dict) and req.get("op") == "next":
            with lock:
                if current >= 0 and expect is not None and _differs_outcome(outcomes.get(current), expect[current]):
                    return {"go": False, "why": "a decision other than the one expected"}
                for earlier in items[: current + 1]:
                    if earlier.session is not None:
                        earlier.session.close()
                current += 1
                if current >= len(items):
                    return {"go": False, "why": "no case left"}
            return {"go": True}
        raise ValueError("a multi-case run asks for its next case, or sends its case's requests")

    return handle, outcomes


def _vouch_failed(error: BaseException, note: str | None = None) -> DecisionResult:
    """The decision of a run vouch could not make (the pool failed): ERROR, with why."""
    return DecisionResult(Decision.ERROR, f"vouch could not run the decision: {error}"[:300], 0.0, note)


def _with_failure(item: _Item, made: DecisionResult) -> DecisionResult:
    """``made``, or ERROR when vouch's own machinery failed during the decision."""
    if item.failure is None:
        return made
    return replace(made, decision=Decision.ERROR, reason=item.failure)


def _differs_outcome(outcome: Any, expected: str | None) -> bool:
    return isinstance(outcome, dict) and _differs(_classify_case(outcome)[0], expected)


def _case_results(result: RunResult, cases: int, key: str = "results") -> tuple[list[dict[str, Any]], str | None]:
    """A multi-case run's per-case entries (``key`` of its value: the first cases, in order)
    and, when some cases have none, why: the caller decides those in runs of their own."""
    if not result.ok:
        return [], f"its task's multi-case run ended: {result.status.value} ({result.reason})"[:300]
    value = result.value
    entries = value.get(key) if isinstance(value, dict) else None
    if not isinstance(entries, list) or len(entries) > cases or not all(isinstance(e, dict) for e in entries):
        return [], "its task's multi-case run returned no per-case results"
    if len(entries) == cases:
        return entries, None
    stopped = value.get("stopped")
    why = stopped.get("why") if isinstance(stopped, dict) else None
    return entries, f"in its task's multi-case run, {why if isinstance(why, str) else 'cases went undecided'}"[:300]


def decide_cases(
    executor: Executor,
    items: Sequence[tuple[Task, Case, str | None]],
    *,
    hide: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[int, DecisionResult], None] | None = None,
    multi_case: bool = True,
    call_answers: CallAnswers | None = None,
) -> list[DecisionResult]:
    """Decide every (task, case, verifier source) through the executor; results in input order.

    A ``None`` verifier source is a missing verifier: INVALID without a run. ``hide`` lists
    paths the verifier's runs must not read (the tasks' withheld files). Verifiers under test
    go through a sealed executor (``sealed_executor``): their state tasks' states are replayed
    outside their runs and sent over the service channel. ``on_result(index,
    result)`` is called as each decision comes (from a worker thread), to store it at once.

    With ``multi_case`` (the default), the cases of one task for one verifier are decided in
    one run, in the order given, each still its own decision (``_runenv.decide_many``: a fresh
    verifier module per case). A case that crashes, hangs or runs out of memory there, and
    every case after one that changed shared state, is decided again in a run of its own, and
    its result's ``note`` says why.

    ``call_answers`` (V4V's C6: mutants and the reference on the same candidates) shares the
    candidates' answers to ``env.call`` between decisions: a call to a candidate is answered
    once, and later decisions that make it get that first answer, whatever they called before.
    A candidate whose answers vary from run to run, or with the calls made before (one that
    keeps state), gets the first ones everywhere, which is what comparing two verifiers on the
    same candidate needs: a difference comes from the verifiers, not from the candidate.
    """
    decided = _decide(executor, items, hide, progress, on_result, multi_case, None, call_answers)
    return [r for r in decided if r is not None]


def decide_until_differs(
    executor: Executor,
    items: Sequence[tuple[Task, Case, str | None]],
    expect: Sequence[str | None],
    *,
    hide: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[int, DecisionResult], None] | None = None,
    call_answers: CallAnswers | None = None,
) -> list[DecisionResult | None]:
    """``decide_cases`` for V4V's C6: ``expect`` holds, per item, the decision the reference
    made there. Each verifier's cases of a task run in the order given until one gets a PASS or
    FAIL other than the one expected; the cases after it are not decided (None)."""
    if len(expect) != len(items):
        raise UsageError(f"decide_until_differs got {len(items)} items but {len(expect)} expected decisions")
    return _decide(executor, items, hide, progress, on_result, True, list(expect), call_answers)


def _decide(
    executor: Executor,
    items: Sequence[tuple[Task, Case, str | None]],
    hide: Sequence[str],
    progress: Callable[[int, int], None] | None,
    on_result: Callable[[int, DecisionResult], None] | None,
    multi_case: bool,
    expect: list[str | None] | None,
    call_answers: CallAnswers | None = None,
) -> list[DecisionResult | None]:
    work = [_item(executor, t, c, v, hide, call_answers) for t, c, v in items]
    out: list[DecisionResult | None] = [None] * len(work)
    errors: list[BaseException] = []
    lock = threading.Lock()
    all_done = threading.Event()
    remaining = sum(w.verifier is not None for w in work)
    done = 0
    for i, w in enumerate(work):
        if w.verifier is None:
            out[i] = DecisionResult(Decision.INVALID, "missing verifier", 0.0)
            if on_result is not None:
                on_result(i, out[i])  # type: ignore[arg-type]

    def settle(i: int, result: DecisionResult | None, error: BaseException | None = None) -> None:
        nonlocal remaining, done
        with lock:
            out[i] = result
            if error is not None:
                errors.append(error)
            remaining -= 1
            done += 1
            count, finished = done, remaining == 0
        if on_result is not None and result is not None:
            on_result(i, result)
        if progress is not None:
            progress(count, len(work))
        if finished:
            all_done.set()

    def alone(i: int, note: str | None = None) -> None:
        w = work[i]
        w.ready, w.failure = False, None  # a fresh attempt at the decision
        spec = RunSpec(
            entry=Call("vouch.bench._runenv:decide", args=(w.task.spec.kind, w.case.candidate, w.env_data)),
            files={"verifier.py": w.verifier or ""},
            limits=VERIFIER_LIMITS,
            hidden=w.hidden,
            service=True,
            name=f"{w.task.id}/{w.case.id}",
            preload=_pool_of(w.task),
        )

        def finished(future: Future[RunResult]) -> None:
            # The verifier is done: its candidate session (and the lane it holds) goes now.
            if w.session is not None:
                w.session.close()
            error = future.exception()
            if error is not None:
                settle(i, _vouch_failed(error, note))
                return
            result = future.result()
            decision, reason = classify(result)
            if not w.ready and not result.ok:
                # The run ended before its harness said it was ready: before the verifier's code ran.
                decision, reason = Decision.ERROR, f"the run ended before the verifier's code ran: {reason}"[:300]
            settle(i, _with_failure(w, DecisionResult(decision, reason, result.duration_s, note)))

        try:
            future = executor.submit(spec, _service(executor, w))
        except Exception as exc:  # noqa: BLE001 - the pool's failure, not the verifier's
            settle(i, _vouch_failed(exc, note))
            return
        future.add_done_callback(finished)

    def together(indices: list[int]) -> None:
        members = [work[i] for i in indices]
        first = members[0]
        expected = [expect[i] for i in indices] if expect is not None else None
        limits = _multi_case_limits(len(members))
        spec = RunSpec(
            entry=Call(
                "vouch.bench._runenv:decide_many",
                args=(
                    first.task.spec.kind,
                    len(members),
                    first.env_data,
                    VERIFIER_LIMITS.timeout_s,
                    limits.timeout_s - _RUN_MARGIN_S,
                ),
            ),
            files={"verifier.py": first.verifier or ""},
            limits=limits,
            hidden=first.hidden,
            service=True,
            name=f"{first.task.id}/{len(members)} cases",
            preload=_pool_of(first.task),
        )
        service, outcomes = _case_service(executor, members, expected)

        def finished(future: Future[RunResult]) -> None:
            for w in members:
                if w.session is not None:
                    w.session.close()
            error = future.exception()
            if error is not None:
                for i in indices:
                    settle(i, _vouch_failed(error))
                return
            entries, why = _case_results(future.result(), len(indices), "cases")
            stopped_by_difference = False
            for position, i in enumerate(indices):
                entry = entries[position] if position < len(entries) else None
                outcome = outcomes.get(position)
                if entry is not None and entry.get("alone") is None and isinstance(outcome, dict):
                    decision, reason = _classify_case(outcome)
                    duration = entry.get("duration_s")
                    made = DecisionResult(decision, reason, duration if type(duration) is float else 0.0)
                    settle(i, _with_failure(work[i], made))
                    stopped_by_difference = expect is not None and _differs(decision, expect[i])
                elif entry is None and stopped_by_difference:
                    settle(i, None)  # the last decided case differs from the expected one: done
                else:
                    alone_why = entry.get("alone") if entry is not None else why
                    if entry is not None and alone_why is None:
                        alone_why = "the case's process reported no decision"
                    alone(i, f"decided in a run of its own: {alone_why}")

        try:
            future = executor.submit(spec, service)
        except Exception as exc:  # noqa: BLE001 - the pool's failure: every member is vouch's failure
            for i in indices:
                settle(i, _vouch_failed(exc))
            return
        future.add_done_callback(finished)

    groups: dict[tuple[int, str, tuple[str, ...]], list[int]] = {}
    for i, w in enumerate(work):
        if w.verifier is not None:
            # A SWE-bench decision waits on its repository's tests (minutes): those run alone.
            together_ok = multi_case and not _is_patch_task(w.task)
            key = (id(w.task), w.verifier, w.hidden) if together_ok else (i, "", ())
            groups.setdefault(key, []).append(i)
    for indices in groups.values():
        if len(indices) == 1:
            alone(indices[0])
        else:
            together(indices)
    if remaining:
        all_done.wait()
    if errors:
        raise errors[0]
    if progress is not None:
        progress(len(work), len(work))
    return out


def decide_verifiers(
    executor: Executor,
    batch: Sequence[tuple[Task, Case, Sequence[str]]],
    *,
    hide: Sequence[str] = (),
    call_answers: CallAnswers | None = None,
) -> list[list[DecisionResult]]:
    """Decide each (task, case, verifiers): one case with many verifiers (V4V's C6: a task's
    mutants), in one run per entry (``_runenv.decide_verifiers``), each still its own decision
    (a fresh module, ``random`` as the run started, the case's own time limit). One candidate
    session answers every verifier's ``env.call``s. The verifiers a run leaves undecided (it
    crashed, hung, ran out of memory, or a verifier changed shared state) are decided in runs
    of their own, whose results say why. Results per entry, in the verifiers' order."""
    out: list[list[DecisionResult]] = [[] for _ in batch]
    futures: list[tuple[int, list[_Item], Future[RunResult]]] = []
    leftovers: list[tuple[int, str]] = []  # (entry, why its run left verifiers undecided)
    for n, (task, case, verifiers) in enumerate(batch):
        if len(verifiers) < 2 or _is_patch_task(task):
            leftovers.append((n, ""))
            continue
        box: dict[str, Session] = {}
        items = [_item(executor, task, case, v, hide, call_answers, box) for v in verifiers]
        spec = RunSpec(
            entry=Call(
                "vouch.bench._runenv:decide_verifiers",
                args=(
                    task.spec.kind,
                    case.candidate,
                    items[0].env_data,
                    VERIFIER_LIMITS.timeout_s,
                    len(items),
                    _answers_of(call_answers, case.candidate) if task.spec.kind == "code" else {},
                ),
            ),
            files={MUTANT_FILE.format(i): v for i, v in enumerate(verifiers)},
            limits=_multi_case_limits(len(items)),
            hidden=items[0].hidden,
            service=True,
            name=f"{task.id}/{case.id}/{len(items)} verifiers",
            preload=_pool_of(task),
        )
        futures.append((n, items, executor.submit(spec, _group_service(executor, items))))
    for n, items, future in futures:
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001 - the pool's failure: each verifier's decision is ERROR
            out[n] = [_vouch_failed(exc) for _ in items]
            continue
        finally:
            session = items[0].session
            if session is not None:
                session.close()
        entries, why = _case_results(result, len(items))
        for entry, item in zip(entries, items, strict=False):
            decision, reason = _classify_case(entry)
            duration = entry.get("duration_s")
            made = DecisionResult(decision, reason, duration if type(duration) is float else 0.0)
            out[n].append(_with_failure(item, made))
        if len(entries) < len(items):
            leftovers.append((n, f"decided in a run of its own: {why}"))
    alone = [(n, why, v) for n, why in leftovers for v in batch[n][2][len(out[n]) :]]
    if alone:
        decided = decide_cases(
            executor, [(batch[n][0], batch[n][1], v) for n, _, v in alone], hide=hide, call_answers=call_answers
        )
        for (n, why, _), single in zip(alone, decided, strict=True):
            out[n].append(replace(single, note=why) if why else single)
    return out


def _item(
    executor: Executor,
    task: Task,
    case: Case,
    verifier: str | None,
    hide: Sequence[str],
    answers: CallAnswers | None,
    box: dict[str, Session] | None = None,
) -> _Item:
    """One decision to make: what its run may not read, what its env holds, where its answers go."""
    return _Item(
        task=task,
        case=case,
        verifier=verifier,
        hidden=_withheld(task, hide),
        env_data=_env_data(task, sealed=executor.sealed),
        answers=answers,
        box={} if box is None else box,
    )


def _differs(decision: Decision, expected: str | None) -> bool:
    return (
        expected in (Decision.PASS.value, Decision.FAIL.value)
        and decision.value
        in (
            Decision.PASS.value,
            Decision.FAIL.value,
        )
        and decision.value != expected
    )
