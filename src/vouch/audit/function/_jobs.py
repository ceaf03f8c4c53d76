"""The function form's records: what the audit knows of a task (``TaskContext``), one distinct
program and its judgement (``ProgramJob``), and what a witness source's search gets
(``SearchRun``) and is (``Search``).

A leaf of the function form's stages: they import these from here, and this module imports none
of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vouch.audit import _ambiguity
from vouch.core._audit import ChecklistItem, T0Result, TaskReport, Witness
from vouch.mutation import Mutant
from vouch.sources.trials._samples import Problem

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
    jury: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Per witness input (key): per model, its passing trials' answers there with their weights."""
    answers: dict[tuple[str, str], str] = field(default_factory=dict)
    """(input key, program hash) -> that passing program's answer on the input (``jury_answer``)."""
    g_answers: dict[str, tuple[list[Any], str]] = field(default_factory=dict)
    """Per witness input (key): its arguments and G's answer there, for the G-defect findings."""
    infra: str | None = None
    """Why vouch could not finish a run of the task's own (T0 in R[G], the null world, G on the
    generated inputs): its passing trials are then error, never sound (``_runs.blame``)."""


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
    stage2: dict[str, Any] = field(default_factory=dict)
    diffs: list[_offline.Difference] = field(default_factory=list)
    witnesses: list[Witness] = field(default_factory=list)
    discarded: list[Witness] = field(default_factory=list)
    disputed: list[Witness] = field(default_factory=list)
    """Witnesses that validated on an input where G's answer is disputed: they flag, never refute."""
    disputes: dict[str, str] = field(default_factory=dict)
    """Witness file name -> why G's answer on its input is disputed (set before validation)."""
    iterations: int = 0
    tried: int = 0
    judgement: dict[str, Any] | None = None
    note: str | None = None
    """How the lightweight mode judged it (the reason of a verdict that has no other)."""
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

OnJudged = Callable[[ProgramJob, dict[str, Any]], None]


@dataclass
class SearchRun:
    """What a source's search gets: the engine, the tasks, the jobs to judge and the run's settings."""

    engine: Engine
    contexts: dict[str, TaskContext]
    jobs: Sequence[ProgramJob]
    config: AuditConfig
    witness_dir: Path
    agent: WitnessAgent | None
    on_judged: OnJudged | None
    voters: Sequence[ProgramJob] | None = None
    """The programs voting in the A.2 rule (default: the jobs passing T0); the lightweight mode
    judges a sampled program and every passing program of its task votes."""


class Search(Protocol):
    def __call__(self, run: SearchRun) -> OnJudged | None:
        """File witnesses under ``run.jobs``; the ``on_judged`` to finish the rest with."""
        ...
