"""TestJack appendix A.2: when a witness shows a defect of the prompt rather than of the trial.

A requirement P states (explicit) refutes every trial that fails its witness, however many
models skip it. A requirement P only implies (implicit) is *ambiguous* when rho(q), the share
of models with passing trials that skip it, is above one half: most models read P otherwise,
so the defect lies in the underspecified prompt and the witness does not refute. The rule
withholds it from a trial only where at least two models other than the trial's own skip it
(``CONTEST_MODELS``): the vote that changes a trial's verdict is never one other model's. A model skips
q when more than half of its passing trials (duplicates counted) fail the witness.

The function-level audit applies the rule to inputs before writing witnesses
(``_trial.ambiguity``); the SWE form applies it after every trial of an instance has been
audited, by running each implicit-requirement witness in every passing trial's world
(``repository._ambiguity``). This module imports nothing of the repository form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from vouch.core import Witness

MIN_VOTERS = 3
"""Passing trials an instance needs before the rule can speak (as at function level)."""
AMBIGUOUS = "ambiguous requirement (TestJack A.2)"
"""How the reason of a witness withheld by the rule begins."""


def is_ambiguous(witness: Witness) -> bool:
    """The witness was withheld by the rule (it checks an ambiguous requirement)."""
    return (witness.validation.reason or "").startswith(AMBIGUOUS)


def requirement_note(witness: Witness) -> str:
    """The requirement an ambiguous witness checks, for the instance's report."""
    rho = (witness.validation.reason or "").split("rho = ", 1)[-1].split(" ", 1)[0]
    return f"{witness.clause_id or '?'}: {witness.clause} (rho {rho})"


def rho_over_models(voters: Sequence[Mapping[str, int]], skipping: Sequence[set[str]]) -> dict[str, float]:
    """rho(q) for every requirement key some voter skips, when it is above one half.

    Args:
        voters: Per voter (a distinct program), its passing trials by model.
        skipping: Per voter, the keys of the requirements it skips (fails the witness of).

    Returns:
        ``{key: rho}`` of the ambiguous requirements only; empty when there are fewer than
        ``MIN_VOTERS`` passing trials.
    """
    return {key: rho for key, (rho, _models) in _ambiguous(voters, skipping).items()}


def skipped_by(voters: Sequence[Mapping[str, int]], skipping: Sequence[set[str]]) -> dict[str, set[str]]:
    """The ambiguous requirements (``rho_over_models``), each with the models that skip it."""
    return {key: models for key, (_rho, models) in _ambiguous(voters, skipping).items()}


def voting_models(voters: Sequence[Mapping[str, int]]) -> set[str]:
    """Every model with a passing trial among ``voters``."""
    return {model for models in voters for model in models}


CONTEST_MODELS = 2
"""Models other than a trial's own that must skip a requirement before the rule withholds it
from that trial, where the vote has that many other models: one other model's trials, however
they answer, never turn a refuted trial sound where a second could have spoken. With one other
model in the vote, that model's skipping is all the vote can say (two models' trials that both
read P otherwise than G are more often right about G than wrong together)."""


def withheld_from(skipped: Mapping[str, set[str]], own: Iterable[str], present: Iterable[str]) -> set[str]:
    """The ambiguous requirements (``skipped_by``) the rule withholds from the trials of one
    program, whose models are ``own``, in a vote of the models ``present``: those that, for each
    of its models, at least ``CONTEST_MODELS`` other models skip, or every other model where fewer
    are present (a run of one model is the rule over that model's trials). A program is one
    verdict, so it must hold for every trial of it; a program two models share is a trial of
    each."""
    mine = set(own) or {""}
    everyone = set(present)

    def needed(model: str) -> int:
        return min(CONTEST_MODELS, len(everyone - {model}))

    return {key for key, models in skipped.items() if all(len(models - {m}) >= needed(m) for m in mine)}


def _ambiguous(voters: Sequence[Mapping[str, int]], skipping: Sequence[set[str]]) -> dict[str, tuple[float, set[str]]]:
    totals: dict[str, int] = {}
    for models in voters:
        for model, n in models.items():
            totals[model] = totals.get(model, 0) + n
    if sum(totals.values()) < MIN_VOTERS:
        return {}
    votes: dict[str, dict[str, int]] = {}
    for models, keys in zip(voters, skipping, strict=True):
        for key in keys:
            per_model = votes.setdefault(key, {})
            for model, n in models.items():
                per_model[model] = per_model.get(model, 0) + n
    out = {}
    for key, per_model in votes.items():
        skippers = {model for model, n in per_model.items() if 2 * n > totals[model]}
        rho = len(skippers) / len(totals)
        if rho > 0.5:
            out[key] = (rho, skippers)
    return out
