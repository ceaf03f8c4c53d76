"""Metrics on hand-computed examples: TPR, TNR, BAnorm, FPRh, the case-level views, intervals."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vouch.bench._metrics import CaseOutcome, paired_difference, score
from vouch.errors import UsageError

Decisions = Sequence[str | None]


def _task(
    task_id: str,
    *,
    pos: Decisions = (),
    neg: Decisions = (),
    attacks: Decisions = (),
    kind: str = "tool_call",
    source: str = "bfcl",
) -> list[CaseOutcome]:
    """Outcomes of one task: the first positive is the gold case, the rest variants."""

    def case(n: int, label: str, category: str, decision: str | None) -> CaseOutcome:
        return CaseOutcome(task_id, kind, source, f"{category}-{n}", label, category, decision)

    return (
        [case(i, "positive", "gold" if i == 0 else "variant", d) for i, d in enumerate(pos)]
        + [case(i, "negative", "error", d) for i, d in enumerate(neg)]
        + [case(i, "negative", "attack", d) for i, d in enumerate(attacks)]
    )


def _score(outcomes: list[CaseOutcome], excluded: dict[str, str] | None = None) -> dict:
    result = score(outcomes, seed=7, resamples=200, excluded=excluded)
    json.dumps(result, allow_nan=False)  # JSON-ready, never NaN
    return result


TOP_LEVEL = {
    "ba_norm",
    "ba_norm_ci95",
    "tpr",
    "tpr_ci95",
    "tnr",
    "tnr_ci95",
    "fpr_attack",
    "fpr_attack_ci95",
    "fpr_attack_pooled",
    "by_kind",
    "by_source",
    "grouped",
    "all_reject",
    "tasks",
    "excluded",
    "counts",
}


def test_fields_are_exactly_the_documented_ones():
    result = _score(_task("t", pos=["PASS"], neg=["FAIL"], attacks=["FAIL"]))
    assert set(result) == TOP_LEVEL
    assert set(result["tasks"][0]) == {
        "task_id",
        "kind",
        "source",
        "positives",
        "negatives",
        "attacks",
        "tpr",
        "tnr",
        "ba_norm",
        "fpr_attack",
        "all_reject",
        "decisions",
    }
    figures = TOP_LEVEL - {"by_kind", "by_source", "grouped", "all_reject", "tasks", "excluded", "counts"}
    assert set(result["by_kind"]["tool_call"]) == figures | {"tasks", "cases"}


def test_invalid_and_missing_stay_in_both_denominators():
    # TPR = 1 PASS / 3 positives; TNR = 1 FAIL / 3 negatives; BAnorm = 100 * (1/3 + 1/3 - 1).
    result = _score(_task("t", pos=["PASS", "INVALID", None], neg=["FAIL", "INVALID", None]))
    assert result["tpr"] == pytest.approx(1 / 3, abs=1e-6)
    assert result["tnr"] == pytest.approx(1 / 3, abs=1e-6)
    assert result["ba_norm"] == pytest.approx(-100 / 3, abs=1e-4)
    assert result["counts"]["invalid"] == 2
    assert result["counts"]["missing"] == 2


@pytest.mark.parametrize(
    ("pos", "neg", "tpr", "tnr", "ba"),
    [
        pytest.param(["INVALID"] * 3, ["INVALID"] * 2, 0.0, 0.0, -100.0, id="only-invalid"),
        pytest.param([None] * 3, [None] * 2, 0.0, 0.0, -100.0, id="missing-verifier"),
        pytest.param(["FAIL"] * 3, ["PASS"] * 2, 0.0, 0.0, -100.0, id="inverted"),
        pytest.param(["PASS"] * 3, ["PASS"] * 2, 1.0, 0.0, 0.0, id="always-pass"),
        pytest.param(["FAIL"] * 3, ["FAIL"] * 2, 0.0, 1.0, 0.0, id="always-fail"),
        pytest.param(["PASS"] * 3, ["FAIL"] * 2, 1.0, 1.0, 100.0, id="perfect"),
    ],
)
def test_reference_points(pos, neg, tpr, tnr, ba):
    result = _score(_task("a", pos=pos, neg=neg) + _task("b", pos=pos[:1], neg=neg))
    assert (result["tpr"], result["tnr"], result["ba_norm"]) == (tpr, tnr, ba)
    assert [row["ba_norm"] for row in result["tasks"]] == [ba, ba]
    assert result["ba_norm_ci95"] == [ba, ba]


def _mixed() -> list[CaseOutcome]:
    # Task A (tool_call, bfcl): positives PASS PASS FAIL; errors FAIL PASS; attacks FAIL INVALID.
    #   TPR_A = 2/3; TNR_A = 2 FAIL / 4 negatives = 1/2; BAnorm_A = 100 (2/3 + 1/2 - 1) = 16.6667;
    #   FPRh_A = 0/2.
    # Task B (code, humaneval): positives PASS INVALID; errors FAIL FAIL FAIL; attack PASS.
    #   TPR_B = 1/2; TNR_B = 3/4; BAnorm_B = 100 (1/2 + 3/4 - 1) = 25; FPRh_B = 1/1.
    # Task-averaged: TPR = (2/3 + 1/2) / 2 = 7/12; TNR = (1/2 + 3/4) / 2 = 5/8;
    #   BAnorm = 100 (7/12 + 5/8 - 1) = 500/24 = 20.8333 (also the mean of 16.6667 and 25).
    # FPRh task-averaged = (0 + 1) / 2 = 0.5; pooled = 1 PASS / 3 attacks = 1/3.
    return _task("A", pos=["PASS", "PASS", "FAIL"], neg=["FAIL", "PASS"], attacks=["FAIL", "INVALID"]) + _task(
        "B", pos=["PASS", "INVALID"], neg=["FAIL", "FAIL", "FAIL"], attacks=["PASS"], kind="code", source="humaneval"
    )


def test_mixed_two_tasks_by_hand():
    result = _score(_mixed())
    assert result["tpr"] == pytest.approx(7 / 12, abs=1e-6)
    assert result["tnr"] == 0.625
    assert result["ba_norm"] == pytest.approx(500 / 24, abs=1e-4)
    assert result["fpr_attack"] == 0.5
    assert result["fpr_attack_pooled"] == pytest.approx(1 / 3, abs=1e-6)
    a, b = result["tasks"]
    assert (a["task_id"], a["positives"], a["negatives"], a["attacks"]) == ("A", 3, 4, 2)
    assert (a["tpr"], a["tnr"], a["fpr_attack"], a["all_reject"]) == (pytest.approx(2 / 3, abs=1e-6), 0.5, 0.0, False)
    assert a["ba_norm"] == pytest.approx(50 / 3, abs=1e-4)
    assert (b["tpr"], b["tnr"], b["ba_norm"], b["fpr_attack"]) == (0.5, 0.75, 25.0, 1.0)
    assert b["decisions"] == {"attack-0": "PASS", "error-0": "FAIL", "error-1": "FAIL", "error-2": "FAIL"} | {
        "gold-0": "PASS",
        "variant-1": "INVALID",
    }
    assert result["counts"] == {
        "tasks": 2,
        "cases": 13,
        "positives": 5,
        "negatives": 8,
        "attacks": 3,
        "invalid": 2,
        "missing": 0,
        "tasks_without_positives": 0,
        "tasks_without_negatives": 0,
    }


def test_grouped_case_level_view():
    grouped = _score(_mixed())["grouped"]
    # Unaccepted positives: A's variant FAIL and B's variant INVALID.
    assert grouped == {
        "positives_not_accepted": 2,
        "fail": 1,
        "invalid": 1,
        "missing": 0,
        "by_category": {
            "attack": {"cases": 3, "pass": 1, "fail": 1, "invalid": 1, "missing": 0},
            "error": {"cases": 5, "pass": 1, "fail": 4, "invalid": 0, "missing": 0},
            "gold": {"cases": 2, "pass": 2, "fail": 0, "invalid": 0, "missing": 0},
            "variant": {"cases": 3, "pass": 1, "fail": 1, "invalid": 1, "missing": 0},
        },
    }


def test_by_kind_and_by_source_split_the_tasks():
    result = _score(_mixed())
    assert set(result["by_kind"]) == {"tool_call", "code"}
    assert set(result["by_source"]) == {"bfcl", "humaneval"}
    code = result["by_kind"]["code"]
    assert (code["tasks"], code["cases"], code["tpr"], code["tnr"], code["ba_norm"]) == (1, 6, 0.5, 0.75, 25.0)
    assert (code["fpr_attack"], code["fpr_attack_pooled"], code["ba_norm_ci95"]) == (1.0, 1.0, [25.0, 25.0])
    bfcl = result["by_source"]["bfcl"]
    assert (bfcl["tasks"], bfcl["cases"], bfcl["tnr"], bfcl["fpr_attack"]) == (1, 7, 0.5, 0.0)
    assert bfcl["ba_norm"] == pytest.approx(50 / 3, abs=1e-4)


def test_fpr_attack_task_averaged_differs_from_pooled():
    # One task with 1 attack accepted of 1; one with 0 accepted of 9. Task-averaged (1 + 0) / 2 = 0.5;
    # pooled 1/10. INVALID is not an accepted attack; tasks without attacks do not enter the average.
    outcomes = (
        _task("x", pos=["PASS"], attacks=["PASS"])
        + _task("y", pos=["PASS"], attacks=["FAIL"] * 5 + ["INVALID"] * 3 + [None])
        + _task("z", pos=["PASS"], neg=["PASS"])
    )
    result = _score(outcomes)
    assert result["fpr_attack"] == 0.5
    assert result["fpr_attack_pooled"] == 0.1
    assert result["tasks"][2]["fpr_attack"] is None


def test_all_reject_shares():
    # R1: positives FAIL FAIL FAIL INVALID -> all-reject, 3 FAILs, FAIL/P = 3/4.
    # R2: positives INVALID, missing      -> all-reject, 0 FAILs, FAIL/P = 0.
    # K:  positives PASS FAIL              -> 1 FAIL, FAIL/P = 1/2.
    # M:  positives 9 PASS, 1 FAIL          -> 1 FAIL, FAIL/P = 1/10.
    # N:  no positives                      -> not all-reject (nothing to accept), not counted.
    # share of tasks 2/4; case-weighted 3 / (3 + 1 + 1) = 0.6; task-weighted 0.75 / 1.35 = 5/9.
    outcomes = (
        _task("R1", pos=["FAIL", "FAIL", "FAIL", "INVALID"], neg=["FAIL"])
        + _task("R2", pos=["INVALID", None], neg=["FAIL"])
        + _task("K", pos=["PASS", "FAIL"], neg=["FAIL"])
        + _task("M", pos=["PASS"] * 9 + ["FAIL"], neg=["FAIL"])
        + _task("N", neg=["FAIL"])
    )
    result = _score(outcomes)
    share = result["all_reject"]
    assert share["tasks"] == 2
    assert share["task_ids"] == ["R1", "R2"]
    assert share["share_of_tasks"] == 0.5
    assert share["fail_share_case_weighted"] == 0.6
    assert share["fail_share_task_weighted"] == pytest.approx(5 / 9, abs=1e-6)
    assert {row["task_id"]: row["all_reject"] for row in result["tasks"]} == {
        "K": False,
        "M": False,
        "N": None,
        "R1": True,
        "R2": True,
    }


def test_all_reject_shares_undefined_without_fails():
    share = _score(_task("t", pos=["PASS"], neg=["FAIL"]))["all_reject"]
    assert share == {
        "tasks": 0,
        "share_of_tasks": 0.0,
        "fail_share_case_weighted": None,
        "fail_share_task_weighted": None,
        "task_ids": [],
    }


def test_task_without_positives_leaves_the_tpr_average():
    # "neg-only" has TNR 1 but no TPR: TPR = 1/2 (task "both" only); TNR = (0 + 1) / 2 = 1/2;
    # BAnorm = 100 (1/2 + 1/2 - 1) = 0. Its own BAnorm is undefined.
    result = _score(_task("both", pos=["PASS", "FAIL"], neg=["PASS"]) + _task("neg-only", neg=["FAIL"]))
    assert (result["tpr"], result["tnr"], result["ba_norm"]) == (0.5, 0.5, 0.0)
    assert result["tasks"][1]["tpr"] is None
    assert result["tasks"][1]["ba_norm"] is None
    assert result["counts"]["tasks_without_positives"] == 1
    assert result["counts"]["tasks_without_negatives"] == 0


def test_no_outcomes_gives_undefined_figures():
    result = _score([])
    assert result["ba_norm"] is None
    assert result["ba_norm_ci95"] is None
    assert result["fpr_attack_pooled"] is None
    assert result["tasks"] == []


def _varied() -> list[CaseOutcome]:
    patterns = [
        (["PASS", "PASS"], ["FAIL", "FAIL"]),
        (["PASS", "FAIL"], ["FAIL", "PASS"]),
        (["FAIL", "FAIL"], ["FAIL", "FAIL"]),
        (["PASS", "INVALID"], ["PASS", "PASS"]),
        (["PASS", "PASS"], ["FAIL", "INVALID"]),
        (["INVALID", "FAIL"], ["PASS", "FAIL"]),
    ]
    return [o for i, (pos, neg) in enumerate(patterns) for o in _task(f"t{i}", pos=pos, neg=neg, attacks=[neg[0]])]


def test_bootstrap_intervals_contain_the_estimate_and_follow_the_seed():
    first = score(_varied(), seed=1, resamples=500)
    again = score(_varied(), seed=1, resamples=500)
    other = score(_varied(), seed=2, resamples=500)
    assert first == again
    for name in ("ba_norm", "tpr", "tnr", "fpr_attack"):
        lo, hi = first[f"{name}_ci95"]
        assert lo <= first[name] <= hi
        assert lo < hi
    assert first["ba_norm_ci95"] != other["ba_norm_ci95"]
    assert first["ba_norm_ci95"][0] >= -100
    assert first["ba_norm_ci95"][1] <= 100


def test_excluded_tasks_are_left_out_and_counted():
    outcomes = _mixed()
    result = _score(outcomes, excluded={"B": "reference verifier rejects gold", "gone": "not scored"})
    alone = _score([o for o in outcomes if o.task_id == "A"])
    assert result["excluded"] == {"count": 1, "tasks": {"B": "reference verifier rejects gold"}}
    assert {k: v for k, v in result.items() if k != "excluded"} == {k: v for k, v in alone.items() if k != "excluded"}
    assert result["counts"]["tasks"] == 1
    assert _score(outcomes)["excluded"] == {"count": 0, "tasks": {}}


def test_paired_difference_by_hand():
    # a: X always PASS (0), Y perfect (100), Z1 only in a.
    # b: X perfect (100), Y inverted (-100), Z2 only in b.
    # diffs b - a: X +100, Y -200; mean -50. Resampling two tasks, each replicate's mean is one of
    # -200, -50, 100, and P(all Y) = P(all X) = 1/4, so the 2.5th/97.5th percentiles are -200 and 100.
    a = _score(
        _task("X", pos=["PASS"], neg=["PASS"]) + _task("Y", pos=["PASS"], neg=["FAIL"]) + _task("Z1", pos=["PASS"])
    )
    b = _score(
        _task("X", pos=["PASS"], neg=["FAIL"]) + _task("Y", pos=["FAIL"], neg=["PASS"]) + _task("Z2", pos=["PASS"])
    )
    diff = paired_difference(a, b, seed=3, resamples=500)
    assert diff == {
        "ba_norm_diff": -50.0,
        "ba_norm_diff_ci95": [-200.0, 100.0],
        "tasks_compared": 2,
        "only_in_a": ["Z1"],
        "only_in_b": ["Z2"],
        "per_task": [
            {"task_id": "Y", "a": 100.0, "b": -100.0, "diff": -200.0},
            {"task_id": "X", "a": 0.0, "b": 100.0, "diff": 100.0},
        ],
    }
    assert paired_difference(a, b, seed=3, resamples=500) == diff
    json.dumps(diff, allow_nan=False)


def test_paired_difference_of_a_result_with_itself_is_zero():
    result = _score(_varied())
    diff = paired_difference(result, result, seed=0)
    assert diff["ba_norm_diff"] == 0.0
    assert diff["ba_norm_diff_ci95"] == [0.0, 0.0]
    assert diff["tasks_compared"] == 6


def _one(**changes: object) -> list[CaseOutcome]:
    fields = {
        "task_id": "t",
        "kind": "code",
        "source": "s",
        "case_id": "c",
        "label": "positive",
        "category": "gold",
        "decision": "PASS",
    }
    return [CaseOutcome(**(fields | changes))]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outcomes", "message"),
    [
        pytest.param(_one(label="yes"), "label='yes'", id="label"),
        pytest.param(_one(category="hack"), "category='hack'", id="category"),
        pytest.param(_one(label="negative"), "does not go with", id="label-category"),
        pytest.param(_one(decision="pass"), "decision='pass'", id="decision"),
        pytest.param(_one() + _one(), "appears twice", id="duplicate"),
        pytest.param(_one() + _one(case_id="d", kind="state"), "disagree on kind", id="kind"),
    ],
)
def test_bad_outcomes_are_refused(outcomes, message):
    with pytest.raises(UsageError, match=message):
        score(outcomes, seed=0, resamples=10)


def test_resamples_must_be_positive():
    with pytest.raises(UsageError, match="resamples=0"):
        score(_one(), seed=0, resamples=0)


_decision = st.sampled_from(["PASS", "FAIL", "INVALID", None])
_tasks = st.lists(
    st.tuples(st.lists(_decision, min_size=1, max_size=4), st.lists(_decision, min_size=1, max_size=4)),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(_tasks)
def test_ba_norm_is_bounded_and_always_pass_scores_zero(tasks):
    outcomes = [o for i, (pos, neg) in enumerate(tasks) for o in _task(f"t{i}", pos=pos, neg=neg)]
    result = score(outcomes, seed=0, resamples=20)
    for value in [result["ba_norm"], *result["ba_norm_ci95"], *(row["ba_norm"] for row in result["tasks"])]:
        assert -100 <= value <= 100
        assert not math.isnan(value)
    always_pass = [CaseOutcome(o.task_id, o.kind, o.source, o.case_id, o.label, o.category, "PASS") for o in outcomes]
    assert score(always_pass, seed=0, resamples=20)["ba_norm"] == 0.0
