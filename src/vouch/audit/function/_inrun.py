"""Code that runs *inside* a sandbox for the function-level audit; never in the judge's process.

Called through the engine as ``Call("vouch.audit.function._inrun:<function>", ...)`` on a run whose
working directory holds ``solution.py`` (the program: prompt + completion, or G, or the null
body):

* ``t0`` runs HumanEval's ``check`` with every ``assert`` recorded on its own (so the audit
  sees *which* T0 assertions hold, e.g. in the null world), the inputs T0 passed, optionally
  branch coverage of the program under T0 and T0 on mutants of the program;
* ``outputs`` calls the entry point on many inputs, each under its own timer.

What comes back is what the run reported: the program shares this process, so these are the
run's claims (the trial audit's detectors look for tampering; docs/audit.md says more).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from types import ModuleType
from typing import Any

from vouch.exec.runside import load_module_file, to_data

SOLUTION = "solution.py"
_MAX_RECORDED = 200
_MESSAGE_CHARS = 200


class _CallTimeout(BaseException):
    """Raised by the timer; a BaseException so that ``except Exception`` in a program misses it."""


_DEFER_S = 0.005


WALL_BACKSTOP = 5.0
"""A call's CPU-time timer is backed by a wall-clock one this many times longer: a call that
sleeps or waits spends no CPU time."""


def _on_alarm(signum: int, frame: Any) -> None:
    # Never raise inside coverage's own code: its C tracer takes a lock through a Python call,
    # and a timeout raised there leaves the lock held, so that reading the arcs hangs the run.
    # Fire again a moment later, once the program's code is running.
    coverage = sys.modules.get("coverage")
    where = os.path.dirname(coverage.__file__ or "") + os.sep if coverage is not None else None
    while where is not None and frame is not None:
        if frame.f_code.co_filename.startswith(where):
            # The timer that fired: CPU time (SIGPROF) or wall-clock time (SIGALRM).
            signal.setitimer(signal.ITIMER_PROF if signum == signal.SIGPROF else signal.ITIMER_REAL, _DEFER_S)
            return
        frame = frame.f_back
    raise _CallTimeout


@contextlib.contextmanager
def _timer(seconds: float) -> Iterator[None]:
    """Raise ``_CallTimeout`` in the code run inside once it has used ``seconds`` of CPU time, or
    ``WALL_BACKSTOP`` times that of wall-clock time. CPU time, so that how loaded the machine is
    does not decide whether a call ran out of time (and so a verdict)."""
    previous_wall = signal.signal(signal.SIGALRM, _on_alarm)
    previous_cpu = signal.signal(signal.SIGPROF, _on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_BACKSTOP)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, previous_cpu)
        signal.signal(signal.SIGALRM, previous_wall)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Send what the program prints nowhere: output floods cost time, not memory."""
    sink = open(os.devnull, "w")  # noqa: SIM115 - closed below
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = sink
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        sink.close()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _CallTimeout):
        return "timeout"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:_MESSAGE_CHARS]


def _encode(value: Any) -> dict[str, Any]:
    try:
        data = to_data(value)
        # As the result frame will encode it: an int past Python's text conversion limit (4,300
        # digits) cannot cross, and must not take the other answers of the run with it.
        json.dumps(data)
        return {"ok": True, "value": data}
    except (TypeError, RecursionError, ValueError):
        return {"ok": True, "value": None, "opaque": _shown(value)}


def _shown(value: Any) -> str:
    try:
        return repr(value)[:_MESSAGE_CHARS]
    except Exception:  # noqa: BLE001 - an int past the text limit, or a repr that raises
        return f"<a {type(value).__name__} that cannot be shown>"


class _Asserts(ast.NodeTransformer):
    """Wraps each ``assert`` of ``check`` so that its outcome is recorded and the test goes on."""

    def visit_Assert(self, node: ast.Assert) -> Any:
        tag = ast.Constant(f"L{node.lineno}")
        call = ast.Expr(ast.Call(ast.Name("__vouch_enter__", ast.Load()), [tag], []))
        passed = ast.Expr(ast.Call(ast.Name("__vouch_pass__", ast.Load()), [tag], []))
        failed = ast.Expr(
            ast.Call(ast.Name("__vouch_fail__", ast.Load()), [tag, ast.Name("__vouch_exc__", ast.Load())], [])
        )
        handler = ast.ExceptHandler(ast.Name("Exception", ast.Load()), "__vouch_exc__", [failed])
        return ast.Try([call, node], [handler], [passed], [])


def _instrumented_check(test_source: str) -> Any:
    tree = ast.parse(test_source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            node.body = [_Asserts().visit(stmt) for stmt in node.body]
    return compile(ast.fix_missing_locations(tree), "test.py", "exec", dont_inherit=True)


def _run_check(
    namespace: dict[str, Any], code: Any, fn: Callable[..., Any], per_assert_s: float, record: list[Any] | None
) -> dict[str, Any]:
    passed: dict[str, bool] = {}
    failures: dict[str, str] = {}

    def enter(_tag: str) -> None:
        signal.setitimer(signal.ITIMER_REAL, per_assert_s)

    def ok(tag: str) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        passed.setdefault(tag, True)

    def fail(tag: str, exc: BaseException) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        passed[tag] = False
        failures.setdefault(tag, _describe(exc))

    candidate = fn
    if record is not None:

        def recorder(*args: Any) -> Any:
            if len(record) < _MAX_RECORDED:
                try:
                    record.append(to_data(copy.deepcopy(list(args))))
                except (TypeError, RecursionError, ValueError, copy.Error):
                    pass
            return fn(*args)

        candidate = recorder
        # T0 may call the function by its name (MBPP's asserts run in the program's namespace):
        # that name is the recorder too, in the test's namespace only.
        for name in [name for name, value in namespace.items() if value is fn]:
            namespace[name] = recorder
    namespace.update(__vouch_enter__=enter, __vouch_pass__=ok, __vouch_fail__=fail)
    error = None
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        exec(code, namespace)  # noqa: S102 - the benchmark's own test, inside the sandbox
        namespace["check"](candidate)
    except _CallTimeout:
        error = "timeout"
    except BaseException as exc:  # noqa: BLE001 - a crash of check is an outcome
        error = _describe(exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return {
        "passed": sorted(t for t, v in passed.items() if v),
        "failed": sorted(t for t, v in passed.items() if not v),
        "failures": failures,
        "error": error,
    }


def _coverage_of(path: str) -> Any:
    import coverage

    return coverage.Coverage(data_file=None, branch=True, include=[path], config_file=False)


def warm_coverage() -> None:
    """Start and stop a tracer once, in the pool (``PRELOAD``): a process's first
    ``Coverage.start`` costs about 0.1 s more than the next ones, and every run forked from the
    warmed pool skips it (the audit traces each passing program twice)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no data was collected: there was nothing to trace
        tracer = _coverage_of(os.path.join(os.sep, "vouch-warm-coverage", SOLUTION))
        tracer.start()
        tracer.stop()
        tracer.get_data()


def t0(
    entry_point: str,
    test_source: str,
    *,
    per_assert_s: float = 3.0,
    record_inputs: bool = False,
    coverage_lines: bool = False,
    mutants: list[str] | None = None,
    mutant_budget_s: float = 6.0,
) -> dict[str, Any]:
    """Run T0 on ``solution.py`` with each assertion recorded; optionally coverage and mutants.

    Without coverage, mutants or T0's inputs (a trial's run of T0, the one that decides whether
    it passes), the program runs in the process every witness of it runs in (``_host``), in the
    benchmark's module: T0's run and a witness's differ in the test alone. With them (G's and the
    null programs' runs of the task analysis), in this process.

    Returns a dict: ``loaded`` (the program imported), ``load_error``, ``passed``/``failed``
    assertion tags (``L<line of the test>``), ``failures`` (tag -> first failure), ``error``
    (check itself crashed), ``inputs`` (T0's argument lists, when asked), ``coverage`` (missing
    branch arcs and totals, when asked) and ``mutants`` (per mutant: killed, survived).
    """
    if not (record_inputs or coverage_lines or mutants):
        return _t0_apart(entry_point, test_source, per_assert_s)
    path = os.path.abspath(SOLUTION)
    code = _instrumented_check(test_source)
    tracer = _coverage_of(path) if coverage_lines else None
    out: dict[str, Any] = {"loaded": False}
    with _quiet():
        if tracer is not None:
            tracer.start()
        try:
            with _timer(per_assert_s):
                module = load_module_file(SOLUTION, "solution")
            fn = getattr(module, entry_point)
        except BaseException as exc:  # noqa: BLE001 - a program that does not load is an outcome
            if tracer is not None:
                tracer.stop()
            out["load_error"] = _describe(exc)
            return out
        out["loaded"] = True
        recorded: list[Any] | None = [] if record_inputs else None
        out |= _run_check(dict(vars(module)), code, fn, per_assert_s, recorded)
        if tracer is not None:
            tracer.stop()
            out["coverage"] = _branches(tracer, path)
        if recorded is not None:
            out["inputs"] = recorded
        if mutants:
            out["mutants"] = _mutants(mutants, entry_point, code, per_assert_s, mutant_budget_s)
    return out


T0_ANSWER_S = 15.0
"""How long T0's run waits for the program's record of T0 (each assertion has its own timer
there; a program that stops them is stopped by this one)."""


def _t0_apart(entry_point: str, test_source: str, per_assert_s: float) -> dict[str, Any]:
    """T0's run in the program's own process (``_host.serve``): the record it sends back is T0's
    claim, as the benchmark's own run of T0 would make it. A process vouch could not set up
    raises ``ChildSetupError`` (vouch's failure, never a record)."""
    from vouch.audit.function._host import Shape, serve
    from vouch.exec.runside import ChildSetupError, NoAnswer, NotLoaded, Program, ProgramGone

    shape = Shape(test_source, entry_point)
    program = Program(SOLUTION, "solution", answer_s=T0_ANSWER_S, serve=partial(serve, shape=shape))
    try:
        program.start()
        answer = program.ask({"op": "t0", "per_assert_s": per_assert_s})
    except ChildSetupError as exc:
        # Said by this process, which runs none of the program's code (``_runs.setup_failure``).
        return {"loaded": False, "setup_error": str(exc)[:_MESSAGE_CHARS]}
    except NotLoaded as exc:
        return {"loaded": False, "load_error": str(exc).removeprefix("the program does not load: ")}
    except ProgramGone as exc:
        error = "timeout" if isinstance(exc, NoAnswer) else str(exc)[:_MESSAGE_CHARS]
        return {"loaded": True, "passed": [], "failed": [], "failures": {}, "error": error}
    finally:
        program.close()
    return {"loaded": True} | _claimed_record(answer.get("t0"))


def _claimed_record(record: Any) -> dict[str, Any]:
    """T0's record as the program's process sent it, kept to its shape (tags are text)."""
    if not isinstance(record, dict):
        return {"passed": [], "failed": [], "failures": {}, "error": "the program's process sent no record of T0"}

    def tags(value: Any) -> list[str]:
        return [str(t)[:40] for t in value[:10_000]] if isinstance(value, list) else []

    failures = record.get("failures")
    error = record.get("error")
    return {
        "passed": tags(record.get("passed")),
        "failed": tags(record.get("failed")),
        "failures": {str(k)[:40]: str(v)[:_MESSAGE_CHARS] for k, v in failures.items()}
        if isinstance(failures, dict)
        else {},
        "error": None if error is None else str(error)[:_MESSAGE_CHARS],
    }


def _branches(cov: Any, path: str) -> dict[str, Any]:
    # coverage 7.17.3 (pinned): the analysis object gives the branch arcs T0 never took.
    analysis = cov._analyze(path)
    missing = analysis.missing_branch_arcs()
    return {
        "branches": int(analysis.numbers.n_branches),
        "missing_branches": int(analysis.numbers.n_missing_branches),
        "missing_arcs": {str(line): sorted(targets) for line, targets in missing.items()},
        "executed_lines": sorted(set(analysis.statements) - set(analysis.missing)),
    }


def _mutants(sources: list[str], entry_point: str, code: Any, per_assert_s: float, budget_s: float) -> list[str]:
    results: list[str] = []
    start = time.monotonic()
    for index, source in enumerate(sources):
        if time.monotonic() - start > budget_s:
            results.extend("invalid" for _ in sources[index:])
            break
        module = ModuleType("solution_mutant")
        try:
            with _timer(per_assert_s):
                exec(compile(source, SOLUTION, "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - sandboxed
            fn = module.__dict__[entry_point]
        except BaseException:  # noqa: BLE001 - a mutant that breaks loading is killed by T0
            results.append("killed")
            continue
        outcome = _run_check(dict(module.__dict__), code, fn, min(per_assert_s, 1.0), None)
        results.append("survived" if not outcome["failed"] and outcome["error"] is None else "killed")
    return results


PROGRESS_MARK = "vouch-input "
"""Written to fd 2 before each call of ``outputs``, with the input's index."""
SLOW_S = 0.05
"""Calls that use more CPU time than this report it (``"s"``)."""
ARCS_FIRST = 300
"""Branch arcs are recorded over the first this many calls only (tracing costs several times a call)."""


def outputs(
    entry_point: str,
    inputs: list[Any],
    per_call_s: float = 1.0,
    budget_s: float = 20.0,
    arcs: bool = False,
    arcs_per_call: bool = False,
    give_up_after: int | None = None,
    test: str | None = None,
) -> dict[str, Any]:
    """Call the entry point of ``solution.py`` on each argument list, each under its own timer.

    Returns ``{"loaded": bool, "load_error": str | None, "results": [...]}``; each result is
    ``{"ok": True, "value": data}`` (``opaque`` holds a repr when the value is not plain data),
    ``{"ok": False, "error": "Type: message"}``, or ``{"ok": False, "error": "timeout"}``;
    calls past ``budget_s`` are ``{"ok": False, "error": "skipped"}``, and calls past the shortened timer
    of a program that already ran out of time thrice ``{"ok": False, "error": "cut short"}``. With ``arcs``, also the
    branch arcs of ``solution.py`` the first ``ARCS_FIRST`` calls took (``"arcs": [[from, to], ...]``);
    with ``arcs_per_call`` as well, the arcs of each of those calls (``"call_arcs"``, one list per call).
    With ``give_up_after``, the calls after that many timeouts are ``skipped`` (a program known
    to hang, such as a mutant of G, is told apart already). With the task's ``test``, the program
    is built into the benchmark's module (``_host.benchmark_module``), as in T0's and the
    witnesses' runs, and prints to the stream those give it.
    """
    from vouch.exec.runside import from_data

    start = time.monotonic()
    results: list[dict[str, Any]] = []
    tracer = _coverage_of(os.path.abspath(SOLUTION)) if arcs or arcs_per_call else None
    if tracer is not None:
        tracer.start()
    try:
        loaded = _call_all(
            entry_point,
            inputs,
            per_call_s,
            budget_s,
            start,
            results,
            from_data,
            tracer,
            per_call=arcs_per_call,
            give_up_after=give_up_after,
            test=test,
        )
    finally:
        if tracer is not None:
            tracer.stop()
    out: dict[str, Any] = {"loaded": loaded is None, "load_error": loaded, "results": results}
    if tracer is not None and loaded is None:
        data = tracer.get_data()
        out["arcs"] = sorted({tuple(a) for f in data.measured_files() for a in (data.arcs(f) or [])})
        if arcs_per_call:
            out["call_arcs"] = _arcs_by_context(data, min(len(results), ARCS_FIRST))
    return out


def _arcs_by_context(data: Any, calls: int) -> list[list[tuple[int, int]]]:
    """The arcs each call took (calls ran under coverage contexts ``c<index>``)."""
    measured = data.measured_contexts()
    out: list[list[tuple[int, int]]] = []
    for index in range(calls):
        if f"c{index}" not in measured:
            out.append([])  # cut short before it ran, or the tracer had stopped
            continue
        data.set_query_contexts([f"^c{index}$"])
        out.append(sorted({tuple(a) for f in data.measured_files() for a in (data.arcs(f) or [])}))
    data.set_query_contexts(None)
    return out


def _call_all(
    entry_point: str,
    inputs: list[Any],
    per_call_s: float,
    budget_s: float,
    start: float,
    results: list[dict[str, Any]],
    from_data: Callable[[Any], Any],
    tracer: Any = None,
    *,
    per_call: bool = False,
    give_up_after: int | None = None,
    test: str | None = None,
) -> str | None:
    from vouch.audit.function._host import Caller, Shape, benchmark_module, swallowed

    with swallowed() if test is not None else _quiet():
        try:
            with _timer(per_call_s * 2):
                if test is None:
                    fn = getattr(load_module_file(SOLUTION, "solution"), entry_point)
                else:
                    with open(SOLUTION, encoding="utf-8", errors="surrogateescape") as f:
                        source = f.read()
                    namespace = benchmark_module(source, os.path.abspath(SOLUTION), Shape(test, entry_point))
                    fn = Caller(namespace, entry_point)
        except BaseException as exc:  # noqa: BLE001 - an outcome
            return _describe(exc)
        timeouts = 0
        for index, data in enumerate(inputs):
            if index == ARCS_FIRST and tracer is not None:
                tracer.stop()
                tracer = None
            if time.monotonic() - start > budget_s or (give_up_after is not None and timeouts >= give_up_after):
                results.append({"ok": False, "error": "skipped"})
                continue
            # Where the run is, on the real stderr: a process the program kills tells the audit
            # which input killed it, so the others still get their rows (``_trial``).
            os.write(2, f"\n{PROGRESS_MARK}{index}\n".encode())
            if per_call and tracer is not None:
                tracer.switch_context(f"c{index}")
            args = from_data(data)
            # A program that has run out of time thrice gets a twentieth of the timer from then on,
            # so that one that hangs on a kind of input does not spend the run's budget on it.
            timer = per_call_s if timeouts < 3 else per_call_s / 20
            try:
                began = time.process_time()
                with _timer(timer):
                    value = fn(*copy.deepcopy(args))
                took = time.process_time() - began
                # How long a slow call took: a trial too slow where G is quick is wrong (and G's own
                # slow inputs are no ground for that).
                results.append(_encode(value) | ({"s": round(took, 3)} if took > SLOW_S else {}))
            except BaseException as exc:  # noqa: BLE001 - an outcome
                error = _describe(exc)
                timeouts += error == "timeout"
                if error == "timeout" and tracer is not None:
                    # A timer that fires inside traced code can leave the tracer unable to let later
                    # timers through; the arcs so far are kept.
                    tracer.stop()
                    tracer = None
                # Out of the shortened timer says nothing about the full one: no difference rests on it.
                results.append(
                    {"ok": False, "error": "cut short" if error == "timeout" and timer < per_call_s else error}
                )
    return None


ANSWER_S = 5.0
"""A witness run waits this long for any one answer of the program. G answered the witness's
input within the search's per-call timer (1 s), in a run of its own; a program that gives no
answer by then fails the call by an assertion that names the time."""
ANSWERS_S = 10.0
"""A witness run waits this long for all the program's answers together: half of the run's 20 s
(``_witness.LIMITS``), so that pytest always has the time to finish and report the test."""


def _shaped(test: str | None, entry_point: str | None) -> Any:
    """The program's side for a ``Program`` (``runside.Serve``): the benchmark's module
    (``_host``) when the task's test and entry point are known, else the program as a module."""
    if test is None or entry_point is None:
        return None
    from vouch.audit.function._host import Shape, serve

    return partial(serve, shape=Shape(test, entry_point))


def run_witness(
    test_file: str,
    answer_s: float = ANSWER_S,
    answers_s: float = ANSWERS_S,
    test: str | None = None,
    entry_point: str | None = None,
) -> dict[str, Any]:
    """Run one witness test file with pytest; returns the run's record (``vouch.exec.PytestRun``).

    The program (``solution.py``) never runs in this process: ``solution`` is a module whose
    functions are called in a child process that alone loads the program, and only plain data
    comes back (``vouch.exec._apart``). The test's comparisons are then the harness's, on data,
    and an object that claims to equal anything (or that is not data at all) fails it. Judge and
    judged never share a process, as for a verifier and its candidate.

    The program cannot stall, interrupt or end this process (it is PID 1 of a PID namespace of
    its own, and each answer has a deadline: ``answer_s``, and ``answers_s`` for all of them):
    what it does instead of answering fails the test by an assertion naming it, and pytest
    reports the test.

    With the task's ``test`` (T0's source) and ``entry_point``, the program's process is the one
    T0's run gives it (``_host``): the benchmark's module, called from a ``check``. It starts
    before pytest does, so that nothing of the test runner is in what it inherits.
    """
    import pytest

    from vouch.exec.runside import POOL_ARGS, Program, make_collector

    # The test is read before the program's process starts (its file is out of the program's
    # reach from then on), and pytest collects it from here.
    with open(test_file, "rb") as f:
        source = f.read()
    program = Program(
        SOLUTION,
        "solution",
        hide=[test_file],
        answer_s=answer_s,
        answers_s=answers_s,
        serve=_shaped(test, entry_point),
    )
    program.start()
    sys.modules["solution"] = program.module()
    collector = make_collector()
    try:
        with _quiet():
            code = pytest.main(
                [*POOL_ARGS, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", test_file],
                plugins=[collector, _ReadFirst(os.path.abspath(test_file), source)],
            )
    finally:
        program.close()
        sys.modules.pop("solution", None)
    record: dict[str, Any] = collector.record(code).to_json()
    return record


class _ReadFirst:
    """A pytest plugin: the test module at ``path`` is built from ``source``, read before the
    program's process started, with pytest's own assertion rewriting (the file itself may be
    empty by now: a program that shares the judge's filesystem must not read what it expects)."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source

    def pytest_pycollect_makemodule(self, module_path: Any, parent: Any) -> Any:
        import pytest

        if str(module_path) != self.path:
            return None
        plugin = self

        class FromSource(pytest.Module):
            def _getobj(self) -> ModuleType:
                return plugin.module()

        return FromSource.from_parent(parent, path=module_path)

    def module(self) -> ModuleType:
        from _pytest.assertion.rewrite import rewrite_asserts

        tree = ast.parse(self.source, filename=self.path)
        rewrite_asserts(tree, self.source, self.path)
        name = os.path.splitext(os.path.basename(self.path))[0]
        module = ModuleType(name)
        module.__file__ = self.path
        sys.modules[name] = module
        exec(compile(tree, self.path, "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - vouch's witness
        return module


APART_BUDGET_S = 30.0
"""How long ``outputs_apart`` asks in all; the inputs left after it are ``skipped``."""
MAX_RESTARTS = 16
"""Programs ``outputs_apart`` starts again after one ended instead of answering."""


def outputs_apart(
    entry_point: str,
    inputs: list[Any],
    answer_s: float = ANSWER_S,
    budget_s: float = APART_BUDGET_S,
    test: str | None = None,
) -> dict[str, Any]:
    """Ask ``solution.py``'s entry point each input as a witness run asks it: the program in a
    process of its own (``vouch.exec._apart``), only data back. Rows as ``outputs`` gives them;
    a program that ends its process instead of answering gives ``{"ok": False, "error": "died:
    ..."}`` and a fresh process answers the next input.

    What the program answers in its own run of the search (``outputs``) is its claim in a process
    it shares with vouch's harness; these rows are what its witnesses would see. The audit counts
    a search's difference, or a vote, only where the two agree.
    """
    from vouch.exec.runside import NoAnswer, NotData, NotLoaded, Program, ProgramGone, from_data

    start = time.monotonic()
    results: list[dict[str, Any]] = []
    serve = _shaped(test, entry_point)
    programs = [Program(SOLUTION, "solution", answer_s=answer_s, serve=serve)]
    programs[0].start()

    def ask(args: tuple[Any, ...]) -> dict[str, Any]:
        try:
            return _encode(programs[-1].call(entry_point, args, {}))
        except NotData as exc:
            return {"ok": True, "value": None, "opaque": str(exc)[:_MESSAGE_CHARS]}
        except NoAnswer:
            return {"ok": False, "error": "timeout"}
        except ProgramGone as exc:
            return {"ok": False, "error": f"died: {str(exc)[:_MESSAGE_CHARS]}"}
        except NotLoaded as exc:
            return {"ok": False, "error": f"NotLoaded: {str(exc)[:_MESSAGE_CHARS]}"}
        except Exception as exc:  # noqa: BLE001 - the program's exception, rebuilt by its name
            return {"ok": False, "error": _describe(exc)}

    try:
        for data in inputs:
            if time.monotonic() - start > budget_s or len(programs) > MAX_RESTARTS:
                results.append({"ok": False, "error": "skipped"})
                continue
            args = tuple(from_data(data))
            row = ask(args)
            if programs[-1].gone is not None:
                # A witness asks once, of a fresh process: a program that ended here (after the
                # calls before) is asked this input again by one that answered nothing yet.
                programs[-1].close()
                programs.append(Program(SOLUTION, "solution", answer_s=answer_s, serve=serve))
                row = ask(args) if str(row.get("error")).startswith("died:") else row
                if programs[-1].gone is not None:
                    programs[-1].close()
                    programs.append(Program(SOLUTION, "solution", answer_s=answer_s, serve=serve))
            results.append(row)
    finally:
        programs[-1].close()
    return {"loaded": True, "load_error": None, "results": results}
