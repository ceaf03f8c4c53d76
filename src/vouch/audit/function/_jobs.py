"""The function form's records: what the audit knows of a task (``TaskContext``), one distinct
program and its judgement (``ProgramJob``, ``Judgement``, ``Stage2``), and what a witness
source's search gets (``SearchRun``) and is (``Search``: one ``Found`` a program).

A leaf of the function form's stages: they import these from here, and this module imports none
of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from vouch.audit import _ambiguity
from vouch.audit._form import Found
from vouch.core import ChecklistItem, T0Result, TaskReport, Witness
from vouch.mutation import Mutant
from vouch.sources.trials import Problem

if TYPE_CHECKING:
    from vouch.audit._agent_calls import WitnessAgent
    from vouch.audit.function import _offline
    from vouch.audit.function._prompt import Assertion, Example
    from vouch.audit.function._runs import AuditConfig, Engine


@dataclass
class TaskContext:
    """What the audit knows of a task before judging its programs."""

    problem: Problem
    params: list[str]
    asserts: list[Assertion]
    examples: list[Example]
    checklist: list[ChecklistItem]
    report: TaskReport
    reference_t0: T0Result
    null_t0: T0Result
    null_passing: list[str]
    t0_inputs: list[Any]
    oracle: bool
    """T0 compares outputs with values, so G's output is the required one."""
    pool: _offline.Pool | None = None
    pool_note: str | None = None
    contested: set[str] = field(default_factory=set)
    """Keys of inputs most passing trials answer differently from G (never a refutation)."""
    passing_models: set[str] = field(default_factory=set)
    """Models with passing trials that vote on the task (the jury; ``_trial.jury_verdict``)."""
    jury: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Per witness input (key): per model, its passing trials' answers there with their weights."""
    answers: dict[tuple[str, str], str] = field(default_factory=dict)
    """(input key, program hash) -> that passing program's answer on the input (``jury_answer``)."""
    g_answers: dict[str, tuple[list[Any], str]] = field(default_factory=dict)
    """Per witness input (key): its arguments and G's answer there, for the G-defect findings."""
    infra: str | None = None
    """Why vouch could not finish a run of the task's own (T0 in R[G], the null world, G on the
    generated inputs): its passing trials are then error, never sound (``_runs.blame``)."""


class Judgement(TypedDict):
    """One program's judgement as the store keeps it (``TrialResult``'s fields it decides)."""

    benchmark_pass: bool
    verdict: str
    """A ``Verdict``'s value."""
    witnesses: list[dict[str, Any]]
    """Its refuting witnesses (``Witness``, as JSON)."""
    evidence: dict[str, Any]
    """``Evidence``, as JSON."""
    reason: str | None
    infrastructure: bool
    """Vouch's own failure left it undecided (``error``): never stored, judged again on a re-run."""


class Stage2(TypedDict, total=False):
    """What the coverage-and-mutants run of a program returned (``_trial._evidence_stage``)."""

    coverage: dict[str, Any]
    """The program's line and arc coverage under T0."""
    mutants: list[str]
    """Each mutant's outcome under T0 (killed, survived, invalid), in ``ProgramJob.mutants`` order."""
    error: str | None
    """Why the run gave nothing (then neither key above)."""


@dataclass
class ProgramJob:
    """One distinct program of a task, and (once judged) its judgement."""

    task_id: str
    hash: str
    program: str
    first_trial: str
    unparsable: str | None
    valid_arcs: set[tuple[int, int]] | None = None
    """Branch arcs the program took on the generated inputs inside P's preconditions."""
    models: dict[str, int] = field(default_factory=dict)
    """Trials sharing this program, by model (they vote with this weight in the ambiguity rule)."""
    first_line: int = 0
    """First line the model wrote; 0: the line after the prompt (a completion)."""

    @property
    def weight(self) -> int:
        return sum(self.models.values()) or 1

    t0: T0Result | None = None
    mutants: list[Mutant] = field(default_factory=list)
    stage2: Stage2 = field(default_factory=lambda: Stage2())
    diffs: list[_offline.Difference] = field(default_factory=list)
    witnesses: list[Witness] = field(default_factory=list)
    discarded: list[Witness] = field(default_factory=list)
    disputed: list[Witness] = field(default_factory=list)
    """Witnesses that validated on an input where G's answer is disputed: they flag, never refute."""
    disputes: dict[str, str] = field(default_factory=dict)
    """Witness file name -> why G's answer on its input is disputed (set before validation)."""
    iterations: int = 0
    tried: int = 0
    judgement: Judgement | None = None
    note: str | None = None
    """How the lightweight mode judged it (the reason of a verdict that has no other)."""
    search_note: str | None = None
    """How the witness search ended (``Found.note``), worded as the reason of a trial it leaves
    ``sound`` with no witness."""
    search_failed: str | None = None
    """Why the run on the generated inputs gave no rows (the trial is then an error unless refuted)."""
    infra: str | None = None
    """Why vouch could not finish a run about this program (``_runs.blame``): it is then error."""
    unasked: dict[str, str] = field(default_factory=dict)
    """Input key -> why that difference from G, seen inside vouch's harness, was not asked again
    apart (``_trial.confirm_apart``). One left untried keeps the trial from ``sound``."""
    harness_flags: list[tuple[str, str]] = field(default_factory=list)
    """(detector, detail) of what the program did inside vouch's harness and not where its
    witnesses run (``_trial.confirm_apart``): each is a detector flag on its trials, and such a
    program has no vote in the A.2 rule."""


MIN_VOTERS = _ambiguity.MIN_VOTERS
"""Passing trials a task needs before the ambiguity rule can speak."""

OnJudged = Callable[[ProgramJob, Judgement], None]


@dataclass
class SearchRun:
    """What a source's search gets: the engine, the tasks, the programs to judge and the run's settings.

    Each job's evidence is in when the search starts (T0 in R[s], coverage, mutants, the
    differential run on the task's pool, ``job.diffs``). The jobs' records are the search's
    working state (iterations, candidates tried, disputes); what it found it returns, one
    ``Found`` a job, and the form files those witnesses.
    """

    engine: Engine
    contexts: dict[str, TaskContext]
    jobs: Sequence[ProgramJob]
    config: AuditConfig
    witness_dir: Path
    agent: WitnessAgent | None
    voters: Sequence[ProgramJob] | None = None
    """The programs voting in the A.2 rule (default: the jobs passing T0); the lightweight mode
    judges a sampled program and every passing program of its task votes."""


class Search(Protocol):
    def __call__(self, run: SearchRun) -> list[Found]:
        """What the search found for each of ``run.jobs``, in order: every witness with its
        validation (``_witness.judge``); a valid one with ``disputed`` set flags and never refutes."""
        ...


def found_in(job: ProgramJob) -> Found:
    """What a search that files into a job's records found: its witnesses, discarded and disputed ones."""
    return Found(witnesses=[*job.witnesses, *job.discarded, *job.disputed])
