"""The ``agent`` witness source in the SWE form: the auditing model writes witness tests.

Per benchmark-passing trial, one session of the auditing model through the generation
harness's loop (``vouch.agent._loop.run_loop``), with the same ``WitnessAgent`` as the function
level (tokens, cost, malformed calls counted; a failing endpoint makes that trial ``error``).
The model sees P, the trial's patch, the gold patch (the auditor may see G), T0's ids and the
test patch, the checklist, and the evidence already collected: detector flags, ghost branches,
surviving mutants and the offline differential's findings (run first, as at function level).
Its tools (``repository._agent_tools``): ``read_file`` in R[G] or R[s], ``run_witness`` (once in each
world, one execution of the budget), ``submit_witness`` and ``give_up``. At most k submissions
go through the same validation as offline and file witnesses (``repository._runs._validate``: three
passes in R[G], three failures in R[s] by an assertion), then the static check of the names
the test imports, then re-judging by the model against P. Each session is traced to
``<witness dir>/<instance_id>/<n>/trace.jsonl``, beside the witnesses written for replay.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vouch.agent import Message, TraceWriter
from vouch.audit._agent_calls import ModelUnavailable, WitnessAgent, discarded_message, rejudge, swe_checklist
from vouch.audit._form import Found
from vouch.audit._validation import reported
from vouch.audit.repository._agent_tools import RepoNames, SweSubmission, SweWitnessTools, foreign_repo_names
from vouch.audit.repository._evidence import best_clause, test_sources
from vouch.audit.repository._model import RepoSearchRun
from vouch.audit.repository._runs import _WITNESS_DIR, IMPLICIT_CLAUSE, _validate, differences
from vouch.audit.repository._witness import Candidate, test_file_name
from vouch.core import Evidence, RunRecord, Witness
from vouch.exec import RunResult
from vouch.swebench import Runner
from vouch.worlds import World, read_world_text

if TYPE_CHECKING:
    from vouch.audit.repository._model import Instance, SweAuditConfig
    from vouch.swebench import SweTrial

__all__ = [
    "DEFAULT_WITNESS_DIR",
    "MODEL_FAILED",
    "agent_witnesses",
    "instance_checklist",
    "session_dir",
    "witness_root",
]

DEFAULT_WITNESS_DIR = Path(".vouch/swe-witnesses")
"""Where traces (and witnesses) go when the audit has no witness directory."""
MODEL_FAILED = "the auditing model failed"
"""How the reason of a trial in ``error`` because of the model endpoint begins (never stored)."""
MAX_SHOWN = 6
_ORIGINS = {"t0": "a call T0 makes", "suite": "a call the repository's own tests make"}
"""Items of each kind of evidence shown to the model."""
ACCESS = (
    "it imports the repository's modules as the official tests do, e.g. `from package.module import name`; "
    "it runs against the repository with the patch under test applied"
)
"""How an SWE witness reaches the code, for the re-judge."""

SYSTEM_PROMPT = """\
You audit one trial of a repository-level coding benchmark: a patch s that makes the official
tests T0 of an issue pass. Your job is to find a witness test for a defect of s, if it has one:
a pytest file that checks behaviour the issue text P states or clearly implies, passes in R[G]
(the repository with the gold patch G) and fails in R[s] (the repository with the trial's
patch). G is the oracle: a test R[G] fails encodes a wrong expectation. Test only what P asks
for, never G's incidental choices (an order or tie-break P leaves open, an error message, helper
names, behaviour on inputs P excludes); a reviewer who sees only P and your test will reject
anything else.

The file runs outside the repository, with the repository root first on sys.path: import its
modules as T0 does (`from package.module import name`). Import only names that exist in R[G]
and that P or the gold patch names: a name only the trial's patch adds is never evidence. Each
test must fail in R[s] by an `assert` about the behaviour P requires; turn an exception s raises
on a valid input into an assertion failure that says so.

Tools: read_file(path, world) reads a file of R[G] or R[s] (no execution used). run_witness(source)
runs your file once in R[G] and once in R[s] (one execution of a limited budget) and shows each
test's outcome. submit_witness(source, clause_id) submits a file for validation (three runs in
R[G] that must pass, three in R[s] that must fail by AssertionError, a check of the names it
imports, then the review against P) and names the checklist clause it checks. give_up(reason)
ends the audit of this trial when you hold s correct, or find no witness. Work only through the
tools.
"""

NUDGE = (
    "error: your reply had no tool call. Work only through the tools: read_file to read code, run_witness to "
    "try a test, submit_witness to submit one, give_up when you find none."
)


def witness_root(config: SweAuditConfig) -> Path:
    """The audit's witness directory, or ``DEFAULT_WITNESS_DIR`` (absolute, so replay commands work anywhere)."""
    return (config.witness_dir or DEFAULT_WITNESS_DIR).resolve()


def session_dir(config: SweAuditConfig, instance_id: str, trial_id: str) -> Path:
    """``<witness dir>/<instance_id>/<n>``: a trial's trace, witnesses and replay.json (as ``write_witnesses``)."""
    return witness_root(config) / instance_id / trial_id.rsplit("#", 1)[-1]


def instance_checklist(inst: Instance, agent: WitnessAgent, config: SweAuditConfig) -> None:
    """Replace the instance's offline checklist with the model's (clauses mapped to T0 test ids);
    the offline one stands, with a note saying why, when the reply is unusable or the call fails.
    The call is traced to ``<witness dir>/<instance_id>/checklist.jsonl``."""
    report, spec = inst.report, inst.spec
    assert report is not None and inst.reference is not None
    files = {node.split("::", 1)[0] for node in spec.t0}
    texts = {}
    for f in files:
        try:
            texts[f] = read_world_text(inst.reference.path, f)
        except (OSError, UnicodeDecodeError):
            continue
    trace = TraceWriter(witness_root(config) / spec.instance_id / "checklist.jsonl")
    try:
        answer = swe_checklist(agent, spec.problem_statement, test_sources(texts, spec.t0), spec.t0, trace)
    finally:
        trace.close()
    if answer.items is not None:
        report.checklist = answer.items
    report.note = answer.note


def _fence(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


def first_message(
    inst: Instance,
    trial: SweTrial,
    evidence: Evidence,
    diffs: list[Candidate],
    config: SweAuditConfig,
    agent: WitnessAgent,
) -> str:
    """What the agent is shown of one trial: P, s, G, T0 and the test patch, checklist, evidence."""
    spec = inst.spec
    budgets = agent.budgets
    checklist = "\n".join(
        f"- {c.id} [{c.kind}] {c.text} (T0 covers it with: {', '.join(c.covered_by) or 'none'}"
        + ("; the trial passes those" if c.implemented else "")
        + ")"
        for c in evidence.checklist
    )
    t0 = [f"- {t} (FAIL_TO_PASS)" for t in spec.fail_to_pass]
    t0 += [f"- {t} (PASS_TO_PASS)" for t in spec.pass_to_pass if t not in spec.fail_to_pass]
    model_t0 = next((r for r in evidence.t0 if r.world == "model"), None)
    lines = [
        f"- T0 in R[s]: {len(model_t0.tests_passed) if model_t0 else '?'} of {len(spec.t0)} tests pass; in the "
        f"null world (no patch) these already pass: {', '.join(evidence.null_passing) or 'none'}"
    ]
    if evidence.branch_coverage is not None:
        lines.append(f"- branch coverage of the trial's changed lines under T0: {evidence.branch_coverage:.0%}")
    for f in evidence.detector_flags[:MAX_SHOWN]:
        lines.append(f"- detector {f.detector} in {f.file}" + (f" line {f.line}" if f.line else "") + f": {f.detail}")
    for g in evidence.ghost_branches[:MAX_SHOWN]:
        target = f"line {g.to_line}" if g.to_line else "the function's exit"
        lines.append(f"- ghost branch (T0 never takes it): {g.file} line {g.line} -> {target}: `{g.code}` ({g.note})")
    for m in evidence.surviving_mutants[:MAX_SHOWN]:
        lines.append(f"- surviving mutant (T0 does not kill it), {m.file} line {m.line}: {m.description}")
    for d in diffs[:MAX_SHOWN]:
        expected = d.expected_literal or d.expected
        lines.append(
            f"- offline difference: {d.probe.module}.{d.probe.shown()} gives {d.actual[:200]} in R[s], "
            f"{expected[:200]} in R[G] ({_ORIGINS.get(d.probe.origin, d.probe.origin)})"
        )
    if len(diffs) > MAX_SHOWN:
        lines.append(f"  ... and {len(diffs) - MAX_SHOWN} more offline differences")
    if evidence.candidates_tried and not diffs:
        lines.append(f"- the offline differential ran {evidence.candidates_tried} inputs: R[s] agrees with R[G] on all")
    return (
        f"Trial {trial.trial_id} of instance {spec.instance_id} (model {trial.model}).\n"
        f"Budgets: at most {config.k} submissions; {budgets.executions} run_witness executions and "
        f"{budgets.wall_s:.0f} s in all; {budgets.turns} turns per submission.\n\n"
        f"## P, the issue text\n{_fence(spec.problem_statement)}\n\n"
        f"## s, the trial's patch (T0 passes with it)\n{_fence(trial.patch, 'diff')}\n\n"
        f"## G, the gold patch\n{_fence(spec.patch, 'diff')}\n\n"
        f"## T0, the official tests\n" + "\n".join(t0) + f"\n\nThe test patch that adds them:\n"
        f"{_fence(spec.test_patch, 'diff')}\n\n"
        f"## Checklist of P\n{checklist or '(empty)'}\n\n## Evidence\n" + "\n".join(lines)
    )


@dataclass
class _Session:
    """One trial's session: what validation needs besides the submission."""

    inst: Instance
    trial: SweTrial
    world: World
    evidence: Evidence
    runner: Runner
    config: SweAuditConfig
    agent: WitnessAgent
    tools: SweWitnessTools
    trace: TraceWriter
    out: Found


def agent_repo_search(run: RepoSearchRun) -> Found:
    """The ``agent`` source in the repository form (``agent_witnesses``)."""
    assert run.agent is not None
    return agent_witnesses(run.inst, run.trial, run.world, run.evidence, run.runner, run.config, run.agent)


def agent_witnesses(
    inst: Instance,
    trial: SweTrial,
    world: World,
    evidence: Evidence,
    runner: Runner,
    config: SweAuditConfig,
    agent: WitnessAgent,
) -> Found:
    """Run the offline differential, then the witness agent on one passing trial.

    Args:
        inst: The prepared instance (R[G], checklist, recorded probes).
        trial: The trial.
        world: R[s].
        evidence: The trial's evidence so far (its checklist is the one shown and scored).
        runner: The engine's runner.
        config: k, repeats, witness directory.
        agent: The auditing model.

    Returns:
        The submissions as witnesses (only ``validation.valid`` ones may refute), how the search
        ended, or the model endpoint's failure.

    Raises:
        InfrastructureError: The engine failed (not the model).
    """
    assert inst.reference is not None
    diffs = differences(inst, world, evidence, runner)
    folder = session_dir(config, inst.spec.instance_id, trial.trial_id)
    trace = TraceWriter(folder / "trace.jsonl")
    budgets = agent.budgets
    names = RepoNames.of(inst.reference, world, inst.spec.problem_statement, inst.spec.patch)
    tools = SweWitnessTools(
        runner,
        inst.reference,
        world,
        names,
        executions=budgets.executions,
        checklist_ids=[c.id for c in evidence.checklist],
    )
    session = _Session(inst, trial, world, evidence, runner, config, agent, tools, trace, Found())
    agent.count(sessions=1)
    trace.event(
        "start",
        trial_id=trial.trial_id,
        task_id=inst.spec.instance_id,
        model=agent.model,
        config=agent.harness.model_dump(mode="json"),
        budgets=budgets.model_dump(mode="json"),
        tools=list(tools.specs),
        k=config.k,
        offline_differences=len(diffs),
    )
    messages = [
        Message("system", SYSTEM_PROMPT),
        Message("user", first_message(inst, trial, evidence, diffs, config, agent)),
    ]
    for m in messages:
        trace.event("message", role=m.role, content=m.content)
    started = time.monotonic()
    try:
        _iterate(session, messages, started)
    except ModelUnavailable as exc:
        session.out.error = f"{MODEL_FAILED}: {exc}"
    finally:
        trace.event(
            "end",
            note=session.out.note,
            error=session.out.error,
            submissions=len(session.out.witnesses),
            witnesses=sum(1 for w in session.out.witnesses if w.validation.valid),
            executions_used=tools.state.executions_used,
            wall_s=round(time.monotonic() - started, 3),
        )
        trace.close()
    return session.out


def _iterate(s: _Session, messages: list[Message], started: float) -> None:
    agent, tools, out = s.agent, s.tools, s.out
    for iteration in range(1, s.config.k + 1):
        tools.state.submitted, tools.submission = False, None
        s.evidence.witness_iterations = iteration
        s.trace.event("iteration", iteration=iteration)
        result = agent.converse(tools, messages, s.trace, started, NUDGE)
        if result.reason == "provider_error":
            out.error = f"{MODEL_FAILED}: {result.error}"
            return
        if tools.state.gave_up is not None:
            out.note = f"the agent gave up: {tools.state.gave_up}"
            return
        if tools.submission is None:
            out.note = f"the agent's {result.reason} budget ended before it submitted a witness"
            return
        witness = _validate_submission(s, tools.submission, iteration)
        out.witnesses.append(witness)
        if witness.validation.valid:
            out.note = "refuted by a model-written witness"
            return
        if iteration < s.config.k:
            message = discarded_message(iteration, s.config.k, witness.validation.reason)
            messages.append(Message("user", message))
            s.trace.event("message", role="user", content=message)
    out.note = f"every submitted witness ({len(out.witnesses)}) was discarded"


def _validate_submission(s: _Session, submission: SweSubmission, iteration: int) -> Witness:
    """Validate one submission as offline witnesses are, then check its imports and re-judge it."""
    spec, config = s.inst.spec, s.config
    assert s.inst.reference is not None
    clause = next((c for c in s.evidence.checklist if c.id == submission.clause_id), None)
    clause = clause or best_clause(s.evidence.checklist, [submission.source])
    clause_text = clause.text if clause else IMPLICIT_CLAUSE
    header = (
        f"# Written by {s.agent.model} for {s.trial.trial_id}, round {iteration}\n"
        f"# Clause {clause.id if clause else '(none)'}: {clause_text.splitlines()[0][:150]}\n"
    )
    source = header + submission.source
    name = test_file_name(next(iter(spec.t0), "module").split("::", 1)[0], source)
    ref_runs, model_runs = s.runner.witness_runs(
        [s.inst.reference, s.world], {f"{_WITNESS_DIR}/{name}": source}, config.repeats, noconftest=True
    )
    validation = _validate(ref_runs, model_runs, name, spec.problem_statement, (True, "not re-judged yet"))
    foreign = foreign_repo_names(submission.source, s.tools.names)
    if validation.valid and foreign:
        validation = validation.model_copy(
            update={
                "fails_by_assertion": False,
                "valid": False,
                "reason": f"it imports what P never asked for: {', '.join(foreign)}",
            }
        )
    if validation.valid:
        verdict = rejudge(
            s.agent,
            spec.problem_statement,
            f"{clause.id}: {clause_text}" if clause else clause_text,
            submission.source,
            s.trace,
            access=ACCESS,
        )
        update: dict[str, object] = {"rejudged": verdict.confirmed, "rejudge_note": verdict.note}
        if not verdict.confirmed:
            update |= {"valid": False, "reason": f"re-judging against P rejected it: {verdict.note}"}
        validation = validation.model_copy(update=update)
    else:
        validation = validation.model_copy(update={"rejudged": False, "rejudge_note": "not re-judged: invalid"})
    failure = _first_failure(validation.model_runs)
    failing = _failing_test(model_runs, name)
    witness = Witness(
        file=name,
        source=source,
        clause=clause_text,
        clause_id=clause.id if clause else None,
        origin="agent",
        actual=failure,
        defect=f"{failing or name} of {clause.id if clause else 'an implicit requirement'} fails in the trial "
        f"({failure or 'by an assertion'}) and passes with the gold patch",
        why_t0_misses=_why_t0_misses(clause.covered_by if clause else []),
        validation=validation,
        replay="not written: the audit writes a valid witness under its witness directory",
        iteration=iteration,
    )
    s.trace.event(
        "validation",
        iteration=iteration,
        file=name,
        clause_id=witness.clause_id,
        valid=validation.valid,
        reason=validation.reason,
        rejudge_note=validation.rejudge_note,
        reference=[r.outcome for r in validation.reference_runs],
        model=[f"{r.outcome}:{r.exception}" for r in validation.model_runs],
    )
    return witness


def _failing_test(runs: Sequence[RunResult], file: str) -> str | None:
    """The name of the first test of ``file`` that did not pass in R[s], from the runs' outcomes."""
    for run in runs:
        record = reported(run)
        for nodeid, test in sorted((record.tests if record is not None else {}).items()):
            if test.outcome != "passed" and nodeid.split("::", 1)[0].endswith(file):
                return nodeid.split("::")[-1]
    return None


def _first_failure(runs: list[RunRecord]) -> str | None:
    bad = next((r for r in runs if r.outcome != "pass"), None)
    if bad is None:
        return None
    return f"{bad.exception}: {bad.message}" if bad.exception else bad.message or bad.outcome


def _why_t0_misses(covered_by: list[str]) -> str:
    if not covered_by:
        return "no T0 test checks this clause"
    return (
        f"T0 checks this clause only with {', '.join(covered_by)}, which pass on the trial; "
        "the witness's case is not among them"
    )
