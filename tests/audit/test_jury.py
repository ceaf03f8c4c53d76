"""The domain's edges and the jury of trials.

An input on an edge the seeds leave out and P's words leave open (zero or the other sign where
every seed is positive, a list out of the seeds' order) is searched, and refutes a trial only
where independent models' passing trials mostly give G's answer there; where they mostly give
another, G's answer is a reading of its own (never a refutation), and where too few other models
pass the task the edges are not used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from vouch.audit import PRELOAD, AuditConfig, AuditResults, Verdict, audit_humaneval
from vouch.audit.function._preconditions import infer
from vouch.audit.function._trial import jury_verdict
from vouch.exec import LocalExecutor
from vouch.sources.trials import Problem

PROMPT = '''def squares(xs):
    """Return the sum of the squares of the numbers in the list xs."""
'''
TEST = """def check(candidate):
    assert candidate([1, 2, 3]) == 14
    assert candidate([4, 5]) == 41
    assert candidate([2]) == 4
    assert candidate([3, 1, 7, 2]) == 63
"""
RIGHT = "    return sum(x * x for x in xs)\n"
POSITIVE_ONLY = "    return sum(x * x for x in xs if x > 0)\n"
RIGHT_TOO = "    total = 0\n    for x in xs:\n        total += x ** 2\n    return total\n"


def test_wide_rules_open_the_seeds_edges_and_keep_ps_words() -> None:
    seeds = [[[1, 2, 3]], [[4, 5]], [[2]], [[3, 1, 7, 2]]]
    rules = infer(PROMPT, ["xs"], seeds)
    assert rules.admits([[-1]]) is not None and rules.admits([[0]]) is not None
    assert rules.wide().admits([[-1]]) is None and rules.wide().admits([[0, 5]]) is None
    positive = infer(PROMPT.replace("numbers", "positive numbers"), ["xs"], seeds)
    assert positive.wide().admits([[-1]]) is not None  # P's word closes that edge
    said = 'def f(x, base):\n    """base numbers are less than 10."""\n'
    bounded = infer(said, ["x", "base"], [[8, 3], [1, 2], [7, 2]])
    assert bounded.wide().admits([8, -2]) is not None  # P bounds base: its sign stays the seeds'
    assert bounded.wide().admits([-8, 2]) is None  # x, which P does not bound, opens
    stated = infer(PROMPT.replace('xs."""', 'xs.\n    Note: 1 <= xs <= 9\n    """'), ["xs"], seeds)
    assert "xs" in stated.describe()
    sorted_seeds = [[[1, 2, 3]], [[4, 5, 6]], [[2, 3, 9]], [[1, 5, 7]]]
    assert infer(PROMPT, ["xs"], sorted_seeds).admits([[3, 2, 1]]) is not None
    assert infer(PROMPT, ["xs"], sorted_seeds).wide().admits([[3, 2, 1]]) is None
    said = PROMPT.replace("in the list xs", "in the sorted list xs")
    assert infer(said, ["xs"], sorted_seeds).wide().admits([[3, 2, 1]]) is not None


def test_the_jury_confirms_g_only_with_enough_independent_models() -> None:
    agree, differ = {"g": 3, "other": 1}, {"g": 0, "other": 2}
    jury = {"a": agree, "b": agree, "c": agree, "d": differ, "e": differ}
    assert jury_verdict(jury, {"e": 1}, 3) is None  # 3 of 4 others give G's answer
    assert jury_verdict(jury, {"a": 1}, 3) is not None  # 2 of 4 others: not confirmed
    assert jury_verdict({"a": agree, "b": agree}, {"z": 1}, 3) is not None  # thin: 2 others
    assert "thin jury" in (jury_verdict({"a": agree, "b": agree}, {"z": 1}, 3) or "")
    assert jury_verdict(jury, {"e": 1}, 0) is not None  # 0: the edges are never used
    split = {"g": 1, "other": 1}  # a model split evenly has no majority: it does not confirm
    assert jury_verdict({"a": agree, "b": agree, "c": split, "d": agree}, {"z": 1}, 3) is None
    assert jury_verdict({"a": agree, "b": agree, "c": split, "d": split}, {"z": 1}, 3) is not None


@pytest.fixture(scope="module")
def pool() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as executor:
        yield executor


def _audit(
    pool: LocalExecutor, tmp: Path, canonical: str, rows: list[tuple[str, str]], *, everywhere: bool = False
) -> AuditResults:
    samples = tmp / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "Sq/0", "completion": c, "model": m}) + "\n" for m, c in rows))
    return audit_humaneval(
        samples,
        executor=pool,
        witness_dir=tmp / "witnesses",
        config=AuditConfig(seed=0, jury_everywhere=everywhere),
        problems={"Sq/0": Problem("Sq/0", PROMPT, "squares", canonical, TEST)},
    )


REFUSES_NEGATIVES = "    if any(x < 0 for x in xs):\n        raise ValueError('no negative numbers')\n" + RIGHT


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "verdict"),
    [(POSITIVE_ONLY, Verdict.REFUTED), (REFUSES_NEGATIVES, Verdict.SOUND)],
    ids=["a wrong value refutes", "declining the edge does not"],
)
def test_on_an_edge_the_jury_confirms_a_wrong_value_refutes(
    pool: LocalExecutor, tmp_path: Path, first: str, verdict: Verdict
) -> None:
    # The jury confirms G's answer on negative numbers. A trial that gives another value there
    # is refuted; one that raises declines an input P's words never promise.
    rows = [("m1", first), ("m2", RIGHT_TOO), ("m3", RIGHT_TOO), ("m4", RIGHT), ("m5", RIGHT)]
    results = _audit(pool, tmp_path, RIGHT, rows)
    verdicts = {t.model: t for t in results.trials}
    assert verdicts["m1"].verdict == verdict, verdicts["m1"].reason
    if verdict is Verdict.REFUTED:
        (witness,) = [w for w in verdicts["m1"].witnesses if w.validation.valid]
        assert "edge of the domain" in (witness.why_valid or "")
    assert all(verdicts[m].verdict == Verdict.SOUND for m in ("m2", "m3", "m4", "m5"))


@pytest.mark.slow
def test_g_s_own_reading_on_an_edge_refutes_nobody(pool: LocalExecutor, tmp_path: Path) -> None:
    # G skips negative numbers, which P's words do not say; two models' trials square them and two
    # follow G. A.2 (rho = 1/2) would not withhold the input; the jury does not confirm G there.
    rows = [("m1", RIGHT), ("m2", RIGHT_TOO), ("m3", POSITIVE_ONLY), ("m4", POSITIVE_ONLY)]
    results = _audit(pool, tmp_path, POSITIVE_ONLY, rows)
    refuted = [t for t in results.trials if t.verdict != Verdict.SOUND]
    assert not refuted, [(t.model, t.verdict, t.reason) for t in refuted]


@pytest.mark.slow
def test_a_thin_jury_leaves_the_edges_out_and_says_so(pool: LocalExecutor, tmp_path: Path) -> None:
    rows = [("m1", POSITIVE_ONLY), ("m2", RIGHT_TOO), ("m3", RIGHT)]
    results = _audit(pool, tmp_path, RIGHT, rows)
    verdicts = {t.model: t for t in results.trials}
    assert verdicts["m1"].verdict == Verdict.SOUND
    assert "thin jury" in (verdicts["m1"].reason or "")


def _wrong_at_five(variant: int) -> str:
    test = ("len(xs) == 5", "5 == len(xs)", "len(xs) in (5,)", "len(xs) - 5 == 0")[variant]
    return f"    if {test}:\n        return 0\n    return sum(x * x for x in xs)\n"


@pytest.mark.slow
@pytest.mark.parametrize("everywhere", [False, True])
def test_with_the_jury_everywhere_a_shared_slip_is_no_dispute(
    pool: LocalExecutor, tmp_path: Path, everywhere: bool
) -> None:
    # Every model has one trial with the same slip, written its own way, beside two right ones:
    # A.2's dispute rule sees the slip in every other model and flags; the jury sees every other
    # model mostly give G's answer, and the slip is refuted.
    rows = [(f"m{k}", c) for k in range(4) for c in (RIGHT, RIGHT_TOO, _wrong_at_five(k))]
    results = _audit(pool, tmp_path, RIGHT, rows, everywhere=everywhere)
    slips = [t for t in results.trials if "len(xs)" in (t.trial_id and rows[int(t.trial_id.split("#")[1])][1])]
    assert len(slips) == 4
    expected = Verdict.REFUTED if everywhere else Verdict.FLAGGED
    assert all(t.verdict == expected for t in slips), [(t.verdict, t.reason) for t in slips]
