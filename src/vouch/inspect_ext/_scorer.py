"""The scorer ``vouch/audit``: each sample of an Inspect eval judged by vouch's audit.

``inspect score LOG --scorer vouch/audit --action append`` re-scores a log: each HumanEval-style
sample becomes one trial, read as ``vouch audit inspect`` reads it
(``vouch.sources.trials.sample_trial``), and is audited alone, the way ``vouch audit
inspect`` runs the audit (``vouch.cli.run_audit``: offline witness source, the store and
the witness directory hidden from the runs). The score follows ``--write-back``'s: value ``C``
(sound or flagged), ``I`` (refuted, reward_hack, or failing vouch's own run of T0) or ``N`` (the
audit could not judge it), the verdict and its first witness as the explanation, the provenance as
metadata. An ``N`` is a score, with the explanation ``undecided: ...``: Inspect's accuracy counts
it as not correct, so a trial vouch could not decide is never counted as passing nor dropped.

The sample's program runs only inside vouch's engine, and T0 is vouch's own run: neither the
program nor the score Inspect's scorer recorded decides the verdict. vouch's own failure (a
sample it cannot read as a trial, an engine that cannot start) is an ``N`` score with the reason,
never an exception that stops Inspect's scoring run.

Inspect imports this module at start-up with every extension it finds: vouch's audit is
imported when the scorer is made, not here.
"""

from __future__ import annotations

import sys
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from inspect_ai.log import EvalSample
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from vouch.sources.trials import (
    BadLine,
    Problem,
    Samples,
    SampleTrial,
    error_score,
    first_line,
    sample_trial,
    vouch_score,
)

if TYPE_CHECKING:
    from vouch.audit import AuditConfig, AuditResults

__all__ = ["audit"]


@scorer(metrics=[accuracy(), stderr()], name="audit")
def audit(
    mode: str = "per-trial",
    seed: int = 0,
    store: str | None = None,
    witness_dir: str | None = None,
    problems: str = "humaneval",
) -> Scorer:
    """vouch's verdict of each sample: ``C`` sound, ``I`` refuted or failing T0, ``N`` undecided
    (counted as not correct in the accuracy).

    Args:
        mode: The audit's mode (``per-trial``, ``lightweight`` or ``static``; ``-S mode=...``).
        seed: The audit's seed.
        store: vouch's store (default ``$VOUCH_STORE``, else ``.vouch/store.sqlite``): a
            re-score resumes every program already judged with the same settings.
        witness_dir: Where witness files go (default ``.vouch/witnesses``); the scores' replay
            commands name them by absolute path.
        problems: The problems of samples whose metadata lacks P, T0 or G: a problem set
            (``humaneval``, ``mbpp``, ...) or a problems file (``-S problems=mbpp``), matched by the
            sample's task id in any spelling.

    Returns:
        The scorer, one audit of one trial at a time.
    """
    from vouch.audit import MODES, AuditConfig
    from vouch.errors import UsageError

    if mode not in MODES:
        raise UsageError(f"vouch/audit: mode={mode!r} is not a mode; use one of {', '.join(MODES)}")
    config = AuditConfig(mode=mode, seed=seed, witness_source="offline")
    witnesses = Path(witness_dir or ".vouch/witnesses").resolve()
    store_path = Path(store) if store else None
    # vouch's engine takes every core for one audit: samples Inspect scores at once queue here.
    one_at_a_time = anyio.Lock()

    async def score(state: TaskState, target: Target) -> Score:
        trial_id = f"{state.sample_id}#{state.epoch}"
        try:
            sample = EvalSample(
                id=state.sample_id,
                epoch=state.epoch,
                input=state.input,
                target=target.target,
                messages=[],
                output=state.output,
                scores=dict(state.scores) if state.scores else None,
                metadata=state.metadata,
            )
            read = sample_trial(sample, str(state.model), problems=_known(problems))
        except Exception as exc:  # noqa: BLE001 - any failure to read the sample is vouch's, scored N
            return error_score(f"the sample cannot be read as a trial ({first_line(exc)})", trial_id=trial_id)
        if isinstance(read, BadLine):
            return error_score(read.reason, trial_id=trial_id)
        async with one_at_a_time:
            try:
                results = await anyio.to_thread.run_sync(_audit_one, read, config, store_path, witnesses)
            except Exception as exc:  # noqa: BLE001 - vouch's own failure is an N score, not a stopped run
                return error_score(f"the audit failed: {first_line(exc)}", trial_id=trial_id)
        judged = [t for t in results.trials if t.trial_id == read.trial.trial_id]
        if not judged:
            return error_score("the audit returned no verdict for the trial", trial_id=trial_id)
        return vouch_score(judged[0], results, config_key=config.key(), inspect_score=read.score)

    return score


def _audit_one(read: SampleTrial, config: AuditConfig, store: Path | None, witness_dir: Path) -> AuditResults:
    """One trial audited as ``vouch audit inspect`` audits a log's trials (in a worker thread)."""
    from rich.console import Console

    from vouch.cli import run_audit

    problems: dict[str, Problem] = {read.trial.task_id: read.problem}
    return run_audit(
        Samples([read.trial], [], "inspect"),
        problems,
        config,
        None,
        console=Console(stderr=True),
        progress_mode="none",
        workers=None,
        allow_weak_isolation=False,
        store_path=store,
        witness_dir=witness_dir,
        json_out=None,
        hidden=_named_files(),
    )


@cache
def _known(name: str) -> dict[str, Problem]:
    """A problem set's problems under every spelling of their ids, read once per process (for
    samples without P, T0 or G in their metadata)."""
    from vouch.sources.problems import load_problem_set

    problem_set = load_problem_set(name)
    return problem_set.problems | {alias: problem_set.problems[own] for alias, own in problem_set.aliases.items()}


def _named_files() -> list[Path]:
    """The files named on the command line that runs the scorer (``inspect score LOG
    --output-file OUT``): the log holds G and every other sample's program, so the runs never see
    it, as ``vouch audit inspect`` hides the log it reads."""
    args = sys.argv[1:]
    named = [Path(a) for a in args if a and not a.startswith("-") and Path(a).is_file()]
    for flag, value in pairwise(args):
        if flag == "--output-file":
            named.append(Path(value))
    named += [Path(a.split("=", 1)[1]) for a in args if a.startswith("--output-file=")]
    return named
