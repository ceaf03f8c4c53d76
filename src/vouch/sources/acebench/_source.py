"""ACEBench -> ``tool_call`` tasks: the normal and special categories of ACEBench's English data.

The data is ACEBench's (its public repository at the commit the registry pins, MIT), registered file by
file in the corpus registry (``vouch data corpora``) and read from a data directory
(``$VOUCH_DATA_DIR``, the user cache), downloaded there when none holds any of it. Nothing of it
ships with vouch, and none of ACEBench's code is used: the reference verifier
(``acebench._verifier``) is vouch's own, written from ACEBench's checking rules.

Each task is one ACEBench case: the conversation (with the user profile or date where the case
has one), the functions' schemas (``environment/tools.json``), the gold (the answer's calls, or
for the special categories the text ACEBench's prompt asks for) and the reference verifier with
the answer embedded. The agent categories are not built: their answers are end states of
ACEBench's simulated apps, which are code, not data (docs/acebench.md).

Bad input never stops the build: a data file that is missing, a line that is not JSON, a case
without an answer, or an answer that does not parse or contradicts its own schema is one line in
``skipped`` and in the manifest's ``source_versions`` (``skipped/<id>``), and the rest is built.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from vouch import corpora
from vouch.core import MutationTarget, SourceInfo, TaskFiles, TaskSpec, canonical_candidate
from vouch.errors import UsageError
from vouch.sources._drafts import NamedDraft, round_robin, spread_over, to_cases
from vouch.sources.acebench import _cases as cases
from vouch.sources.acebench._verifier import expected_calls

COMMIT = corpora.ACEBENCH_COMMIT
VERSION = COMMIT[:7]
NORMAL: tuple[str, ...] = tuple(c for c, *_ in corpora.ACEBENCH_CATEGORIES if c.startswith("normal_"))
SPECIAL: tuple[str, ...] = tuple(c for c, *_ in corpora.ACEBENCH_CATEGORIES if c.startswith("special_"))
IRRELEVANT = next(c for c in SPECIAL if c.removeprefix("special_") == "irrelevant")
"""The special category whose answers give the refusal text (:func:`read_refusal`)."""
CATEGORIES = NORMAL + SPECIAL
AGENT: tuple[str, ...] = corpora.ACEBENCH_AGENT_CATEGORIES
AGENT_REASON = (
    "not built: its answer is the end state of ACEBench's simulated apps (code, not data), "
    "so it is a state task that needs that simulator to replay the calls"
)
MUTATION_TARGET = MutationTarget(kind="data", name="GROUND_TRUTH")
"""C6's operator set: a task's checks are its answer (the matching rules are shared by every task)."""
REFUSAL_TARGET = MutationTarget(kind="data", name="REFUSAL")
"""An irrelevant task's: its check is the refusal's phrase (its answer text is used for nothing else)."""
_OPTIONS = ("limit", "categories")
DEFAULT_LIMIT = 400
"""Tasks a default build makes, spread over the categories: about 7,400 cases, whose reference
check fits the 5-minute budget on 2 cores (about 20 ms a decision); ``--limit 1000`` builds every
buildable case (777 tasks)."""


class BuildOutput(NamedTuple):
    """What :func:`build` returns."""

    tasks: list[TaskFiles]
    """The tasks built, in build order."""
    skipped: list[tuple[str, str]]
    """(id, reason) of every input left out: missing files, bad lines, cases that give too few cases."""
    inputs: dict[str, str]
    """For the manifest's ``source_versions``: the commit, each data file's sha256, what was skipped."""


@dataclass(frozen=True)
class Entry:
    """One ACEBench case with its answer."""

    category: str
    original_id: str
    question: str
    functions: list[dict[str, Any]]
    answer: Any
    time: str = ""
    profile: str = ""

    @property
    def task_id(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", f"acebench-{self.original_id}")

    @property
    def special(self) -> str | None:
        """``incomplete``, ``error_param`` or ``irrelevant`` for a special case, else None."""
        return self.category.removeprefix("special_") if self.category.startswith("special_") else None


# --- reading the data ------------------------------------------------------------------------


class _Files(NamedTuple):
    paths: dict[str, tuple[Path, Path]]
    skipped: list[tuple[str, str]]
    inputs: dict[str, str]


def locate(categories: list[str], *, line: Callable[[str], None] | None = None) -> _Files:
    """The data and answer file of each category, found in a data directory.

    A category whose files are missing is skipped with the registry's one-line message. When no
    data directory holds any ACEBench file, the files are downloaded (sha256 checked).

    Raises:
        UsageError: Nothing of ACEBench is anywhere and the download fails (one line).
    """
    names = [(c, corpora.acebench_corpus(c), corpora.acebench_corpus(c, answer=True)) for c in categories]
    found = {n: corpora.find(n) for _, data, answer in names for n in (data, answer)}
    if not any(found.values()):
        try:
            found = {n: corpora.resolve(n) for n in found}
        except corpora.CorpusError as exc:
            raise UsageError(f"no ACEBench data: {exc}") from None
    paths: dict[str, tuple[Path, Path]] = {}
    skipped: list[tuple[str, str]] = []
    inputs = {"acebench": f"{COMMIT} (data_all/data_en)"}
    for category, data, answer in names:
        lost = [n for n in (data, answer) if found[n] is None]
        if lost:
            c = corpora.corpus(lost[0])
            where = corpora.data_dirs()[0][1]
            reason = f"missing {c.file} (from {c.source}): put it in {where} or run vouch data get {c.name}"
            skipped.append((category, reason))
            inputs[f"skipped/{category}"] = reason
            continue
        data_path, answer_path = found[data], found[answer]
        assert data_path is not None and answer_path is not None
        paths[category] = (data_path, answer_path)
        for name, path in ((data, data_path), (answer, answer_path)):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            registered = corpora.corpus(name).sha256
            inputs[name] = "sha256:" + digest + ("" if digest == registered else f" (registered {registered[:12]})")
    if line is not None:
        for what, reason in skipped:
            line(f"{what}: skipped: {reason}")
    return _Files(paths, skipped, inputs)


def _json_lines(path: Path, what: str, skipped: list[tuple[str, str]]) -> list[dict[str, Any]]:
    rows = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            skipped.append((f"{what}:{number}", f"line {number} of {path.name} is not JSON ({exc.msg})"))
            continue
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            skipped.append((f"{what}:{number}", f"line {number} of {path.name} has no string id"))
            continue
        rows.append(row)
    return rows


def load_category(category: str, data: Path, answers: Path) -> tuple[list[Entry], list[tuple[str, str]]]:
    """The parsable cases of one category, in file order, and what was left out (id, reason)."""
    skipped: list[tuple[str, str]] = []
    keys = {row["id"]: row.get("ground_truth") for row in _json_lines(answers, category, skipped)}
    entries = []
    for row in _json_lines(data, category, skipped):
        case_id = row["id"]
        if case_id not in keys:
            skipped.append((case_id, f"no answer for {case_id} in {answers.parent.name}/{answers.name}"))
            continue
        functions = row.get("function")
        question = row.get("question")
        if not isinstance(functions, list) or not all(
            isinstance(f, dict) and isinstance(f.get("name"), str) for f in functions
        ):
            skipped.append((case_id, "its function list is not a list of named schemas"))
            continue
        if not isinstance(question, str):
            skipped.append((case_id, "its question is not text"))
            continue
        entry = Entry(
            category,
            case_id,
            question,
            functions,
            keys[case_id],
            str(row.get("time") or ""),
            str(row.get("profile") or ""),
        )
        problem = answer_problem(entry)
        if problem is not None:
            skipped.append((case_id, f"the answer does not parse: {problem}"))
            continue
        entries.append(entry)
    return entries, skipped


def answer_problem(entry: Entry) -> str | None:
    """Why an entry's answer cannot be read as its category's answer, if it cannot."""
    answer, special = entry.answer, entry.special
    if special == "irrelevant":
        return None if isinstance(answer, str) and answer.strip() else "expected the refusal text"
    if special in ("incomplete", "error_param"):
        if not isinstance(answer, dict) or not answer:
            return "expected {name: [items]}"
        for key, items in answer.items():
            if not isinstance(items, list) or not items or not all(isinstance(i, str) and i.strip() for i in items):
                return f"{key!r} does not map to a list of names or values"
        if special == "incomplete":
            names = {f["name"] for f in entry.functions}
            missing = [k for k in answer if k not in names]
            if missing or len(answer) != 1:
                return f"expected one function of the list, got {sorted(answer)}"
        return None
    alternatives = answer if isinstance(answer, list) else [answer]
    if not alternatives:
        return "no answer"
    schemas = {f["name"]: f for f in entry.functions}
    for alternative in alternatives:
        if not isinstance(alternative, dict) or not alternative:
            return "an answer is not {function: {param: value}}"
        for key, (name, params) in zip(alternative, expected_calls(alternative, entry.functions), strict=True):
            if name not in schemas:
                return f"{key!r} names no function of the list"
            if not isinstance(alternative[key], dict):
                return f"the arguments of {key!r} are not an object"
            problem = schema_problem(params, schemas[name].get("parameters") or {}, name)
            if problem is not None:
                return f"it contradicts its own schema: {problem}"
    return None


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "float": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "dict": (dict,),
}


def schema_problem(value: Any, schema: Any, where: str) -> str | None:
    """Where ``value`` breaks ``schema`` (type, enum, required and known keys, at any depth)."""
    if not isinstance(schema, dict):
        return None
    declared = _TYPES.get(str(schema.get("type")))
    if declared is not None:
        numeric = declared in ((int,), (int, float))
        if not isinstance(value, declared) or (numeric and isinstance(value, bool)):
            return f"{where} is {type(value).__name__}, the schema says {schema.get('type')}"
    enum = schema.get("enum")
    if isinstance(enum, list) and not isinstance(value, list | dict) and value not in enum:
        return f"{where}={value!r} is not one of its enum"
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        for key in schema.get("required") or []:
            if key not in value:
                return f"{where}.{key} is required but missing"
        for key, item in value.items():
            if key not in props:
                return f"{where}.{key} is not in the schema"
            problem = schema_problem(item, props[key], f"{where}.{key}")
            if problem is not None:
                return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{where}[{index}]")
            if problem is not None:
                return problem
    return None


# --- the build -------------------------------------------------------------------------------


def _parse_options(options: Mapping[str, Any]) -> tuple[int, list[str]]:
    unknown = sorted(k for k, v in options.items() if k not in _OPTIONS and v is not None)
    if unknown:
        raise UsageError(f"acebench: unknown option(s) {unknown}; valid options: {list(_OPTIONS)}")
    limit = options.get("limit")
    limit = DEFAULT_LIMIT if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"acebench: limit={limit!r} ({type(limit).__name__}) must be an int of 1 or more")
    chosen = options.get("categories")
    if chosen is None:
        return limit, list(CATEGORIES)
    if isinstance(chosen, str) or not all(isinstance(c, str) for c in chosen):
        raise UsageError(f"acebench: categories={chosen!r} must be a list of names; valid: {', '.join(CATEGORIES)}")
    valid = set(CATEGORIES) | set(AGENT)
    bad = [c for c in chosen if c not in valid]
    if bad or not chosen:
        raise UsageError(f"acebench: unknown category(ies) {bad or chosen!r}; valid: {', '.join(CATEGORIES)}")
    return limit, [c for c in (*CATEGORIES, *AGENT) if c in chosen]


def build(
    out_dir: Path, *, seed: int, options: Mapping[str, Any], line: Callable[[str], None] | None = None
) -> BuildOutput:
    """Build ACEBench ``tool_call`` tasks: a seeded sample spread evenly over the categories.

    Each category gets an equal share of ``limit`` (the first ones one more when it does not
    divide), drawn from a seeded shuffle; a category that runs out leaves its share to the others.
    A case that cannot give the per-task minimum of cases is skipped and reported.

    Args:
        out_dir: Where the caller will write the tasks; unused, the tasks are returned.
        seed: Seeds the sample and every task's case choices; same seed, same output.
        options: ``limit`` (int, default 400) and ``categories`` (names, default every normal and
            special category; an agent category is accepted and reported as not built).
        line: Called with one line per input left out, as it is found.

    Returns:
        The tasks, the inputs left out with reasons, and the inputs' versions for the manifest.

    Raises:
        UsageError: bad options, or no ACEBench data anywhere and no download.
    """
    del out_dir
    limit, chosen = _parse_options(options)
    files = locate([c for c in chosen if c in CATEGORIES], line=line)
    skipped = list(files.skipped)
    inputs = dict(files.inputs)
    # The agent categories are named whenever they were asked for, or nothing was narrowed.
    for agent in [c for c in AGENT if c in chosen or options.get("categories") is None]:
        skipped.append((agent, AGENT_REASON))
        inputs[f"skipped/{agent}"] = AGENT_REASON
        if line is not None:
            line(f"{agent}: skipped: {AGENT_REASON}")
    refusal = None
    if any(c in SPECIAL for c in files.paths):
        refusal = read_refusal(files.paths.get(IRRELEVANT))
        inputs["refusal"] = "read from the irrelevant answers" if refusal else "none: no irrelevant answers to read"
    rng = random.Random(seed)
    queues: dict[str, list[Entry]] = {}
    for category in [c for c in chosen if c in files.paths]:
        entries, bad = load_category(category, *files.paths[category])
        for case_id, reason in bad:
            skipped.append((case_id, reason))
            inputs[f"skipped/{case_id}"] = reason
            if line is not None:
                line(f"{case_id}: skipped: {reason}")
        queues[category] = rng.sample(entries, len(entries))
    tasks, passed_over = spread_over(queues, limit, lambda entry: build_task(entry, seed=seed, refusal=refusal))
    skipped.extend(passed_over)
    return BuildOutput(tasks, skipped, inputs)


def read_refusal(paths: tuple[Path, Path] | None) -> str | None:
    """The refusal text of the irrelevant category's answers (the most common one, whitespace
    collapsed), found by itself when that category was not asked for; None without its answers.

    The special tasks' instruction shows it, and its first clause is the phrase their reference
    verifier looks for (``acebench._verifier.refusal_phrase``): read from the data, not written
    into vouch.
    """
    if paths is None:
        found = corpora.find(corpora.acebench_corpus(IRRELEVANT, answer=True))
        if found is None:
            return None
        answers = found
    else:
        answers = paths[1]
    texts = [
        " ".join(row["ground_truth"].split())
        for row in _json_lines(answers, IRRELEVANT, [])
        if isinstance(row.get("ground_truth"), str) and row["ground_truth"].strip()
    ]
    if not texts:
        return None
    return max(sorted(set(texts)), key=texts.count)


SPECIAL_RULES = """\
If the request is clear and the functions can serve it, answer with the call(s) only. Otherwise
make no call and answer in text, in the format for the first problem that applies:

1. A value in the conversation does not fit the function's definition (its type or form):
   `The conversation gives invalid values (VALUE) for the parameters (KEY).`
2. The conversation lacks details a function requires:
   `The request lacks required parameters (KEY1, KEY2, ...) for the function (FUNCTION_NAME).`
3. No function can serve the request: {refusal}
"""

NORMAL_RULES = """\
Answer with the function call(s) the assistant should make next, and nothing else. Include every
parameter the user mentioned (in the conversation or the profile) and leave out the ones nobody
mentioned; unless a parameter's description fixes a format, use the user's own words for its
value.
"""


def instruction_text(entry: Entry, refusal: str | None = None) -> str:
    """The conversation as the solver saw it, its context, and what the answer must be."""
    parts = [f"Conversation so far (ACEBench {entry.category}):\n\n```\n{entry.question.strip()}\n```"]
    if entry.time.strip():
        parts.append(f"Date: {entry.time.strip()}")
    if entry.profile.strip():
        parts.append(f"The user's profile:\n\n```\n{entry.profile.strip()}\n```")
    said = f"a sentence saying so, as in\n   `{refusal}`" if refusal else "a sentence saying so."
    rules = SPECIAL_RULES.format(refusal=said) if entry.special else NORMAL_RULES
    parts.append(f"---\n\nThe functions you may call are described in `environment/tools.json`.\n\n{rules}")
    return "\n\n".join(parts)


def _literal(name: str, data: Any) -> str:
    lines = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)
    return f"{name} = _json.loads(\n" + "".join(f"    {line!r}\n" for line in lines) + ")\n"


def verifier_source(entry: Entry, mentioned: dict[str, list[str]], refusal: str | None = None) -> str:
    """``reference/verifier.py``: the rules module plus this task's answer and ``verify``."""
    module = Path(__file__).with_name("_verifier.py").read_text(encoding="utf-8")
    category = entry.special or "normal"
    truth = entry.answer if entry.special or isinstance(entry.answer, list) else [entry.answer]
    phrases = None
    if entry.special:
        phrases = cases.special_phrases(entry.answer if entry.special == "irrelevant" else refusal)
    # The refusal's phrase apart (``REFUSAL``): an irrelevant task's own check, which C6 mutates.
    own = phrases.pop("irrelevant", None) if phrases is not None else None
    return (
        f"{module.rstrip()}\n\n\n"
        f"# --- answer of ACEBench {entry.original_id} (commit {VERSION}) ---\n"
        "import json as _json  # noqa: E402\n\n"
        f"CATEGORY = {category!r}\n"
        f"{_literal('GROUND_TRUTH', truth)}\n"
        f"{_literal('FUNCTIONS', entry.functions)}\n"
        f"{_literal('MENTIONED', mentioned)}\n"
        f"{_literal('PHRASES', phrases)}\n"
        f"{_literal('REFUSAL', own)}\n\n"
        "def verify(candidate, env):\n"
        '    """PASS (True) when the candidate meets the answer above under ACEBench\'s rules."""\n'
        "    phrases = PHRASES if REFUSAL is None else {**PHRASES, 'irrelevant': REFUSAL}\n"
        "    return decide(candidate, CATEGORY, GROUND_TRUTH, FUNCTIONS, MENTIONED, phrases)\n"
    )


def build_task(entry: Entry, *, seed: int, refusal: str | None = None) -> TaskFiles | str:
    """One task from one entry, or the reason it cannot give the per-task minimum of cases.

    ``refusal`` is :func:`read_refusal`'s text, for the special tasks' instruction, cases and
    reference verifier.
    """
    rng = random.Random(f"acebench:{seed}:{entry.task_id}")  # per task: independent of the sample
    mentioned: dict[str, list[str]] = {}
    if entry.special:
        drafts = _distinct(cases.special_drafts(entry.special, entry.answer, entry.functions, rng, refusal))
        variants, errors, attacks = cases.pick_special(drafts[1:], rng)
    else:
        alternatives = entry.answer if isinstance(entry.answer, list) else [entry.answer]
        conversation = f"{entry.question}\n{entry.profile}"
        plans = [cases.Plan.of(a, entry.functions, conversation) for a in alternatives]
        plan = plans[0]
        for p in plans:
            for key, params in p.mentioned.items():
                mentioned[key] = sorted(set(mentioned.get(key, [])) | set(params))
        built = cases.normal_positives(plan) + cases.normal_errors(plan, rng) + cases.normal_attacks(plan, rng)
        drafts = _distinct([d for d in built if not _meets_another(d, plans[1:])])
        variants = _pick_variants(drafts, rng)
        errors, attacks = cases.pick_negatives(plan, [d for d in drafts if d.category in ("error", "attack")], rng)
    gold = drafts[0]
    if len(variants) < cases.MIN_VARIANTS:
        return f"only {1 + len(variants)} distinct positives (gold and {len(variants)} variants)"
    if len(errors) + len(attacks) < cases.MIN_NEGATIVES or len(attacks) < cases.MIN_ATTACKS:
        return f"only {len(errors) + len(attacks)} distinct negatives ({len(attacks)} attacks)"
    source = SourceInfo(benchmark="acebench", version=VERSION, original_id=entry.original_id, subset=entry.category)
    target = REFUSAL_TARGET if entry.special == "irrelevant" else MUTATION_TARGET
    return TaskFiles(
        spec=TaskSpec(id=entry.task_id, kind="tool_call", source=source, public_tools=[], mutation=[target]),
        instruction=instruction_text(entry, refusal),
        environment={"tools.json": _pretty(entry.functions)},
        reference={"verifier.py": verifier_source(entry, mentioned, refusal), "gold.json": _pretty(gold.candidate)},
        cases=to_cases([gold, *variants, *errors, *attacks], "bare-when-alone"),
    )


def _meets_another(draft: NamedDraft, others: list[cases.Plan]) -> bool:
    """Whether a negative drafted from the first answer is the gold of another accepted answer."""
    if draft.category not in ("error", "attack"):
        return False
    return any(
        canonical_candidate("tool_call", draft.candidate) == canonical_candidate("tool_call", p.candidate())
        for p in others
    )


def _pick_variants(drafts: list[NamedDraft], rng: random.Random) -> list[NamedDraft]:
    return round_robin([d for d in drafts if d.category == "variant"], cases.MAX_VARIANTS, rng)


def _distinct(drafts: list[NamedDraft]) -> list[NamedDraft]:
    """The drafts with canonical twins dropped (the first one stays; the gold is first)."""
    seen: set[str] = set()
    out = []
    for draft in drafts:
        key = canonical_candidate("tool_call", draft.candidate)
        if key not in seen:
            seen.add(key)
            out.append(draft)
    return out


def _pretty(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
