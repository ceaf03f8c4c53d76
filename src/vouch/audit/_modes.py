"""The audit's modes, written once for both forms over ``_form.AuditForm``.

- ``per_trial``: every trial passing T0 gets the whole per-trial audit (TestJack section 3.2).
- ``lightweight``: TestJack's Algorithm 1 (section 3.3, appendix A.3). Task analysis builds T1
  from P, T0 and G; every passing trial runs it and a trial failing it is refuted. Then rounds:
  sample a trial uniformly from the task's active set with a seeded generator, audit it, share
  its confirmed witnesses with every other active trial in one batch, refute those they catch;
  the sampled trial leaves the set either way. The loop stops at an empty active set or after
  ``rounds`` rounds. Every stage is a ``RoundRecord``: which trial, which tests, how many refuted,
  executions and model tokens.
- ``static`` (``lightweight(..., static=True)``): the SWE-ABS-style baseline of TestJack's Table
  4: one suite per task built from G before any trial is seen (``AuditForm.baseline``), every
  trial failing it refuted, no rounds and no A.2 vote.

Which trials a round may refute and which vote in the A.2 rule is the same for both forms: the
active trials are the targets, every passing trial votes (the form counts the votes).

``REGISTRY`` is the registry: each ``Mode`` names the forms it serves and carries its driver, so
adding a mode is a driver and one entry (``docs/extending.md``). ``audit`` is the one entry of
both forms: it checks the run's settings against the mode and runs the mode's driver on the form.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vouch.audit import _sources
from vouch.audit._form import AuditForm, Judged, TestT, TrialT
from vouch.core import RoundRecord
from vouch.errors import UsageError

if TYPE_CHECKING:
    from vouch.audit._settings import AuditSettings

__all__ = [
    "FORMS",
    "MODES",
    "REGISTRY",
    "REPOSITORY_MODES",
    "Driver",
    "Mode",
    "Rounds",
    "audit",
    "check",
    "conclude_failing",
    "lightweight",
    "mode",
    "mode_names",
    "per_trial",
]

FORMS = ("function", "repository")
"""The audit's two forms: ``vouch audit humaneval`` (and the other function-level readers) and
``vouch audit swe``."""


@dataclass
class Rounds:
    """What the lightweight mode recorded, per task."""

    rounds: dict[str, list[RoundRecord]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    """What each task's report should say of the run (tests withheld, audits that failed)."""


def per_trial(form: AuditForm[TrialT, TestT], trials: Sequence[TrialT]) -> list[Judged[TestT]]:
    """The per-trial audit of every trial, each on its own; each concludes with its own judgement."""
    judged = form.judge(trials, share=False)
    for trial in trials:
        form.conclude(trial, "")
    return judged


def lightweight(
    form: AuditForm[TrialT, TestT],
    passing: Mapping[str, Sequence[TrialT]],
    *,
    rounds: int,
    seed: int,
    static: bool = False,
) -> Rounds:
    """Judge every passing trial by Algorithm 1 (or the static baseline); the rounds per task.

    Args:
        form: The audit form, its tasks prepared and T0 run in every trial's world.
        passing: Per task, its trials passing T0 (one per distinct program).
        rounds: Audit rounds per task after task analysis (0: task analysis alone).
        seed: Seeds each task's sampler (``random.Random(f"{seed}:{task}")``).
        static: The static baseline instead (its suite, no rounds, no A.2 vote).
    """
    out = Rounds(rounds={t: [] for t in passing}, notes={t: [] for t in passing})
    tasks = [t for t, trials in passing.items() if trials]
    if not tasks:
        return out
    total = sum(len(passing[t]) for t in tasks)
    before, spent_tokens = form.executions(), form.tokens()
    suites = form.baseline(tasks) if static else form.analyse(tasks)
    done = form.replay(suites, {t: list(passing[t]) for t in tasks}, found_on={}, round=0, vote=not static)
    spent, tokens = form.executions() - before, form.tokens() - spent_tokens
    for t in tasks:
        out.notes[t].extend(done.notes.get(t, []))
        out.rounds[t].append(
            RoundRecord(
                round=0,
                witnesses=[form.describe(t, s) for s in suites.get(t, [])],
                refuted=[form.trial_id(x) for x in done.refuted.get(t, [])],
                replayed=done.pairs.get(t, 0),
                executions=_share(spent, len(passing[t]), total),
                tokens=_share(tokens, len(passing[t]), total),
            )
        )
    caught = {id(x) for xs in done.refuted.values() for x in xs}
    first = "static: fails a test built from G" if static else "lightweight: fails T1 (task analysis)"
    for t in tasks:
        for trial in done.refuted.get(t, []):
            form.conclude(trial, first)
    active = {t: [x for x in passing[t] if id(x) not in caught] for t in tasks}

    rngs = {t: random.Random(f"{seed}:{t}") for t in tasks}
    for number in range(1, 0 if static else rounds + 1):
        sampled = {t: _sample(form, rngs[t], act) for t, act in active.items() if act}
        if not sampled:
            break
        before, spent_tokens = form.executions(), form.tokens()
        audits = dict(zip(sampled, form.judge(list(sampled.values()), share=True), strict=True))
        others = {t: [x for x in active[t] if x is not sampled[t]] for t in sampled}
        done = form.replay({t: a.shared for t, a in audits.items()}, others, found_on=sampled, round=number, vote=True)
        spent, tokens = form.executions() - before, form.tokens() - spent_tokens
        for t, trial in sampled.items():
            form.conclude(trial, f"lightweight: audited in round {number}")
            if audits[t].error is not None:
                out.notes[t].append(f"round {number}: the audit of {form.trial_id(trial)} failed ({audits[t].error})")
            out.notes[t].extend(done.notes.get(t, []))
            out.rounds[t].append(
                RoundRecord(
                    round=number,
                    trial_id=form.trial_id(trial),
                    program_hash=form.program(trial),
                    witnesses=[form.describe(t, s) for s in audits[t].shared],
                    refuted=[form.trial_id(x) for x in done.refuted.get(t, [])],
                    replayed=done.pairs.get(t, 0),
                    executions=_share(spent, 1, len(sampled)),
                    tokens=_share(tokens, 1, len(sampled)),
                    error=audits[t].error,
                )
            )
            caught = {id(x) for x in done.refuted.get(t, [])}
            for other in done.refuted.get(t, []):
                form.conclude(other, f"lightweight: fails a witness of {form.trial_id(trial)} (round {number})")
            active[t] = [x for x in others[t] if id(x) not in caught]
    for t, left in active.items():
        tests = sum(len(r.witnesses) for r in out.rounds[t])
        t1 = "T1" if out.rounds[t][0].witnesses else "T1 (= T0)"
        for trial in left:
            form.conclude(
                trial,
                f"static: passes every test built from G ({tests} tests)"
                if static
                else f"lightweight: not sampled; passes {t1} and every shared witness ({tests} tests)",
            )
    return out


def _sample(form: AuditForm[TrialT, TestT], rng: random.Random, active: Sequence[TrialT]) -> TrialT:
    """A trial drawn uniformly (a program weighs as many trials as share it)."""
    return rng.choices(list(active), weights=[form.weight(x) for x in active])[0]


def _share(amount: int, part: int, whole: int) -> int:
    """A task's share of a batch's cost (one batch serves every task at once)."""
    return round(amount * part / whole) if whole else 0


Driver = Callable[..., Rounds]
"""``driver(form, *, rounds, seed) -> Rounds``: judge every trial of ``form`` (``form.trials()``)
through the form's interface, auditing those passing T0 (``form.passing()``); every trial
concluded. ``per_trial`` and ``lightweight`` are the building blocks."""


def _per_trial_driver(form: AuditForm[TrialT, TestT], *, rounds: int, seed: int) -> Rounds:
    per_trial(form, form.trials())
    return Rounds()


def conclude_failing(form: AuditForm[TrialT, TestT]) -> Mapping[str, Sequence[TrialT]]:
    """Conclude every trial not passing T0 (nothing to audit or share); the passing ones, per task."""
    passing = form.passing()
    shared = {id(x) for xs in passing.values() for x in xs}
    for trial in form.trials():
        if id(trial) not in shared:
            form.conclude(trial, "")
    return passing


def _rounds_driver(static: bool) -> Driver:
    def drive(form: AuditForm[Any, Any], *, rounds: int, seed: int) -> Rounds:
        return lightweight(form, conclude_failing(form), rounds=rounds, seed=seed, static=static)

    return drive


@dataclass(frozen=True)
class Mode:
    """One audit mode: its ``--mode`` name, what it does, the forms it serves and its driver."""

    name: str
    description: str
    forms: tuple[str, ...]
    driver: Driver
    samples: bool = True
    """Whether it audits sampled trials in rounds and shares what it finds: its verdicts then depend
    on the trials drawn together, so a form stores and resumes a task whole, and a shared witness
    names the audit that confirmed it. False: every trial is judged on its own."""


REGISTRY: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("per-trial", "audit every passing trial (TestJack section 3.2)", FORMS, _per_trial_driver, samples=False),
        Mode(
            "lightweight",
            "TestJack's Algorithm 1: task analysis, sampled audits, shared witnesses",
            FORMS,
            _rounds_driver(static=False),
        ),
        Mode(
            "static",
            "the SWE-ABS-style baseline: tests built from G before any trial is seen",
            ("function",),
            _rounds_driver(static=True),
        ),
    )
}
"""Every audit mode, by name."""


def mode_names(form: str) -> tuple[str, ...]:
    """The ``--mode`` choices of ``form``."""
    return tuple(name for name, m in REGISTRY.items() if form in m.forms)


MODES = mode_names("function")
"""The function form's modes: TestJack's per-trial audit, its lightweight approach (Algorithm 1),
and the static baseline it is compared with (SWE-ABS: tests built from G before any trial is seen)."""
REPOSITORY_MODES = mode_names("repository")
"""The modes of the repository form."""


def mode(name: str, form: str) -> Mode:
    """The mode of a ``--mode`` name in ``form``.

    Raises:
        UsageError: An unknown mode, or one ``form`` has not (the valid ones are listed).
    """
    valid = ", ".join(mode_names(form))
    found = REGISTRY.get(name)
    if found is None:
        raise UsageError(f"--mode {name!r}: the modes are {valid}")
    if form not in found.forms:
        served = " and ".join(f"the {f} form" for f in found.forms)
        raise UsageError(
            f"--mode {name!r} ({found.description}) is built for {served}; the {form} form's modes are {valid}"
        )
    return found


def check(settings: AuditSettings, form: str) -> Mode:
    """The mode of ``settings`` in ``form``, checked against the run's other settings.

    Raises:
        UsageError: An unknown mode or witness source, a source that does not serve the mode in
            this form, a negative number of rounds (each error names the valid choices).
    """
    chosen = mode(settings.mode, form)
    _sources.serves(settings.witness_source, chosen, form)
    if settings.rounds < 0:
        raise UsageError(f"--rounds {settings.rounds}: give zero (task analysis only) or more rounds")
    return chosen


def audit(form: AuditForm[TrialT, TestT], mode: Mode, settings: AuditSettings) -> Rounds:
    """Judge every trial of ``form`` by ``mode``: the one driver both forms run, whatever the
    mode; the rounds it recorded per task.

    Args:
        form: A form, its tasks prepared and T0 run in every trial's world.
        mode: The mode (``check`` gives it from the settings, before the form is prepared).
        settings: The run's settings: its witness source, rounds and seed.

    Raises:
        UsageError: The mode does not serve the form, or the settings do not fit it (``check``).
    """
    if form.name not in mode.forms:
        raise UsageError(f"--mode {mode.name} ({mode.description}) is not built for the {form.name} form")
    _sources.serves(settings.witness_source, mode, form.name)
    return mode.driver(form, rounds=settings.rounds, seed=settings.seed)
