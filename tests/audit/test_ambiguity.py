"""TestJack appendix A.2: a requirement most models skip is ambiguous, not a trial defect."""

from __future__ import annotations

from vouch.audit._ambiguity import withheld_from
from vouch.audit.function._jobs import ProgramJob
from vouch.audit.function._trial import _contested, ambiguity


def _job(n: int, **models: int) -> ProgramJob:
    return ProgramJob("t", f"h{n}", "def f(): pass\n", f"t#{n}", None, models=dict(models))


def test_one_model_most_of_whose_trials_skip_makes_it_ambiguous() -> None:
    voters = [_job(0, a=2), _job(1, a=1), _job(2, a=1)]
    # 3 of a's 4 passing trials differ from G on x; 1 of 4 on y.
    rho = ambiguity(voters, [{"x"}, {"x", "y"}, set()])
    assert rho == {"x": 1.0}


def test_rho_is_over_models_not_trials() -> None:
    # Model a has many passing trials that all skip x; models b and c implement it.
    voters = [_job(0, a=10), _job(1, b=1), _job(2, c=1)]
    assert ambiguity(voters, [{"x"}, set(), set()]) == {}  # rho = 1/3: necessary, refutable
    # Now b skips it too: rho = 2/3 > 1/2.
    assert ambiguity(voters, [{"x"}, {"x"}, set()]) == {"x": 2 / 3}


def test_half_is_not_more_than_half() -> None:
    voters = [_job(0, a=2), _job(1, b=2)]
    assert ambiguity(voters, [{"x"}, set()]) == {}


def test_a_program_shared_by_two_models_votes_for_both() -> None:
    voters = [_job(0, a=1, b=1), _job(1, a=1), _job(2, b=1)]
    # The shared program skips x: each model has 1 of 2 skipping, which is not a majority.
    assert ambiguity(voters, [{"x"}, set(), set()]) == {}
    assert ambiguity(voters, [{"x"}, {"x"}, {"x"}]) == {"x": 1.0}


def test_too_few_passing_trials_and_the_rule_is_silent() -> None:
    assert ambiguity([_job(0, a=1), _job(1, a=1)], [{"x"}, {"x"}]) == {}


def test_the_rule_withholds_from_a_trial_only_what_two_other_models_skip() -> None:
    voters = [_job(0, a=1), _job(1, b=2), _job(2, c=1)]
    skipped = _contested(voters, [{"x", "y"}, {"x", "y"}, {"x"}])
    assert skipped == {"x": {"a", "b", "c"}, "y": {"a", "b"}}
    present = {"a", "b", "c"}
    # y: a and b skip it. From a's trial, b alone is one other model: not withheld; from c's, both.
    assert withheld_from(skipped, {"a"}, present) == {"x"}
    assert withheld_from(skipped, {"c"}, present) == {"x", "y"}
    # A program two models share is a trial of each: withheld only where it is for both.
    assert withheld_from(skipped, {"a", "b"}, present) == {"x"}
    assert withheld_from(skipped, {"b", "c"}, present) == {"x"}


def test_a_vote_of_fewer_models_asks_for_every_other_one() -> None:
    # Two models: the other one skipping is all the vote can say. One model: its own trials decide.
    assert withheld_from({"x": {"a", "b"}}, {"a"}, {"a", "b"}) == {"x"}
    assert withheld_from({"x": {"a"}}, {"a"}, {"a", "b"}) == set()
    assert withheld_from({"x": {"a"}}, {"a"}, {"a"}) == {"x"}
