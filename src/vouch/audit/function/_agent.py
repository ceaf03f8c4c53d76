"""The ``agent`` witness source at function level: the auditing model writes witness tests.

Per audited trial, the model sees P, the trial's program s, G (the auditor may see it; the
trial's author did not), T0, the requirements checklist and the evidence already collected
(ghost branches, surviving mutants, detector flags, the offline differences and the inputs
ruled ambiguous). Its tools: ``run_witness`` (a pytest file against R[G] and R[s], once each,
one execution of the budget), ``submit_witness`` (ends an iteration) and ``give_up``. At most
k submissions (``AuditConfig.k``) go through the same validation as offline witnesses (three
passes in R[G], three failures in R[s] by an AssertionError), a static check that the test
reaches into ``solution`` only for names P defines, and re-judging by the model against P
(``_agent_calls.rejudge``). The conversation goes on across iterations: a discarded witness
is answered with why. Everything goes to ``<witness dir>/<trial>/trace.jsonl``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vouch.agent import Message, TraceWriter
from vouch.audit._agent_calls import ModelUnavailable, WitnessAgent, discarded_message, rejudge
from vouch.audit._ambiguity import voting_models, withheld_from
from vouch.audit._form import Found
from vouch.audit._validation import reported
from vouch.audit.function import _witness
from vouch.audit.function._agent_tools import Runner, SerialRunner, Submission, WitnessTools, foreign_names, p_names
from vouch.audit.function._detectors import detect
from vouch.audit.function._jobs import MIN_VOTERS, ProgramJob, TaskContext, found_in
from vouch.audit.function._trial import _contested, _ghosts, _make_witness, _surviving, ambiguity
from vouch.core import Budgets, Validation, Witness
from vouch.errors import UsageError
from vouch.exec import RunResult

if TYPE_CHECKING:
    from vouch.audit.function._jobs import SearchRun
    from vouch.audit.function._runs import AuditConfig, Engine

SYSTEM_PROMPT = """\
You audit one trial of a coding benchmark: a program s that passes the official tests T0 of a
task. Your job is to find a witness test for a defect of s, if it has one: a pytest file that
checks behaviour the task's prompt P states or clearly implies, passes on the reference solution
G and fails on s. G is the oracle: a test G fails encodes a wrong expectation. Test only what P
asks for, never G's incidental choices (an order or tie-break P leaves open, an error message,
behaviour on inputs P excludes); a reviewer who sees only P and your test will reject anything
else.

The file runs in a directory where `solution.py` is the program under test (P followed by a
body): import only names P defines, e.g. `from solution import <entry point>`. Each test must fail on s
by an `assert` about the value P requires; turn an exception s raises on a valid input into an
assertion failure that says so.

Tools: run_witness(source) runs your file once on G and once on s (one execution of a limited
budget) and shows each test's outcome. submit_witness(source, clause_id) submits a file for
validation (three runs on G that must pass, three on s that must fail by AssertionError, then the
review against P) and names the checklist clause it checks. give_up(reason) ends the audit of
this trial when you hold s correct, or find no witness. Work only through the tools.
"""

NUDGE = (
    "error: your reply had no tool call. Work only through the tools: run_witness to try a test, "
    "submit_witness to submit one, give_up when you find none."
)
MAX_SHOWN = 5
"""Items of each kind of evidence shown to the model."""


def _fence(text: str) -> str:
    return f"```python\n{text.rstrip()}\n```"


def first_message(ctx: TaskContext, job: ProgramJob, config: AuditConfig, budgets: Budgets) -> str:
    """What the agent is shown of one trial: P, s, G, T0, the checklist and the evidence."""
    p = ctx.problem
    checklist = "\n".join(
        f"- {c.id} [{c.kind}] {c.text} (T0 covers it with: {', '.join(c.covered_by) or 'none'})" for c in ctx.checklist
    )
    t0 = job.t0
    passed = f"{len(t0.tests_passed)} of {t0.tests_total}" if t0 is not None else "?"
    evidence = [
        f"- T0 on s: {passed} assertions pass; in the null world these already pass: "
        f"{', '.join(ctx.null_passing) or 'none'}"
    ]
    ghosts, coverage = _ghosts(job, ctx)
    if coverage is not None:
        evidence.append(f"- branch coverage of s under T0: {coverage:.0%}")
    for g in ghosts[:MAX_SHOWN]:
        target = f"line {g.to_line}" if g.to_line else "the function's exit"
        evidence.append(f"- ghost branch (T0 never takes it): line {g.line} -> {target}: `{g.code}` ({g.note})")
    for m in _surviving(job)[:MAX_SHOWN]:
        evidence.append(f"- surviving mutant (T0 does not kill it), line {m.line}: {m.description}")
    for f in detect(job.program, p.entry_point, p.prompt, ctx.asserts, ctx.examples)[:MAX_SHOWN]:
        evidence.append(f"- detector {f.detector}" + (f" at line {f.line}" if f.line else "") + f": {f.detail}")
    for d in job.diffs[:MAX_SHOWN]:
        evidence.append(
            f"- offline difference: {p.entry_point}(*{d.args!r}) gives {d.actual!r} on s, {d.expected!r} on G"
        )
    if len(job.diffs) > MAX_SHOWN:
        evidence.append(f"  ... and {len(job.diffs) - MAX_SHOWN} more offline differences")
    for key in sorted(ctx.contested)[:MAX_SHOWN]:
        evidence.append(
            f"- ambiguous input (most passing trials answer it differently from G; never a refutation): {key}"
        )
    if ctx.pool_note:
        evidence.append(f"- the offline search could not work on this task: {ctx.pool_note}")
    return (
        f"Trial {job.first_trial} of task {job.task_id}. Entry point: {p.entry_point}.\n"
        f"Budgets: at most {config.k} submissions; {budgets.executions} run_witness executions and "
        f"{budgets.wall_s:.0f} s in all; {budgets.turns} turns per submission.\n\n"
        f"## P, the task prompt\n{_fence(p.prompt)}\n\n"
        f"## s, the trial's program (it passes T0)\n{_fence(job.program)}\n\n"
        f"## G, the reference solution\n{_fence(p.reference)}\n\n"
        f"## T0, the official tests (assertion ids are L<line>)\n{_fence(p.test)}\n"
        + "\n".join(f"- {a.tag}: {a.source}" for a in ctx.asserts)
        + f"\n\n## Checklist of P\n{checklist or '(empty)'}\n\n## Evidence\n"
        + "\n".join(evidence)
    )


@dataclass
class SearchOutcome:
    """How one trial's witness search ended."""

    note: str
    """Why no witness stands, or what was found (for the trial's reason)."""
    error: str | None = None
    """The model endpoint failed: the trial's verdict is ``error`` with this reason."""


def search(
    engine: Runner,
    ctx: TaskContext,
    job: ProgramJob,
    *,
    config: AuditConfig,
    witness_dir: Path,
    agent: WitnessAgent,
) -> SearchOutcome:
    """Run the witness agent on one trial: at most ``config.k`` submissions, each validated and
    re-judged; valid witnesses go to ``job.witnesses``, the rest to ``job.discarded``."""
    budgets = agent.budgets
    trace = TraceWriter(witness_dir / _witness.safe_name(job.first_trial) / "trace.jsonl")
    tools = WitnessTools(engine, ctx, job, executions=budgets.executions, checklist_ids=[c.id for c in ctx.checklist])
    agent.count(sessions=1)
    trace.event(
        "start",
        trial_id=job.first_trial,
        task_id=job.task_id,
        model=agent.model,
        config=agent.harness.model_dump(mode="json"),
        budgets=budgets.model_dump(mode="json"),
        tools=list(tools.specs),
        k=config.k,
    )
    messages = [Message("system", SYSTEM_PROMPT), Message("user", first_message(ctx, job, config, budgets))]
    for m in messages:
        trace.event("message", role=m.role, content=m.content)
    started = time.monotonic()
    outcome = SearchOutcome(note="")
    try:
        outcome = _iterate(engine, ctx, job, config, witness_dir, agent, tools, messages, trace, started)
    except ModelUnavailable as exc:
        outcome = SearchOutcome(note="", error=f"the auditing model failed: {exc}")
    finally:
        trace.event(
            "end",
            note=outcome.note,
            error=outcome.error,
            submissions=job.tried,
            witnesses=len(job.witnesses),
            discarded=len(job.discarded),
            executions_used=tools.state.executions_used,
            wall_s=round(time.monotonic() - started, 3),
        )
        trace.close()
    return outcome


def _iterate(
    engine: Runner,
    ctx: TaskContext,
    job: ProgramJob,
    config: AuditConfig,
    witness_dir: Path,
    agent: WitnessAgent,
    tools: WitnessTools,
    messages: list[Message],
    trace: TraceWriter,
    started: float,
) -> SearchOutcome:
    for iteration in range(1, config.k + 1):
        tools.state.submitted, tools.state.submission = False, None
        trace.event("iteration", iteration=iteration)
        result = agent.converse(tools, messages, trace, started, NUDGE)
        if result.reason == "provider_error":
            return SearchOutcome(note="", error=f"the auditing model failed: {result.error}")
        if tools.state.gave_up is not None:
            return SearchOutcome(note=f"the agent gave up: {tools.state.gave_up}")
        submission = tools.state.submission
        if submission is None:
            return SearchOutcome(note=f"the agent's {result.reason} budget ended before it submitted a witness")
        validation = _validate(engine, ctx, job, config, witness_dir, agent, submission, iteration, trace)
        if validation.valid:
            return SearchOutcome(note="refuted by a model-written witness")
        if iteration < config.k:
            message = discarded_message(iteration, config.k, validation.reason)
            messages.append(Message("user", message))
            trace.event("message", role="user", content=message)
    return SearchOutcome(note=f"every submitted witness ({job.tried}) was discarded")


def _validate(
    engine: Runner,
    ctx: TaskContext,
    job: ProgramJob,
    config: AuditConfig,
    witness_dir: Path,
    agent: WitnessAgent,
    submission: Submission,
    iteration: int,
    trace: TraceWriter,
) -> Validation:
    """Validate one submission as offline witnesses are, then check its names and re-judge it."""
    p = ctx.problem
    header = {"task_id": job.task_id, "trial_id": job.first_trial, "entry_point": p.entry_point, "origin": "agent"}
    clause = next(c for c in ctx.checklist if c.id == submission.clause_id)
    name = f"test_witness_{_witness.safe_name(job.first_trial)}_agent_{iteration}.py"
    source = (
        f"{_witness.MARKER}{json.dumps(header)}\n"
        f"# Written by {agent.model} (vouch audit, agent witness source) for {clause.id}: "
        f"{clause.text.splitlines()[0][:150]}\n# Replay: vouch audit replay {name}\n" + submission.source
    )
    wf = _witness.WitnessFile(name, source)
    job.iterations, job.tried = iteration, job.tried + 1
    specs = [_witness.validation_spec(wf, p.reference, "R[G]", r, p) for r in range(config.repeats)]
    specs += [_witness.validation_spec(wf, job.program, "R[s]", r, p) for r in range(config.repeats)]
    results = engine.run(specs, "agent: validation")
    ref = [_witness.record("reference", r) for r in results[: config.repeats]]
    mod = [_witness.record("model", r) for r in results[config.repeats :]]
    validation = _witness.judge(ref, mod, None)
    foreign = foreign_names(submission.source, p_names(p.prompt))
    if validation.valid and foreign:
        validation = validation.model_copy(
            update={
                "fails_by_assertion": False,
                "valid": False,
                "reason": f"it reaches names P never defines: {', '.join(foreign)}",
            }
        )
    if validation.valid:
        verdict = rejudge(agent, p.prompt, f"{clause.id}: {clause.text}", submission.source, trace)
        validation = validation.model_copy(update={"rejudged": verdict.confirmed, "rejudge_note": verdict.note})
        if not verdict.confirmed:
            validation = validation.model_copy(
                update={"valid": False, "reason": f"re-judging against P rejected it: {verdict.note}"}
            )
    else:
        validation = validation.model_copy(update={"rejudged": False, "rejudge_note": "not re-judged: invalid"})
    failure = next((r.message for r in mod if r.message), None)
    failing = _failing_test(results[config.repeats :])
    witness = _make_witness(
        job,
        ctx,
        wf,
        None,
        None,
        failure,
        clause.id,
        validation,
        iteration,
        witness_dir,
        config,
        defect=f"{failing or 'a model-written test'} of {clause.id} fails on the trial "
        f"({failure or 'an assertion'}) and passes on G",
        why=_why_t0_misses(ctx, clause.covered_by),
        why_valid=f"re-judged against P: {validation.rejudge_note}" if validation.rejudged else None,
    )
    (job.witnesses if validation.valid else job.discarded).append(witness)
    trace.event(
        "validation",
        iteration=iteration,
        file=witness.file,
        clause_id=clause.id,
        valid=validation.valid,
        reason=validation.reason,
        rejudge_note=validation.rejudge_note,
        reference=[r.outcome for r in ref],
        model=[f"{r.outcome}:{r.exception}" for r in mod],
    )
    return validation


def _failing_test(results: Sequence[RunResult]) -> str | None:
    """The name of the first test that failed in R[s], from the runs' per-test outcomes."""
    for result in results:
        run = reported(result)
        for nodeid, test in (run.tests if run is not None else {}).items():
            if test.outcome != "passed":
                return nodeid.split("::")[-1]
    return None


def _why_t0_misses(ctx: TaskContext, covered_by: list[str]) -> str:
    if not covered_by:
        return f"no T0 assertion checks this clause; all {len(ctx.asserts)} pass on the trial"
    return (
        f"T0 checks this clause only with {', '.join(covered_by)}, which pass on the trial; "
        "the witness's case is not among them"
    )


def agent_search(run: SearchRun) -> list[Found]:
    """The ``agent`` source, as the registry calls it (``_sources.SOURCES``): one model session
    per audited trial, in order.

    A trial whose model endpoint failed is ``error`` (``Found.error``; not stored, so a re-run
    tries it again). A trial left standing is worded by what the agent did (``Found.note``: gave
    up, budget, every witness discarded).
    """
    engine, contexts, jobs, config, agent = run.engine, run.contexts, run.jobs, run.config, run.agent
    if agent is None:
        raise UsageError("--witness-source agent needs the auditing model: give --agent-model PROVIDER/MODEL")
    outcomes: dict[int, SearchOutcome] = {}
    searched = [j for j in jobs if j.t0 is not None and (j.t0.passed or config.search_failing)]
    runner: Runner = SerialRunner(engine) if agent.concurrency > 1 else engine
    lock = threading.Lock()

    def one(job: ProgramJob) -> None:
        outcome = search(runner, contexts[job.task_id], job, config=config, witness_dir=run.witness_dir, agent=agent)
        with lock:
            outcomes[id(job)] = outcome
            if engine.progress is not None:
                engine.progress("agent: trial sessions", len(outcomes), len(searched))

    if agent.concurrency > 1:
        with ThreadPoolExecutor(max_workers=agent.concurrency, thread_name_prefix="witness-agent") as pool:
            futures = [pool.submit(one, job) for job in searched]
            try:
                for future in futures:
                    future.result()  # an engine failure in a session is raised here
            except BaseException:
                if agent.stop is not None:
                    agent.stop.set()
                for future in futures:
                    future.cancel()
                raise
    else:
        for job in searched:
            one(job)
    failed = {key for key, outcome in outcomes.items() if outcome.error is not None}
    _withhold_ambiguous(engine, contexts, [j for j in jobs if id(j) not in failed])
    found = []
    for job in jobs:
        outcome = outcomes.get(id(job), SearchOutcome(note=""))
        note = outcome.note or "" if outcome.error is None else ""
        found.append(Found(witnesses=found_in(job).witnesses, note=note, error=outcome.error))
    return found


def _withhold_ambiguous(engine: Engine, contexts: dict[str, TaskContext], jobs: Sequence[ProgramJob]) -> None:
    """TestJack A.2 for agent witnesses of implicit clauses: each runs once in the world of every
    passing trial of its task; when most models with passing trials fail it (rho > 1/2, with at
    least ``MIN_VOTERS`` passing trials), the requirement is ambiguous: the witness is moved to
    ``discarded`` with the reason and the task lists it in ``ambiguous_requirements``: a prompt
    defect, not a refutation.
    Witnesses of explicit clauses refute however many models skip them."""
    voters_by_task: dict[str, list[ProgramJob]] = {}
    for job in jobs:
        if job.t0 is not None and job.t0.passed:
            voters_by_task.setdefault(job.task_id, []).append(job)
    plans: list[tuple[str, ProgramJob, Witness]] = []
    for task_id, voters in voters_by_task.items():
        implicit = {c.id for c in contexts[task_id].checklist if c.kind == "implicit"}
        found = [w for j in voters if j.judgement is None for w in j.witnesses if w.clause_id in implicit]
        if found and sum(v.weight for v in voters) >= MIN_VOTERS:
            plans += [(task_id, voter, w) for voter in voters for w in found]
    specs = [
        _witness.validation_spec(
            _witness.WitnessFile(Path(w.file).name, w.source), voter.program, "voter", 0, contexts[t].problem
        )
        for t, voter, w in plans
    ]
    differing: dict[int, set[str]] = {}
    for (_, voter, w), result in zip(plans, engine.run(specs, "ambiguity check (agent witnesses)"), strict=True):
        keys = differing.setdefault(id(voter), set())
        if _witness.record("model", result).outcome != "pass":
            keys.add(w.file)
    for task_id in {t for t, _, _ in plans}:
        voters = voters_by_task[task_id]
        rho = ambiguity(voters, [differing.get(id(v), set()) for v in voters])
        skippers = _contested(voters, [differing.get(id(v), set()) for v in voters])
        ctx = contexts[task_id]
        for job in voters:
            against = withheld_from(
                skippers, job.models or {"": 1}, voting_models([v.models or {"": 1} for v in voters])
            )
            for w in [w for w in job.witnesses if w.file in against]:
                reason = (
                    f"ambiguous requirement (TestJack A.2): {w.clause_id} is implicit and rho = {rho[w.file]:.2f} "
                    "of the models with passing trials skip it; a prompt defect, not a refutation"
                )
                job.witnesses.remove(w)
                validation = w.validation.model_copy(update={"valid": False, "reason": reason})
                job.discarded.append(w.model_copy(update={"validation": validation}))
                requirement = f"{w.clause_id}: {w.clause} (rho {rho[w.file]:.2f})"
                if requirement not in ctx.report.ambiguous_requirements:
                    listed = sorted([*ctx.report.ambiguous_requirements, requirement])
                    ctx.report = ctx.report.model_copy(update={"ambiguous_requirements": listed})
