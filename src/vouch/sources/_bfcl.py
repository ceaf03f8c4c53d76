"""BFCL -> ``tool_call`` tasks: the Python sets of the Berkeley Function Calling Leaderboard.

The data comes from ``bfcl-eval`` 2026.3.23 as package data (``bfcl_eval/data``); none of its
modules are imported, so its heavy dependencies (torch, model SDKs) are never needed:
``pip install --no-deps bfcl-eval==2026.3.23``.

Each task is one BFCL entry: the user's question, the function schemas (``environment/tools.json``),
the gold calls (the first allowed value of every parameter of the possible answer) and a
reference verifier that implements possible-answer matching (``_bfcl_verifier``, with the answer
key embedded). Case labels come from the possible answer and the schemas, read as requirements:
the builder never runs the reference verifier.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from vouch.core import Case, Provenance, SourceInfo, TaskFiles, TaskSpec, canonical_candidate, content_hash
from vouch.errors import UsageError
from vouch.sources import _bfcl_cases as cases_mod

BFCL_VERSION = "2026.3.23"
INSTALL = f"pip install --no-deps bfcl-eval=={BFCL_VERSION}"
SUBSETS: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""BFCL v4 categories built, in build order (``BFCL_v4_<name>.json``)."""
DEFAULT_LIMIT = 80
MIN_POSITIVES, MIN_VARIANTS, MIN_NEGATIVES, MIN_ATTACKS = 5, 4, 6, 1
MAX_VARIANTS, MAX_ERRORS, MAX_ATTACKS = 7, 10, 4
_OPTIONS = ("limit", "subsets")


class BuildOutput(NamedTuple):
    """What :func:`build` returns."""

    tasks: list[TaskFiles]
    """The tasks built, in build order."""
    skipped: list[tuple[str, str]]
    """(task id, reason) of every entry examined and left out."""


@dataclass(frozen=True)
class Entry:
    """One BFCL entry with its possible answer."""

    subset: str
    original_id: str
    messages: list[dict[str, str]]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, dict[str, list[Any]]]]

    @property
    def task_id(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", f"bfcl-{self.subset}-{self.original_id}")


# --- reading the package data ---------------------------------------------------------------


def data_dir() -> Path:
    """The ``bfcl_eval/data`` directory of the installed package, found without importing it.

    Raises:
        UsageError: bfcl-eval is missing or is not the pinned version.
    """
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"bfcl-eval is not installed: {INSTALL}")
    try:
        installed = importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed is not None and installed != BFCL_VERSION:
        raise UsageError(f"bfcl-eval {installed} is installed; vouch builds from {BFCL_VERSION}: {INSTALL}")
    root = Path(next(iter(spec.submodule_search_locations))) / "data"
    if not root.is_dir():
        raise UsageError(f"bfcl-eval has no data directory at {root}: {INSTALL}")
    return root


def _json_lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"bfcl-eval lacks {path.name}; reinstall it: {INSTALL}") from None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@cache
def load_subset(subset: str) -> tuple[Entry, ...]:
    """Every entry of one BFCL set that has a possible answer, in file order."""
    root = data_dir()
    answers = {a["id"]: a["ground_truth"] for a in _json_lines(root / "possible_answer" / f"BFCL_v4_{subset}.json")}
    entries = []
    for item in _json_lines(root / f"BFCL_v4_{subset}.json"):
        if item["id"] not in answers:
            continue
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for turn in item["question"] for m in turn]
        entries.append(Entry(subset, item["id"], messages, item["function"], answers[item["id"]]))
    return tuple(entries)


# --- options and sampling -------------------------------------------------------------------


def _parse_options(options: Mapping[str, Any]) -> tuple[int, list[str]]:
    unknown = sorted(k for k, v in options.items() if k not in _OPTIONS and v is not None)
    if unknown:
        raise UsageError(f"bfcl: unknown option(s) {unknown}; valid options: {list(_OPTIONS)}")
    limit = options.get("limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"bfcl: limit={limit!r} ({type(limit).__name__}) must be a positive integer")
    subsets = options.get("subsets")
    if subsets is None:
        return limit, list(SUBSETS)
    if isinstance(subsets, str) or not all(isinstance(s, str) for s in subsets):
        raise UsageError(f"bfcl: subsets={subsets!r} must be a list of set names; valid: {', '.join(SUBSETS)}")
    bad = [s for s in subsets if s not in SUBSETS]
    if bad or not subsets:
        raise UsageError(f"bfcl: unknown subset(s) {bad or subsets!r}; valid: {', '.join(SUBSETS)}")
    return limit, [s for s in SUBSETS if s in subsets]


def build(out_dir: Path, *, seed: int, options: Mapping[str, Any]) -> BuildOutput:
    """Build BFCL ``tool_call`` tasks: a seeded sample spread evenly over the chosen sets.

    Each set gets an equal share of ``limit`` (the first sets one more when it does not divide);
    a set that runs out of buildable entries leaves its share to the others, taken in turn.
    Entries are tried in a seeded shuffle of each set; one that cannot give the per-task minimum
    of cases is skipped and reported.

    Args:
        out_dir: Where the caller will write the tasks; unused, the tasks are returned.
        seed: Seeds the sample and every task's case choices; same seed, same output.
        options: ``limit`` (int, default 80) and ``subsets`` (set names, default all of SUBSETS).

    Returns:
        The tasks built and the entries skipped, with reasons.

    Raises:
        UsageError: bad options, or bfcl-eval is not installed.
    """
    del out_dir
    limit, subsets = _parse_options(options)
    rng = random.Random(seed)
    queues = {s: rng.sample(load_subset(s), len(load_subset(s))) for s in subsets}
    quota = {s: limit // len(subsets) + (1 if i < limit % len(subsets) else 0) for i, s in enumerate(subsets)}
    tasks: list[TaskFiles] = []
    skipped: list[tuple[str, str]] = []

    def take_one(subset: str) -> bool:
        """Build the next buildable entry of ``subset``; False when the set is exhausted."""
        while queues[subset]:
            entry = queues[subset].pop(0)
            task = build_task(entry, seed=seed)
            if isinstance(task, str):
                skipped.append((entry.task_id, task))
                continue
            tasks.append(task)
            return True
        return False

    for subset in subsets:
        while quota[subset] and take_one(subset):
            quota[subset] -= 1
    open_sets = [s for s in subsets if queues[s]]
    while len(tasks) < limit and open_sets:
        open_sets = [s for s in open_sets if take_one(s) and len(tasks) <= limit]
        del open_sets[len(open_sets) if len(tasks) < limit else 0 :]
    return BuildOutput(tasks, skipped)


# --- one task -------------------------------------------------------------------------------


def instruction_text(entry: Entry) -> str:
    """The question as the solver saw it, and where the tools are described."""
    if len(entry.messages) == 1 and entry.messages[0]["role"] == "user":
        body = entry.messages[0]["content"]
    else:
        body = "\n\n".join(f"**{m['role']}:** {m['content']}" for m in entry.messages)
    return (
        f"{body}\n\n---\n\nThe functions you may call are described in `environment/tools.json`. "
        "Answer with the function call(s) that fulfil the request.\n"
    )


def _literal(name: str, data: Any) -> str:
    lines = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)
    body = "".join(f"    {line!r}\n" for line in lines)
    return f"{name} = _json.loads(\n{body})\n"


def verifier_source(entry: Entry) -> str:
    """``reference/verifier.py``: the matcher module plus this task's answer key and ``verify``."""
    module = Path(__file__).with_name("_bfcl_verifier.py").read_text(encoding="utf-8")
    return (
        f"{module.rstrip()}\n\n\n"
        f"# --- the answer key of BFCL {entry.subset} {entry.original_id} (bfcl-eval {BFCL_VERSION}) ---\n"
        "import json as _json  # noqa: E402\n\n"
        f"{_literal('GROUND_TRUTH', entry.ground_truth)}\n"
        f"{_literal('FUNCTIONS', entry.functions)}\n\n"
        "def verify(candidate, env):\n"
        '    """PASS (True) when the calls match the possible answer above; the schemas are embedded."""\n'
        "    return matches(candidate, GROUND_TRUTH, FUNCTIONS)\n"
    )


def _problem(entry: Entry) -> str | None:
    """Why the answer key cannot be met at all, if it cannot."""
    schemas = {f["name"]: f for f in entry.functions}
    for expected in entry.ground_truth:
        ((name, params),) = expected.items()
        if name not in schemas:
            return f"the possible answer calls {name!r}, which no schema describes"
        parameters = schemas[name].get("parameters") or {}
        properties = parameters.get("properties") or {}
        for param in parameters.get("required") or []:
            if param not in params or not any(a != "" for a in params[param]):
                return f"{name}.{param} is required but the possible answer allows no value for it"
        for param, allowed in params.items():
            if param not in properties and "" not in allowed:
                return f"the possible answer needs {name}.{param}, which the schema lacks"
    return None


@dataclass
class _Suite:
    """Collects drafts, drops canonical twins (first kept), then picks and numbers the cases."""

    drafts: list[cases_mod.Draft] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def add(self, drafts: list[cases_mod.Draft]) -> None:
        for draft in drafts:
            key = canonical_candidate("tool_call", draft.candidate)
            if key not in self.seen:
                self.seen.add(key)
                self.drafts.append(draft)

    def of(self, *categories: str) -> list[cases_mod.Draft]:
        return [d for d in self.drafts if d.category in categories]


def _round_robin(drafts: list[cases_mod.Draft], k: int, rng: random.Random) -> list[cases_mod.Draft]:
    """Up to ``k`` drafts, one construction at a time (in first-seen order), random within each."""
    groups: dict[str, list[cases_mod.Draft]] = {}
    for draft in drafts:
        groups.setdefault(draft.construction, []).append(draft)
    queues = [rng.sample(g, len(g)) for g in groups.values()]
    picked: list[cases_mod.Draft] = []
    while len(picked) < k and any(queues):
        for queue in queues:
            if queue and len(picked) < k:
                picked.append(queue.pop(0))
    return picked


def _to_cases(drafts: list[cases_mod.Draft]) -> list[Case]:
    counts: dict[str, int] = {}
    for draft in drafts:
        counts[draft.name] = counts.get(draft.name, 0) + 1
    numbers: dict[str, int] = {}
    out = []
    for draft in drafts:
        numbers[draft.name] = numbers.get(draft.name, 0) + 1
        case_id = draft.name if counts[draft.name] == 1 else f"{draft.name}-{numbers[draft.name]}"
        out.append(
            Case(
                id=case_id,
                label="positive" if draft.category in ("gold", "variant") else "negative",
                category=draft.category,  # type: ignore[arg-type]
                subcategory=draft.subcategory,
                candidate=draft.candidate,
                provenance=Provenance(
                    construction=draft.construction,
                    derived_from=None if draft.category == "gold" else draft.derived_from,
                    content_hash=content_hash(draft.candidate),
                    details=draft.details,
                ),
                rationale=draft.rationale,
            )
        )
    return out


def build_task(entry: Entry, *, seed: int) -> TaskFiles | str:
    """One task from one entry, or the reason it cannot give the per-task minimum of cases."""
    problem = _problem(entry)
    if problem is not None:
        return problem
    rng = random.Random(f"bfcl:{seed}:{entry.task_id}")
    plan = cases_mod.Plan.of(entry.ground_truth, entry.functions)
    suite = _suite_of(plan)
    variants = _round_robin(suite.of("variant"), MAX_VARIANTS, rng)
    errors = _round_robin(suite.of("error"), MAX_ERRORS, rng)
    attacks = _round_robin(suite.of("attack"), MAX_ATTACKS, rng)
    positives = 1 + len(variants)
    if positives < MIN_POSITIVES or len(variants) < MIN_VARIANTS:
        return f"only {positives} distinct positives (gold and {len(variants)} variants); {MIN_POSITIVES} needed"
    if len(errors) + len(attacks) < MIN_NEGATIVES or len(attacks) < MIN_ATTACKS:
        return f"only {len(errors) + len(attacks)} distinct negatives ({len(attacks)} attacks)"
    gold = suite.of("gold")[0]
    return TaskFiles(
        spec=TaskSpec(
            id=entry.task_id,
            kind="tool_call",
            source=SourceInfo(
                benchmark="bfcl", version=BFCL_VERSION, original_id=entry.original_id, subset=entry.subset
            ),
            public_tools=[],
        ),
        instruction=instruction_text(entry),
        environment={"tools.json": json.dumps(entry.functions, indent=2, sort_keys=True, ensure_ascii=False) + "\n"},
        reference={
            "verifier.py": verifier_source(entry),
            "gold.json": json.dumps(gold.candidate, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        },
        cases=_to_cases([gold, *variants, *errors, *attacks]),
    )


_CONSTRUCTIONS: tuple[Callable[[cases_mod.Plan], list[cases_mod.Draft]], ...] = (
    cases_mod.gold,
    cases_mod.alternatives,
    cases_mod.cosmetics,
    cases_mod.errors,
    cases_mod.attacks,
)


def _suite_of(plan: cases_mod.Plan) -> _Suite:
    suite = _Suite()
    for construct in _CONSTRUCTIONS:
        suite.add(construct(plan))
    return suite
