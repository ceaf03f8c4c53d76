"""What an audit form gives the audit's modes: the one interface both forms implement.

An audit form knows how to judge one kind of trial: the function form (``function._form.FunctionForm``:
HumanEval-style problems and samples) and the repository form (``repository._lightweight.RepoForm``:
SWE-bench instances and predictions). Each has already prepared its tasks (worlds, T0 in R[G]
and the null world) and run T0 in every trial's world; what stays is the same for both, and
the modes (``_modes``: the per-trial audit, TestJack's Algorithm 1, the static baseline) drive
it through these calls only (``_modes.audit`` is the one entry):

- ``trials`` and ``passing``: every trial the audit judges, and per task those passing T0;
- ``analyse``: task analysis, from P, T0 and G only: the tests T1 adds to T0, per task;
- ``baseline``: the SWE-ABS-style suite built from G before any trial is seen (a form that
  cannot build one raises ``UsageError``);
- ``judge``: the whole per-trial audit of some trials (evidence, witness search, validation);
  what each trial's audit found that the task's other trials should run;
- ``replay``: a set of tests on a set of trials, in one engine batch: which trials they refute
  (each by a witness of its own, validated by the one validation rule);
- ``conclude``: a trial leaves the audit, with a note saying how it was judged.

The form keeps each trial's judgement; the modes decide which trials are judged how, and
record the rounds. No form reads the mode it runs in. This module is a leaf: it imports
nothing of the forms.

``Found`` is what a witness source's search gives for one trial, in either form
(``_sources.WitnessSource``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from vouch.core import Witness

__all__ = ["AuditForm", "Found", "Judged", "Replayed", "TestT", "TrialT"]

TrialT = TypeVar("TrialT")
"""A form's handle on a trial passing T0 (one per distinct program or patch)."""
TestT = TypeVar("TestT")
"""A form's shareable test: an input with G's answer, or a witness file."""


@dataclass(frozen=True)
class Judged(Generic[TestT]):
    """What a trial's own audit leaves for the task's other trials."""

    shared: list[TestT] = field(default_factory=list)
    """Its confirmed witnesses (and, offline, the other inputs where it differs from G), less
    those of ambiguous requirements (TestJack A.2): those are prompt defects, never shared."""
    error: str | None = None
    """Why the audit failed (an auditing model that failed, a world that broke), when it did."""


@dataclass(frozen=True)
class Replayed(Generic[TrialT]):
    """What replaying tests on trials did."""

    refuted: dict[str, list[TrialT]] = field(default_factory=dict)
    """Per task, the trials refuted (the form has recorded their witnesses)."""
    pairs: dict[str, int] = field(default_factory=dict)
    """Per task, the (test, trial) pairs run."""
    notes: dict[str, list[str]] = field(default_factory=dict)
    """Per task, what the replay withheld and why (tests of ambiguous requirements)."""


@dataclass
class Found:
    """What a witness source's search found for one trial (either form)."""

    witnesses: list[Witness] = field(default_factory=list)
    """Every witness with its validation: only ``validation.valid`` ones may refute; the others
    are kept as discarded evidence."""
    note: str = ""
    """How the search ended (for the reason of a trial left standing)."""
    error: str | None = None
    """The search could not run (the auditing model failed): the trial is ``error`` with this."""
    undecided: str | None = None
    """Why the trial is not ``sound`` unless a witness refutes it (the search saw its process end
    inside vouch's harness, where its witnesses give G's answer or never ran)."""


class AuditForm(Protocol[TrialT, TestT]):
    """One form of the audit, as its modes see it (see the module docstring)."""

    name: str
    """Which form it is: a name of ``_modes.FORMS`` (the modes and sources it may run)."""

    def trials(self) -> Sequence[TrialT]:
        """Every trial the audit judges (one per distinct program), passing T0 or not."""
        ...

    def passing(self) -> Mapping[str, Sequence[TrialT]]:
        """Per task, its trials passing T0: those the modes audit."""
        ...

    def executions(self) -> int:
        """Engine runs so far (the modes record each round's share)."""
        ...

    def tokens(self) -> int:
        """Model tokens spent so far (input and output; 0 without an auditing model)."""
        ...

    def task(self, trial: TrialT) -> str:
        """The task (or instance) a trial belongs to."""
        ...

    def trial_id(self, trial: TrialT) -> str:
        """The first trial of the program, as results name it."""
        ...

    def program(self, trial: TrialT) -> str:
        """The hash of its normalised program (or patch)."""
        ...

    def weight(self, trial: TrialT) -> int:
        """How many trials share the program: it is sampled with this weight."""
        ...

    def analyse(self, tasks: Sequence[str]) -> dict[str, list[TestT]]:
        """Task analysis: the tests T1 adds to T0 per task, from P, T0 and G only (never a trial)."""
        ...

    def baseline(self, tasks: Sequence[str]) -> dict[str, list[TestT]]:
        """The SWE-ABS-style suite per task, built from G before any trial is seen.

        Raises:
            UsageError: The form builds none.
        """
        ...

    def judge(self, trials: Sequence[TrialT], *, share: bool) -> list[Judged[TestT]]:
        """The per-trial audit of each trial (in one batch where the form can); in order. With
        ``share``, what a trial's audit confirms goes to the task's other trials: each witness
        names the audit that confirmed it, and those of ambiguous requirements are withheld now
        (A.2, every passing trial voting); without, each trial is judged on its own."""
        ...

    def replay(
        self,
        tests: Mapping[str, list[TestT]],
        targets: Mapping[str, list[TrialT]],
        *,
        found_on: Mapping[str, TrialT],
        round: int,
        vote: bool,
    ) -> Replayed[TrialT]:
        """Run each task's tests on its target trials in one batch; refute the targets that fail
        one by the validation rule. ``found_on`` names the trial whose audit gave a task's tests
        (none: tests from P, T0 and G); with ``vote``, every passing trial of the task votes in
        the A.2 rule (without, every failure counts, as in the static baseline)."""
        ...

    def describe(self, task: str, test: TestT) -> str:
        """One line for the round log."""
        ...

    def conclude(self, trial: TrialT, note: str) -> None:
        """The trial leaves the audit; ``note`` says how (the reason of a verdict that has none)."""
        ...
