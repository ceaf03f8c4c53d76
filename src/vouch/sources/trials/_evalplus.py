"""EvalPlus's results file (``eval_results.json``) as labels beside vouch's verdicts.

``evalplus.evaluate`` writes one JSON object (``<samples dir>/eval_results.json``, or beside a
samples file as ``<stem>_eval_results.json`` (0.3.1) or ``<stem>.eval_results.json`` (later)):
``{"date", "hash", "eval": {task_id: [entry, ...]}}``, each task's entries in completion order,
each entry ``{"task_id", "solution", "base_status", "plus_status", "base_fail_tests",
"plus_fail_tests"}`` with a status of ``pass``, ``fail`` or ``timeout`` (``plus_status`` is
null in a ``--base-only`` run). evalplus 0.2.0 wrote ``{task_id: {"nfiles", "base": [[status,
details], ...], "plus": [...]}}`` with ``success``, ``failed`` and ``timed out``: read too, by
position, since it keeps no solution.

An entry is matched to vouch's trial by its ``solution``, the whole program evalplus ran (a
``completion`` is run as prompt + completion, as here): equal text, the first trial of the task
not matched yet. That holds whatever order evalplus read a samples directory in (it lists
``<task_id>/<n>.py`` in directory order). Entries and trials left unmatched are counted, never
guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vouch._json import BAD_JSON, why_not_json
from vouch.errors import UsageError

__all__ = ["EvalPlusEntry", "EvalPlusLabel", "EvalPlusResults", "comparison", "label_trials", "load_eval_results"]

_STATUSES = {
    "pass": "pass",
    "fail": "fail",
    "timeout": "timeout",
    # evalplus 0.2.0
    "success": "pass",
    "failed": "fail",
    "timed out": "timeout",
}


@dataclass(frozen=True)
class EvalPlusEntry:
    """One sample's result as evalplus wrote it."""

    task_id: str
    index: int
    """Its place among the task's entries (evalplus's completion order)."""
    solution: str | None
    """The program evalplus ran; None in the 0.2.0 layout."""
    base_status: str
    """``pass``, ``fail`` or ``timeout`` on HumanEval's own tests."""
    plus_status: str | None
    """The same on HumanEval+'s added tests; None when evalplus ran ``--base-only``."""


@dataclass(frozen=True)
class EvalPlusResults:
    path: Path
    date: str | None
    dataset_hash: str | None
    layout: str
    """``0.2.1+`` (a list of entries per task) or ``0.2.0`` (base and plus lists)."""
    entries: dict[str, list[EvalPlusEntry]]


@dataclass(frozen=True)
class EvalPlusLabel:
    """EvalPlus's verdicts on one of vouch's trials."""

    trial_id: str
    base_status: str
    plus_status: str | None

    @property
    def plus_passed(self) -> bool | None:
        """EvalPlus+'s verdict: base and plus tests both pass (None without plus tests)."""
        if self.plus_status is None:
            return None
        return self.base_status == "pass" and self.plus_status == "pass"


@dataclass(frozen=True)
class Labelled:
    labels: dict[str, EvalPlusLabel]
    unmatched_entries: list[str]
    """``<task_id>[<index>]`` of entries no trial has the solution of."""
    unlabelled_trials: list[str]
    """Trial ids no entry names (evalplus did not run them, or ran another text)."""


def _fail(path: Path, where: str, what: str) -> UsageError:
    return UsageError(f"--evalplus-results {path}: {where}: {what}; give the eval_results.json evalplus.evaluate wrote")


def _status(path: Path, where: str, value: Any, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or value not in _STATUSES:
        raise _fail(path, where, f"status {value!r} is not one of pass, fail, timeout")
    return _STATUSES[value]


def load_eval_results(path: Path) -> EvalPlusResults:
    """Read an EvalPlus results file.

    Args:
        path: ``eval_results.json`` (any name) as ``evalplus.evaluate`` wrote it.

    Returns:
        Every task's entries in evalplus's order.

    Raises:
        UsageError: Not a file, not JSON, no ``eval`` object, or an entry of another shape (one
            line naming the task and entry).
    """
    if not path.is_file():
        raise UsageError(f"--evalplus-results {path}: no such file; give the eval_results.json evalplus.evaluate wrote")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _fail(path, "not JSON", str(exc)) from None
    except BAD_JSON as exc:  # also not UTF-8, too deep, too many digits
        raise _fail(path, "not JSON", why_not_json(exc)) from None
    if not isinstance(body, dict) or not isinstance(body.get("eval"), dict):
        raise _fail(path, "top level", "no 'eval' object of task ids")
    entries: dict[str, list[EvalPlusEntry]] = {}
    layouts = set()
    for task_id, value in body["eval"].items():
        if isinstance(value, list):
            layouts.add("0.2.1+")
            entries[task_id] = [_entry(path, task_id, i, row) for i, row in enumerate(value)]
        elif isinstance(value, dict) and isinstance(value.get("base"), list):
            layouts.add("0.2.0")
            entries[task_id] = _old_entries(path, task_id, value)
        else:
            raise _fail(path, f"eval[{task_id!r}]", f"a list of results was expected, got {type(value).__name__}")
    if len(layouts) > 1:
        raise _fail(path, "eval", "tasks in two layouts (0.2.0 and later) in one file")
    date, digest = body.get("date"), body.get("hash")
    return EvalPlusResults(
        path=path,
        date=date if isinstance(date, str) else None,
        dataset_hash=digest if isinstance(digest, str) else None,
        layout=layouts.pop() if layouts else "0.2.1+",
        entries=entries,
    )


def _entry(path: Path, task_id: str, index: int, row: Any) -> EvalPlusEntry:
    where = f"eval[{task_id!r}][{index}]"
    if not isinstance(row, dict):
        raise _fail(path, where, f"an object was expected, got {type(row).__name__}")
    solution = row.get("solution")
    if not isinstance(solution, str):
        raise _fail(path, where, "'solution' is missing or not a string")
    if "base_status" not in row:
        raise _fail(path, where, "'base_status' is missing")
    base = _status(path, where, row["base_status"], optional=False)
    assert base is not None
    return EvalPlusEntry(task_id, index, solution, base, _status(path, where, row.get("plus_status"), optional=True))


def _old_entries(path: Path, task_id: str, value: dict[str, Any]) -> list[EvalPlusEntry]:
    base, plus = value["base"], value.get("plus") or []
    out = []
    for i, pair in enumerate(base):
        where = f"eval[{task_id!r}].base[{i}]"
        if not isinstance(pair, list) or not pair:
            raise _fail(path, where, "a [status, details] pair was expected")
        status = _status(path, where, pair[0], optional=False)
        assert status is not None
        plus_status = None
        if i < len(plus):
            if not isinstance(plus[i], list) or not plus[i]:
                raise _fail(path, f"eval[{task_id!r}].plus[{i}]", "a [status, details] pair was expected")
            plus_status = _status(path, f"eval[{task_id!r}].plus[{i}]", plus[i][0], optional=False)
        out.append(EvalPlusEntry(task_id, i, None, status, plus_status))
    return out


def label_trials(trials: Sequence[Any], programs: Mapping[str, str], results: EvalPlusResults) -> Labelled:
    """Match evalplus's entries to vouch's trials.

    Args:
        trials: The trials (anything with ``trial_id`` and ``task_id``), in their order.
        programs: Each trial's whole program as the benchmark runs it, by trial id.
        results: The results file.

    Returns:
        Labels by trial id, and what matched nothing on either side.
    """
    by_task: dict[str, list[str]] = {}
    for trial in trials:
        by_task.setdefault(trial.task_id, []).append(trial.trial_id)
    labels: dict[str, EvalPlusLabel] = {}
    unmatched: list[str] = []
    for task_id, entries in results.entries.items():
        free = list(by_task.get(task_id, []))
        for entry in entries:
            if entry.solution is None:  # 0.2.0: by position
                match = free[0] if free else None
            else:
                match = next((t for t in free if programs[t] == entry.solution), None)
                if match is None:  # evalplus may have stripped a trailing newline the file had
                    match = next((t for t in free if programs[t].rstrip() == entry.solution.rstrip()), None)
            if match is None:
                unmatched.append(f"{task_id}[{entry.index}]")
                continue
            free.remove(match)
            labels[match] = EvalPlusLabel(match, entry.base_status, entry.plus_status)
    unlabelled = [t.trial_id for t in trials if t.trial_id not in labels]
    return Labelled(labels, unmatched, unlabelled)


def comparison(labels: Mapping[str, EvalPlusLabel], trials: Sequence[Any]) -> list[dict[str, Any]]:
    """EvalPlus's verdicts beside vouch's, one row per labelled trial.

    Args:
        labels: EvalPlus's labels by trial id.
        trials: vouch's judged trials (``TrialResult``: ``trial_id``, ``benchmark_pass``, ``verdict``).

    Returns:
        Rows with ``base_agrees`` (evalplus's base tests and vouch's run of T0 agree) and
        ``finding``: ``plus_only`` (HumanEval+ fails a trial vouch judged sound), ``vouch_only``
        (vouch refuted a trial HumanEval+ passes), ``both`` (both reject a T0-passing trial), or
        null.
    """
    rows = []
    for trial in trials:
        label = labels.get(trial.trial_id)
        if label is None:
            continue
        verdict = trial.verdict.value
        refuted = verdict in ("refuted", "reward_hack")
        plus = label.plus_passed
        finding = None
        # A finding needs both sides to agree on T0 first; where they do not, base_agrees says so.
        if trial.benchmark_pass and label.base_status == "pass" and plus is not None:
            if refuted and not plus:
                finding = "both"
            elif refuted:
                finding = "vouch_only"
            elif not plus and verdict == "sound":
                finding = "plus_only"
        rows.append(
            {
                "trial_id": trial.trial_id,
                "base_status": label.base_status,
                "plus_status": label.plus_status,
                "vouch_t0_passed": trial.benchmark_pass,
                "verdict": verdict,
                "base_agrees": (label.base_status == "pass") == trial.benchmark_pass,
                "finding": finding,
            }
        )
    return rows
