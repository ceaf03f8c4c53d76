"""The audit's modes over the form interface (``_modes``), on a small form kept in memory.

The form here judges trials that are sets of the inputs they get wrong: a test is an input, a
trial fails it when the input is in its set, and a trial's own audit finds its wrong inputs.
What is checked is Algorithm 1's bookkeeping, which both real forms share: T1 first, seeded
uniform sampling weighted by trials per program, the active set, the stop, the round log, the
notes and the bad inputs of the lightweight mode (every trial fails T1, one trial, an audit that fails).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pytest

from vouch.audit._form import AuditForm, Judged, Replayed
from vouch.audit._modes import FORMS, REGISTRY, Mode, Rounds, audit, conclude_failing, lightweight, mode, per_trial
from vouch.audit._settings import AuditSettings
from vouch.errors import UsageError


@dataclass(eq=False)
class Toy:
    name: str
    wrong: frozenset[int]
    weight: int = 1
    fails_audit: bool = False
    passes_t0: bool = True


@dataclass
class ToyForm:
    t1: dict[str, list[int]]
    toys: list[Toy] = field(default_factory=list)
    """Every trial it judges; those with ``passes_t0`` are the ones audited."""
    runs: int = 0
    used_tokens: int = 0
    notes: dict[str, str] = field(default_factory=dict)
    judged: list[str] = field(default_factory=list)
    shared: bool | None = None
    """Whether the last ``judge`` was asked to share what it found."""

    def executions(self) -> int:
        return self.runs

    def tokens(self) -> int:
        return self.used_tokens

    def task(self, trial: Toy) -> str:
        return trial.name.split("#")[0]

    def trial_id(self, trial: Toy) -> str:
        return trial.name

    def program(self, trial: Toy) -> str:
        return f"hash-{trial.name}"

    def weight(self, trial: Toy) -> int:
        return trial.weight

    name = "function"

    def trials(self) -> Sequence[Toy]:
        return self.toys

    def passing(self) -> Mapping[str, Sequence[Toy]]:
        out: dict[str, list[Toy]] = {}
        for toy in self.toys:
            if toy.passes_t0:
                out.setdefault(self.task(toy), []).append(toy)
        return out

    def analyse(self, tasks: Sequence[str]) -> dict[str, list[int]]:
        return {t: list(self.t1.get(t, [])) for t in tasks}

    def baseline(self, tasks: Sequence[str]) -> dict[str, list[int]]:
        return self.analyse(tasks)

    def judge(self, trials: Sequence[Toy], *, share: bool) -> list[Judged[int]]:
        self.shared = share
        self.judged += [t.name for t in trials]
        self.runs += 5 * len(trials)
        self.used_tokens += 100 * len(trials)
        return [Judged(error="the model failed") if t.fails_audit else Judged(sorted(t.wrong)) for t in trials]

    def replay(
        self,
        tests: Mapping[str, list[int]],
        targets: Mapping[str, list[Toy]],
        *,
        found_on: Mapping[str, Toy],
        round: int,
        vote: bool,
    ) -> Replayed[Toy]:
        refuted = {t: [x for x in mine if x.wrong & set(tests.get(t, []))] for t, mine in targets.items()}
        self.runs += sum(len(m) for m in targets.values())
        return Replayed(refuted=refuted, pairs={t: len(tests.get(t, [])) * len(m) for t, m in targets.items()})

    def describe(self, task: str, test: int) -> str:
        return f"input {test}"

    def conclude(self, trial: Toy, note: str) -> None:
        assert trial.name not in self.notes, "a trial concludes once"
        self.notes[trial.name] = note


def _check_protocol(form: AuditForm[Toy, int]) -> AuditForm[Toy, int]:
    return form


def test_t1_refutes_first_then_rounds_share_a_sampled_trial_s_witnesses() -> None:
    trials = [
        Toy("A#0", frozenset()),
        Toy("A#1", frozenset({7})),
        Toy("A#2", frozenset({7})),
        Toy("A#3", frozenset({2})),
    ]
    form = ToyForm(t1={"A": [2]})
    done = lightweight(_check_protocol(form), {"A": trials}, rounds=3, seed=0)
    log = done.rounds["A"]
    assert log[0].round == 0 and log[0].refuted == ["A#3"] and log[0].witnesses == ["input 2"]
    assert form.notes["A#3"] == "lightweight: fails T1 (task analysis)"
    sampled = [r.trial_id for r in log[1:]]
    assert "A#3" not in sampled and len(sampled) == len(set(sampled))
    # Whichever of A#1 / A#2 is sampled first, its witness (input 7) refutes the other.
    wrong = next(r for r in log[1:] if r.trial_id in ("A#1", "A#2"))
    assert wrong.refuted == [{"A#1": "A#2", "A#2": "A#1"}[wrong.trial_id or ""]]
    assert sum(len(r.refuted) for r in log) == 2
    assert all(r.executions > 0 and r.tokens >= 0 for r in log[1:])
    assert {n for n, note in form.notes.items() if note.startswith("lightweight: audited in round")} == set(sampled)
    again = ToyForm(t1={"A": [2]})
    assert [r.trial_id for r in lightweight(again, {"A": trials}, rounds=3, seed=0).rounds["A"]] == [
        r.trial_id for r in log
    ], "seeded: the same samples"


def test_the_sampler_weighs_a_program_by_its_trials() -> None:
    heavy, light = Toy("A#0", frozenset(), weight=99), Toy("A#1", frozenset(), weight=1)
    first = [
        lightweight(ToyForm(t1={}), {"A": [light, heavy]}, rounds=1, seed=s).rounds["A"][1].trial_id for s in range(40)
    ]
    assert first.count("A#0") > 30


def test_every_trial_failing_t1_leaves_no_round() -> None:
    trials = [Toy("A#0", frozenset({1})), Toy("A#1", frozenset({1}))]
    form = ToyForm(t1={"A": [1]})
    done = lightweight(form, {"A": trials}, rounds=3, seed=0)
    assert [r.round for r in done.rounds["A"]] == [0] and form.judged == []


def test_one_trial_is_one_round_and_the_unsampled_keep_a_reason() -> None:
    form = ToyForm(t1={})
    done = lightweight(form, {"A": [Toy("A#0", frozenset())], "B": [Toy("B#0", frozenset())]}, rounds=2, seed=1)
    assert [r.round for r in done.rounds["A"]] == [0, 1] and [r.round for r in done.rounds["B"]] == [0, 1]
    form = ToyForm(t1={})
    lightweight(
        form, {"A": [Toy("A#0", frozenset()), Toy("A#1", frozenset()), Toy("A#2", frozenset())]}, rounds=1, seed=0
    )
    left = [note for note in form.notes.values() if "not sampled" in note]
    assert left == ["lightweight: not sampled; passes T1 (= T0) and every shared witness (0 tests)"] * 2


def test_a_sampled_audit_that_fails_is_logged_and_the_run_goes_on() -> None:
    trials = [Toy("A#0", frozenset(), fails_audit=True), Toy("A#1", frozenset({3}))]
    form = ToyForm(t1={})
    done = lightweight(form, {"A": trials}, rounds=3, seed=0)
    errors = [r for r in done.rounds["A"] if r.error]
    assert len(errors) == 1 and errors[0].trial_id == "A#0" and errors[0].witnesses == []
    assert any(n.startswith("round ") and "A#0 failed (the model failed)" in n for n in done.notes["A"])
    assert set(form.notes) == {"A#0", "A#1"}, "every trial concludes"


def test_static_has_no_rounds_and_no_sampling() -> None:
    trials = [Toy("A#0", frozenset()), Toy("A#1", frozenset({4}))]
    form = ToyForm(t1={"A": [4]})
    done = lightweight(form, {"A": trials}, rounds=3, seed=0, static=True)
    assert [r.round for r in done.rounds["A"]] == [0] and form.judged == []
    assert form.notes == {
        "A#1": "static: fails a test built from G",
        "A#0": "static: passes every test built from G (1 tests)",
    }


def test_per_trial_judges_every_trial_and_concludes_each() -> None:
    trials = [Toy("A#0", frozenset()), Toy("B#0", frozenset({1}))]
    form = ToyForm(t1={})
    judged = per_trial(form, trials)
    assert form.judged == ["A#0", "B#0"] and [j.shared for j in judged] == [[], [1]]
    assert form.notes == {"A#0": "", "B#0": ""}


def test_the_driver_concludes_trials_failing_t0_and_shares_only_what_rounds_sample() -> None:
    failing = Toy("A#9", frozenset({1}), passes_t0=False)
    trials = [Toy("A#0", frozenset()), Toy("A#1", frozenset({7})), failing]
    form = ToyForm(t1={}, toys=trials)
    audit(form, mode("lightweight", "function"), AuditSettings(mode="lightweight", rounds=1))
    assert form.notes["A#9"] == "" and "A#9" not in form.judged and form.shared is True
    form = ToyForm(t1={}, toys=trials)
    audit(form, mode("per-trial", "function"), AuditSettings())
    assert form.judged == ["A#0", "A#1", "A#9"] and form.shared is False


def test_a_new_mode_is_one_registry_entry_the_driver_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    def analysis_only(form: AuditForm[Toy, int], *, rounds: int, seed: int) -> Rounds:
        return lightweight(form, conclude_failing(form), rounds=0, seed=seed)

    entry = Mode("analysis", "task analysis alone", FORMS, analysis_only)
    monkeypatch.setitem(REGISTRY, "analysis", entry)
    trials = [Toy("A#0", frozenset()), Toy("A#1", frozenset({2}))]
    form = ToyForm(t1={"A": [2]}, toys=trials)
    done = audit(form, mode("analysis", "repository"), AuditSettings(mode="analysis", rounds=3))
    assert [r.round for r in done.rounds["A"]] == [0] and form.judged == []
    assert form.notes["A#1"] == "lightweight: fails T1 (task analysis)"
    with pytest.raises(UsageError, match="is not built for the function form"):
        audit(form, replace(entry, forms=("repository",)), AuditSettings(mode="analysis"))
