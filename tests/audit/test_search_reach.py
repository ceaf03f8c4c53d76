"""What the offline search reaches, end to end through the engine, and where precision holds it back.

Each wrong trial here passes HumanEval's T0 and is wrong only where the older search never
looked: past the seeds' sizes, on P's own last example, in the other letter case, on large
numbers, or too slowly. Each sound trial differs from G only where P allows no input, within
T0's float tolerance, or on a task whose T0 checks a property of the output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from vouch.audit import PRELOAD, AuditResults, Verdict, audit_humaneval
from vouch.exec import LocalExecutor

pytestmark = pytest.mark.slow

SUM_RECURSIVE = "    if n == 1:\n        return 1\n    return n + sum_to_n(n - 1)\n"
PRIME_TABLE = "    return len(string) in [n for n in range(2, 100) if all(n % k for k in range(2, n))]\n"
SHORTEST_SUFFIX = (
    "    if is_palindrome(string):\n        return string\n"
    "    for i in range(len(string) - 1, -1, -1):\n        if is_palindrome(string[i:]):\n"
    "            return string + string[:i][::-1]\n    return string\n"
)
CASELESS = "    return text.lower() == text[::-1].lower()\n"
FIB4_RECURSIVE = (
    "    if n < 4:\n        return [0, 0, 2, 0][n]\n    return fib4(n - 1) + fib4(n - 2) + fib4(n - 3) + fib4(n - 4)\n"
)
# Correct up to float rounding: the mean of deviations summed in another order.
MAD_OTHER_ORDER = (
    "    mean = sum(sorted(numbers)) / len(numbers)\n"
    "    return sum(sorted(abs(x - mean) for x in numbers)) / len(numbers)\n"
)
# find_zero's T0 checks that the answer is a root, not that it is G's root: bisection is as good.
FIND_ZERO_BISECT = (
    "    lo, hi = -1.0, 1.0\n    while poly(xs, lo) * poly(xs, hi) > 0:\n        lo, hi = lo * 2, hi * 2\n"
    "    for _ in range(200):\n        mid = (lo + hi) / 2\n"
    "        if poly(xs, lo) * poly(xs, mid) <= 0:\n            hi = mid\n        else:\n            lo = mid\n"
    "    return lo\n"
)
# do_algebra that refuses operator lists P excludes ("equal to the length of operand list minus one").
ALGEBRA_STRICT = (
    "    if len(operator) != len(operand) - 1:\n        raise ValueError('one operator fewer than operands')\n"
    "    expression = str(operand[0])\n    for op, x in zip(operator, operand[1:]):\n"
    "        expression += op + str(x)\n    return eval(expression)\n"
)

ROWS = [
    ("HumanEval/60", SUM_RECURSIVE),
    ("HumanEval/82", PRIME_TABLE),
    ("HumanEval/10", SHORTEST_SUFFIX),
    ("HumanEval/48", CASELESS),
    ("HumanEval/46", FIB4_RECURSIVE),
    ("HumanEval/4", MAD_OTHER_ORDER),
    ("HumanEval/32", FIND_ZERO_BISECT),
    ("HumanEval/160", ALGEBRA_STRICT),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuditResults]:
    tmp = tmp_path_factory.mktemp("reach")
    path = tmp / "reach_samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in ROWS))
    with LocalExecutor(workers=2, preload=PRELOAD) as executor:
        yield audit_humaneval(path, executor=executor, witness_dir=tmp / "witnesses")


def _trial(results: AuditResults, task_id: str):  # type: ignore[no-untyped-def]
    return next(t for t in results.trials if t.task_id == task_id)


# has_close_elements with a special case no generated input reaches: a 0.0 among five or more numbers.
BASE_CLOSE = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) < threshold:\n                return True\n    return False\n"
)
ZERO_SPECIAL_CASE = "    if 0.0 in numbers and len(numbers) > 4:\n        return False\n" + BASE_CLOSE


@pytest.mark.parametrize("ghost_rounds", [0, 2])
def test_search_aimed_at_a_ghost_branch_refutes_a_special_case(tmp_path: Path, ghost_rounds: int) -> None:
    """The trial's branch no pool input takes gets inputs with its own constants put in; without
    that search (0 rounds) the trial is sound, with it refuted by a validated witness."""
    from vouch.audit.function._runs import AuditConfig

    path = tmp_path / "ghost_samples.jsonl"
    rows = [("HumanEval/0", ZERO_SPECIAL_CASE)] + [("HumanEval/0", BASE_CLOSE)] * 3
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    with LocalExecutor(workers=2, preload=PRELOAD) as executor:
        out = audit_humaneval(
            path, executor=executor, witness_dir=tmp_path / "w", config=AuditConfig(ghost_rounds=ghost_rounds)
        )
    special = out.trials[0]
    assert all(t.verdict is Verdict.SOUND for t in out.trials[1:])
    if not ghost_rounds:
        assert special.verdict is Verdict.SOUND
        assert "R[s] aimed at ghost branches" not in out.config["stage_runs"]
        return
    assert out.config["stage_runs"]["R[s] aimed at ghost branches"] >= 1
    assert special.verdict is Verdict.REFUTED, special.reason
    (witness, *_) = special.witnesses
    numbers, _threshold = witness.input
    assert 0.0 in numbers and len(numbers) > 4 and witness.expected is True
    assert witness.validation.valid


def test_every_trial_passes_t0(results: AuditResults) -> None:
    assert all(t.benchmark_pass for t in results.trials), [(t.trial_id, t.reason) for t in results.trials]


def test_recursion_past_a_thousand_levels_is_refuted(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/60")
    assert trial.verdict is Verdict.REFUTED, trial.reason
    assert trial.witnesses[0].input[0] > 900 and "RecursionError" in trial.witnesses[0].defect


def test_a_size_the_seeds_never_reach_is_refuted(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/82")
    assert trial.verdict is Verdict.REFUTED, trial.reason
    assert len(trial.witnesses[0].input[0]) > 100


def test_the_shortest_palindromic_suffix_is_refuted(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/10")
    assert trial.verdict is Verdict.REFUTED, trial.reason
    (witness,) = trial.witnesses[:1]
    assert witness.expected != witness.actual


def test_p_s_own_examples_are_explicit_and_g_departing_from_one_is_a_finding() -> None:
    from vouch.audit.function._offline import fill_pool, stated_examples
    from vouch.audit.function._preconditions import infer
    from vouch.audit.function._prompt import Example

    examples = [Example("f('cata')", ["cata"], "catac", True), Example("f('ab')", ["ab"], "aba", True)]
    exs = stated_examples([*examples, Example("f('x')", ["x"], "x", True)], t0_inputs=[["x"]])
    assert [e.args for e in exs] == [["cata"], ["ab"]]  # T0 runs 'x' already
    rows = [{"ok": True, "value": "catac"}, {"ok": True, "value": "abba"}]
    pool = fill_pool(infer("", ["s"], [["x"]]), [], [], examples=list(zip(exs, rows, strict=True)))
    assert [a for _, a, _ in pool.inputs] == [["cata"]] and len(pool.explicit) == 1
    assert pool.conflicts == ["P's example f('ab') (G gives 'abba')"]


def test_the_other_letter_case_is_an_input_p_allows(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/48")
    assert trial.verdict is Verdict.REFUTED, trial.reason
    text = trial.witnesses[0].input[0]
    assert text.lower() == text[::-1].lower() and text != text[::-1]


def test_a_trial_too_slow_where_g_is_quick_is_refuted_with_its_timing(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/46")
    assert trial.verdict is Verdict.REFUTED, trial.reason
    witness = trial.witnesses[0]
    assert "no answer within" in witness.defect and "signal.setitimer" in witness.source
    assert all(r.outcome == "pass" for r in witness.validation.reference_runs)


def test_float_rounding_within_t0_s_tolerance_is_no_difference(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/4")
    assert trial.verdict is Verdict.SOUND, trial.witnesses


def test_a_task_whose_t0_checks_a_property_gets_no_offline_witness(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/32")
    assert trial.verdict is Verdict.SOUND
    assert "property" in (trial.reason or "")


def test_an_input_p_excludes_never_backs_a_refutation(results: AuditResults) -> None:
    trial = _trial(results, "HumanEval/160")
    assert trial.verdict is Verdict.SOUND, trial.witnesses
    task = next(t for t in results.tasks if t.task_id == "HumanEval/160")
    assert task.well_formed


def test_witnesses_replay_from_their_directory(results: AuditResults) -> None:
    for trial in results.trials:
        for w in trial.witnesses:
            assert Path(w.file).is_file() and w.replay.startswith("vouch audit replay ")
