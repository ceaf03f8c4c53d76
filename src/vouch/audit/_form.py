"""What an audit form gives the audit's modes: the one interface both forms implement.

An audit form knows how to judge one kind of trial: the function form (``_lightweight.FunctionForm``:
HumanEval-style problems and samples) and the repository form (``repository._lightweight.RepoForm``:
SWE-bench instances and predictions). Each has already prepared its tasks (worlds, T0 in R[G]
and the null world) and run T0 in every trial's world; what stays is the same for both, and
the modes (``_modes``: the per-trial audit, TestJack's Algorithm 1, the static baseline) drive
it through these calls only:

- ``analyse``: task analysis, from P, T0 and G only: the tests T1 adds to T0, per task;
- ``judge``: the whole per-trial audit of some trials (evidence, witness search, validation);
  what each trial's audit found that the task's other trials should run;
- ``replay``: a set of tests on a set of trials, in one engine batch: which trials they refute
  (each by a witness of its own, validated by the one validation rule);
- ``conclude``: a trial leaves the audit, with a note saying how it was judged.

The form keeps each trial's judgement; the modes decide which trials are judged how, and
record the rounds. This module is a leaf: it imports nothing of the forms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

__all__ = ["AuditForm", "Judged", "Replayed", "TestT", "TrialT"]

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


class AuditForm(Protocol[TrialT, TestT]):
    """One form of the audit, as its modes see it (see the module docstring)."""

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

    def analyse(self, tasks: Sequence[str], *, static: bool) -> dict[str, list[TestT]]:
        """Task analysis: the tests T1 adds to T0 per task, from P, T0 and G only (never a
        trial); with ``static``, the SWE-ABS-style suite built from G instead."""
        ...

    def judge(self, trials: Sequence[TrialT]) -> list[Judged[TestT]]:
        """The per-trial audit of each trial (in one batch where the form can); in order."""
        ...

    def replay(
        self,
        tests: Mapping[str, list[TestT]],
        targets: Mapping[str, list[TrialT]],
        *,
        found_on: Mapping[str, TrialT],
        round: int,
        static: bool,
    ) -> Replayed[TrialT]:
        """Run each task's tests on its target trials in one batch; refute the targets that fail
        one by the validation rule. ``found_on`` names the trial whose audit gave a task's tests
        (none: task analysis); every passing trial of the task votes in the A.2 rule, unless
        ``static`` (the baseline counts every failure)."""
        ...

    def describe(self, task: str, test: TestT) -> str:
        """One line for the round log."""
        ...

    def conclude(self, trial: TrialT, note: str) -> None:
        """The trial leaves the audit; ``note`` says how (the reason of a verdict that has none)."""
        ...
