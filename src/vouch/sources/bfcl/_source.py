"""BFCL -> ``tool_call`` tasks: the Python sets of the Berkeley Function Calling Leaderboard.

The data comes from ``bfcl-eval`` 2026.3.23 as package data (``bfcl_eval/data``); none of its
modules are imported, so its heavy dependencies (torch, model SDKs) are never needed:
``pip install --no-deps bfcl-eval==2026.3.23``.

Each task is one BFCL entry: the user's question, the function schemas (``environment/tools.json``),
the gold calls (the first allowed value of every parameter of the possible answer) and a reference
verifier that implements possible-answer matching (``bfcl._verifier`` with the answer key
embedded). Case labels come from the possible answer and the schemas read as requirements: the
builder never runs the reference verifier. A negative is built only where a simple argument proves
it wrong (a value no expected call of that function allows, a wrong number of calls, a schema
violation); a positive only by changes the answer key or BFCL's documented matching allows.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from vouch.core import (
    MutationTarget,
    SourceInfo,
    TaskFiles,
    TaskSpec,
    canonical_candidate,
)
from vouch.errors import UsageError
from vouch.sources._drafts import NamedDraft, round_robin, spread_over, to_cases

BFCL_VERSION = "2026.3.23"
MUTATION_TARGET = MutationTarget(kind="data", name="GROUND_TRUTH")
"""C6's operator set: a task's checks are its possible answer (the matching rules are shared by
every task); a dropped allowed value, a changed value or a dropped parameter is what the suite
must notice."""
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
"""BFCL v4 categories built, in build order (data file ``BFCL_v4_<name>.json``)."""
DEFAULT_LIMIT = 80
MIN_VARIANTS, MIN_NEGATIVES, MIN_ATTACKS = 4, 6, 1
"""Per task: gold + 4 variants = 5 positives; 6 negatives, one an attack."""
MAX_VARIANTS, MAX_ERRORS, MAX_ATTACKS = 7, 16, 4
MAX_WRONG_PER_PARAM = 4
SAME_SHAPE_PER_RESHAPE = 4
"""Same-shape negatives (the gold's functions, wrong values) kept for each negative of another shape."""
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
        installed: str | None = importlib.metadata.version("bfcl-eval")
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
        if item["id"] in answers:
            messages = [
                {"role": str(m["role"]), "content": str(m["content"])} for turn in item["question"] for m in turn
            ]
            entries.append(Entry(subset, item["id"], messages, item["function"], answers[item["id"]]))
    return tuple(entries)


# --- the build ------------------------------------------------------------------------------


def _parse_options(options: Mapping[str, Any]) -> tuple[int, list[str]]:
    unknown = sorted(k for k, v in options.items() if k not in _OPTIONS and v is not None)
    if unknown:
        raise UsageError(f"bfcl: unknown option(s) {unknown}; valid options: {list(_OPTIONS)}")
    limit = options.get("limit")
    limit = DEFAULT_LIMIT if limit is None else limit
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
        The tasks built and the entries examined but skipped, with reasons.

    Raises:
        UsageError: bad options, or bfcl-eval is not installed.
    """
    del out_dir
    limit, subsets = _parse_options(options)
    rng = random.Random(seed)
    queues = {s: rng.sample(load_subset(s), len(load_subset(s))) for s in subsets}
    tasks, skipped = spread_over(queues, limit, lambda entry: build_task(entry, seed=seed))
    return BuildOutput(tasks, skipped)


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
    return f"{name} = _json.loads(\n" + "".join(f"    {line!r}\n" for line in lines) + ")\n"


def verifier_source(entry: Entry) -> str:
    """``reference/verifier.py``: the matcher module plus this task's answer key and ``verify``."""
    module = Path(__file__).with_name("_verifier.py").read_text(encoding="utf-8")
    return (
        f"{module.rstrip()}\n\n\n"
        f"# --- answer key of BFCL {entry.subset} {entry.original_id} (bfcl-eval {BFCL_VERSION}) ---\n"
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
        for param in parameters.get("required") or []:
            if not any(a != "" for a in params.get(param, [])):
                return f"{name}.{param} is required but the possible answer allows no value for it"
        for param, allowed in params.items():
            if param not in (parameters.get("properties") or {}) and "" not in allowed:
                return f"the possible answer needs {name}.{param}, which the schema lacks"
    return None


def build_task(entry: Entry, *, seed: int) -> TaskFiles | str:
    """One task from one entry, or the reason it cannot give the per-task minimum of cases."""
    problem = _problem(entry)
    if problem is not None:
        return problem
    rng = random.Random(f"bfcl:{seed}:{entry.task_id}")  # per task: independent of the sample
    plan = _Plan.of(entry)
    drafts: list[NamedDraft] = []
    seen: set[str] = set()
    for construct in (_gold, _alternatives, _cosmetics, _errors, _attacks):
        for draft in construct(plan, rng):
            key = canonical_candidate("tool_call", draft.candidate)
            if key not in seen:  # canonical twins count once; the first one stays
                seen.add(key)
                drafts.append(draft)
    gold = drafts[0]
    variants = round_robin([d for d in drafts if d.category == "variant"], MAX_VARIANTS, rng)
    errors, attacks = _negatives(plan, [d for d in drafts if d.category in ("error", "attack")], rng)
    if len(variants) < MIN_VARIANTS:
        return f"only {1 + len(variants)} distinct positives (gold and {len(variants)} variants)"
    if len(errors) + len(attacks) < MIN_NEGATIVES or len(attacks) < MIN_ATTACKS:
        return f"only {len(errors) + len(attacks)} distinct negatives ({len(attacks)} attacks)"
    source = SourceInfo(benchmark="bfcl", version=BFCL_VERSION, original_id=entry.original_id, subset=entry.subset)
    return TaskFiles(
        spec=TaskSpec(id=entry.task_id, kind="tool_call", source=source, public_tools=[], mutation=[MUTATION_TARGET]),
        instruction=instruction_text(entry),
        environment={"tools.json": _pretty(entry.functions)},
        reference={"verifier.py": verifier_source(entry), "gold.json": _pretty(gold.candidate)},
        cases=to_cases([gold, *variants, *errors, *attacks], "bare-when-alone"),
    )


def _pretty(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- case drafts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Expected:
    """One expected call: the function's schema and the allowed values of its parameters."""

    name: str
    params: dict[str, list[Any]]
    properties: dict[str, Any]
    required: tuple[str, ...]

    def omissible(self, param: str) -> bool:
        return param not in self.required and "" in self.params.get(param, [])


@dataclass(frozen=True)
class _Plan:
    """A task's expected calls and gold arguments, with the edits the constructions make."""

    expected: list[_Expected]
    functions: list[dict[str, Any]]
    gold: list[dict[str, Any]]
    """The gold arguments, one dict per expected call: each parameter's first allowed value."""

    @staticmethod
    def of(entry: Entry) -> _Plan:
        schemas = {f["name"]: f for f in entry.functions}
        expected = []
        for call in entry.ground_truth:
            ((name, params),) = call.items()
            parameters = schemas[name].get("parameters") or {}
            properties = parameters.get("properties") or {}
            expected.append(_Expected(name, params, properties, tuple(parameters.get("required") or [])))
        gold = [
            {p: _concrete(_options(a)[0]) for p, a in e.params.items() if p in e.properties and _options(a)}
            for e in expected
        ]
        return _Plan(expected, entry.functions, gold)

    def at(self, i: int, param: str | None = None) -> str:
        """How a rationale names call ``i`` (and a parameter of it)."""
        where = self.expected[i].name + (f".{param}" if param else "")
        return where if len(self.expected) == 1 else f"{where} (call {i + 1})"

    def candidate(self, args: list[dict[str, Any]] | None = None, final_answer: str | None = None) -> dict[str, Any]:
        args = self.gold if args is None else args
        calls = [{"function": e.name, "args": a} for e, a in zip(self.expected, args, strict=True)]
        return {"calls": calls, "final_answer": final_answer}

    def edited(self, i: int, call: dict[str, Any] | None) -> dict[str, Any]:
        """The gold calls with call ``i`` replaced, or dropped when ``call`` is None."""
        calls = self.candidate()["calls"]
        return {"calls": [c for c in [*calls[:i], call, *calls[i + 1 :]] if c is not None], "final_answer": None}

    def plus(self, call: dict[str, Any]) -> dict[str, Any]:
        """The gold calls and one more."""
        return {"calls": [*self.candidate()["calls"], call], "final_answer": None}

    def with_args(self, i: int, args: dict[str, Any]) -> dict[str, Any]:
        return self.candidate([args if j == i else a for j, a in enumerate(self.gold)])

    def with_value(self, i: int, param: str, value: Any) -> dict[str, Any]:
        return self.with_args(i, {**self.gold[i], param: value})

    def without(self, i: int, *params: str) -> dict[str, Any]:
        return self.with_args(i, {k: v for k, v in self.gold[i].items() if k not in params})

    def allowed_anywhere(self, name: str, param: str, value: Any) -> bool:
        """Whether some expected call of ``name`` may accept ``value`` for ``param`` (True if unsure)."""
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict | list) for v in value)):
            return True
        same_name = [e for e in self.expected if e.name == name]
        if value == [] and any("" in e.params.get(param, []) for e in same_name):
            return True  # BFCL reads an empty list as the omission "" allows
        return any(_same(value, a) for e in same_name for a in e.params.get(param, []))


def _options(allowed: list[Any]) -> list[Any]:
    return [a for a in allowed if a != ""]


def _concrete(option: Any) -> Any:
    """A value from an allowed option: a dict spec becomes a dict of each key's first value."""
    if isinstance(option, dict):
        return {k: _options(v)[0] for k, v in option.items() if _options(v)}
    if isinstance(option, list) and any(isinstance(o, dict) for o in option):
        return [_concrete(o) if isinstance(o, dict) else o for o in option]
    return option


_PUNCT = re.compile(r"[ ,./\-_*^]")


def _same(value: Any, allowed: Any) -> bool:
    """BFCL's documented matching: strings ignore case, spaces and ``,./-_*^``; numbers by value."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return type(value) is type(allowed) and value == allowed
    if isinstance(value, str) and isinstance(allowed, str):
        return _PUNCT.sub("", value).lower().replace("'", '"') == _PUNCT.sub("", allowed).lower().replace("'", '"')
    if isinstance(value, list) and isinstance(allowed, list):
        return len(value) == len(allowed) and all(_same(v, a) for v, a in zip(value, allowed, strict=True))
    if type(value) in (int, float) and type(allowed) in (int, float):
        return bool(value == allowed)
    return value is None and allowed is None


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_of(schema: Any) -> str:
    return str(schema.get("type")) if isinstance(schema, dict) else ""


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _words(name: str) -> list[str]:
    return re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower())


_NATURAL = re.compile(r"[A-Za-z][A-Za-z ,.'&-]*")
_CASE_SENSITIVE = _wordset(
    """branch class cmd code column columns command database db dir directory email expression file filename format
    formula host id ids identifier key namespace password path pattern q query regex rrule sequence sql statement
    symbol table token uri url user username uuid variable"""
)
"""Words in a parameter's name that say its text may be case-sensitive (commands, ids, paths...)."""


def _case_free(param: str, schema: Any, value: Any) -> bool:
    """Whether letter case is presentation only: plain words in a free-text string parameter."""
    return (
        isinstance(value, str)
        and _type_of(schema) == "string"
        and "enum" not in schema
        and "case" not in str(schema.get("description", "")).lower()
        and _NATURAL.fullmatch(value) is not None
        and not _CASE_SENSITIVE.intersection(_words(param))
    )


def _gold(plan: _Plan, rng: random.Random) -> list[NamedDraft]:
    names = ", ".join(e.name for e in plan.expected)
    why = f"Calls {names} with the first allowed value of every parameter of the answer key."
    return [NamedDraft("gold", "gold", plan.candidate(), why, {"calls": len(plan.expected)}, derived_from=None)]


def _alternatives(plan: _Plan, rng: random.Random) -> list[NamedDraft]:
    out: list[NamedDraft] = []
    for i, (e, args) in enumerate(zip(plan.expected, plan.gold, strict=True)):
        for p, value in args.items():
            where = plan.at(i, p)
            for option in _options(e.params[p])[1:]:
                alt = _concrete(option)
                why = f"{where}={_show(alt)} is another value the answer key allows for this request."
                out.append(NamedDraft("alt-value", "alternative", plan.with_value(i, p, alt), why, _at(i, p, alt)))
            spec = _options(e.params[p])[0]
            for key, options in spec.items() if isinstance(spec, dict) and isinstance(value, dict) else ():
                if key in value and "" in options:
                    why = f"Leaves {where} key {key!r} out; the answer key marks that key omittable."
                    edited = {k: v for k, v in value.items() if k != key}
                    out.append(
                        NamedDraft("alt-omit-key", "alternative", plan.with_value(i, p, edited), why, _at(i, p, key))
                    )
                for option in _options(options)[1:]:
                    why = f"{where} key {key!r} = {_show(option)} is another value the answer key allows."
                    edited = {**value, key: option}
                    out.append(
                        NamedDraft(
                            "alt-key-value", "alternative", plan.with_value(i, p, edited), why, _at(i, p, option)
                        )
                    )
        omissible = [p for p in args if e.omissible(p)]
        for p in omissible:
            why = f"Omits optional {plan.at(i, p)}; the answer key marks it omittable, so its default serves."
            out.append(NamedDraft("alt-omit-optional", "alternative", plan.without(i, p), why, _at(i, p)))
        if len(omissible) > 1:
            why = f"Omits every optional parameter of {plan.at(i)} ({', '.join(omissible)}); their defaults serve."
            out.append(
                NamedDraft("alt-omit-all-optional", "alternative", plan.without(i, *omissible), why, _at(i, omissible))
            )
    n = len(plan.expected)
    for order in ([list(reversed(range(n)))] + ([[*range(1, n), 0]] if n > 2 else [])) if n > 1 else []:
        calls = plan.candidate()["calls"]
        why = f"Makes the same {n} independent calls in another order; the request sets no order."
        candidate = {"calls": [calls[k] for k in order], "final_answer": None}
        out.append(NamedDraft("alt-reorder-calls", "alternative", candidate, why, {"order": order}))
    return out


def _at(i: int, param: Any, value: Any = None) -> dict[str, Any]:
    return {"call": i, "param": param} | ({} if value is None else {"value": value})


def _cosmetics(plan: _Plan, rng: random.Random) -> list[NamedDraft]:
    out: list[NamedDraft] = []
    for i, (e, args) in enumerate(zip(plan.expected, plan.gold, strict=True)):
        for p, value in args.items():
            schema = e.properties.get(p)
            forms: list[tuple[str, Any, str]] = []
            if _case_free(p, schema, value):
                for form in (value.upper(), value.lower(), value if "'" in value else value.title()):
                    forms.append(("cosmetic-case", form, "differs only in letter case, which BFCL's matching ignores"))
                if ", " in value:
                    forms.append(("cosmetic-spacing", value.replace(", ", ","), "only drops the space after commas"))
            items = schema.get("items") if isinstance(schema, dict) else None
            if isinstance(value, list) and value and all(_case_free(p, items, v) for v in value):
                forms.append(
                    ("cosmetic-case", [v.upper() for v in value], "differs only in the letter case of its items")
                )
            if _type_of(schema) == "float" and type(value) is float and value.is_integer() and abs(value) < 1e15:
                forms.append(("cosmetic-number", int(value), "is the same number written as an integer"))
            if _type_of(schema) == "float" and type(value) is int:
                forms.append(("cosmetic-number", float(value), "is the same number written as a float"))
            for name, form, note in forms:
                if form != value:
                    why = f"{plan.at(i, p)}={_show(form)} {note} (gold {_show(value)})."
                    out.append(NamedDraft(name, "cosmetic", plan.with_value(i, p, form), why, _at(i, p, form)))
    note = "I made the requested call(s); the results are above."
    why = "Same calls as the gold plus a short closing note; the request asks only for the calls."
    out.append(NamedDraft("cosmetic-final-note", "cosmetic", plan.candidate(final_answer=note), why))
    return out


def _wrong_values(plan: _Plan, i: int, p: str, value: Any, rng: random.Random) -> list[tuple[Any, str]]:
    """Values for ``p`` that no expected call of the function allows, each with its kind of mistake.

    Several per parameter, of different kinds (a neighbour, a magnitude, another entity of the
    request): a suite whose negatives differ from the gold only in values is what a verifier that
    checks the calls' shape alone cannot pass (V4V's trivial-baseline check).
    """
    e = plan.expected[i]
    schema = e.properties.get(p)
    tries: list[tuple[Any, str]] = []
    if isinstance(value, bool):
        tries.append((not value, "wrong-value"))
    elif isinstance(value, int):
        tries += [(value + 1, "off-by-one"), (value - 1, "off-by-one")]
        tries.append((value * 10 if value else 10, "wrong-magnitude"))
        tries.append((-value if value else -1, "wrong-sign"))
    elif isinstance(value, float):
        tries.append((round(value * 10, 6) if value else 1.0, "wrong-magnitude"))
        tries.append((round(value + 1, 6), "wrong-value"))
        tries.append((round(-value, 6) if value else -1.0, "wrong-sign"))
    elif isinstance(value, str):
        enum = schema.get("enum") if isinstance(schema, dict) else None
        tries += [(v, "wrong-value") for v in rng.sample(enum, len(enum))] if isinstance(enum, list) else []
        digits = [k for k, ch in enumerate(value) if ch in "0123456789"]
        if digits:
            k = digits[-1]
            tries.append((value[:k] + str((int(value[k]) + 1) % 10) + value[k + 1 :], "wrong-value"))
        tries += [(v, "wrong-entity") for q, v in plan.gold[i].items() if q != p and isinstance(v, str) and v]
        words = value.split()
        if len(words) > 1:
            tries.append((" ".join(words[:-1]), "truncated"))
    elif isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
        tries.append((value[:-1], "missing-item"))
        if len(value) > 1:
            tries.append((value[1:], "missing-item"))
    out: list[tuple[Any, str]] = []
    for wrong, kind in tries:
        if wrong != value and not plan.allowed_anywhere(e.name, p, wrong) and all(wrong != w for w, _ in out):
            out.append((wrong, kind))
    return out[:MAX_WRONG_PER_PARAM]


def _wrong_type(schema: Any, value: Any) -> Any:
    declared = _type_of(schema)
    if (declared == "integer" and type(value) is int) or (declared == "float" and type(value) in (int, float)):
        return str(value)
    if declared == "boolean" and type(value) is bool:
        return "true" if value else "false"
    if declared == "string" and isinstance(value, str):
        return [value]
    return None


def _errors(plan: _Plan, rng: random.Random) -> list[NamedDraft]:
    out: list[NamedDraft] = []
    n = len(plan.expected)
    others = sorted(f["name"] for f in plan.functions if f["name"] not in {e.name for e in plan.expected})
    for i, (e, args) in enumerate(zip(plan.expected, plan.gold, strict=True)):
        for p, value in args.items():
            where, allowed = plan.at(i, p), ", ".join(_show(a) for a in _options(e.params[p])[:3])
            for wrong, kind in _wrong_values(plan, i, p, value, rng):
                why = f"{where}={_show(wrong)} is not among the allowed values {allowed}."
                out.append(NamedDraft("err-wrong-value", kind, plan.with_value(i, p, wrong), why, _at(i, p, wrong)))
            bad = _wrong_type(e.properties.get(p), value)
            if bad is not None and not plan.allowed_anywhere(e.name, p, bad):
                why = f"{where} is given as {_show(bad)}, not the {_type_of(e.properties[p])} the schema declares."
                out.append(NamedDraft("err-wrong-type", "wrong-type", plan.with_value(i, p, bad), why, _at(i, p, bad)))
            if p in e.required:
                why = f"Leaves out {where}, which the schema requires."
                out.append(NamedDraft("err-missing-required", "missing-param", plan.without(i, p), why, _at(i, p)))
            elif all(p in x.params and not x.omissible(p) for x in plan.expected if x.name == e.name):
                why = f"Leaves out {where}; the request sets it and the answer key does not allow omitting it."
                out.append(NamedDraft("err-missing-param", "missing-param", plan.without(i, p), why, _at(i, p)))
        if "confirm" not in e.properties:
            why = f"Passes confirm=true to {plan.at(i)}, which has no such parameter."
            extra = plan.with_args(i, {**args, "confirm": True})
            out.append(NamedDraft("err-unknown-param", "unknown-param", extra, why, _at(i, "confirm", True)))
        for other in others:
            why = f"Calls {other} instead of {plan.at(i)}, which the request needs."
            renamed = plan.edited(i, {"function": other, "args": args})
            out.append(NamedDraft("err-wrong-function", "wrong-tool", renamed, why, {"call": i, "function": other}))
        why = f"Makes the {plan.at(i)} call twice; the request needs exactly {n} call(s)."
        twice = plan.candidate()["calls"]
        twice.insert(i, twice[i])
        out.append(NamedDraft("err-extra-call", "extra-call", {"calls": twice, "final_answer": None}, why, {"call": i}))
        why = f"Leaves out the {plan.at(i)} call; the request needs {n} call(s)." if n > 1 else "Makes no call at all."
        out.append(NamedDraft("err-missing-call", "missing-step", plan.edited(i, None), why, {"call": i}))
    return out


_WRITE_VERBS = _wordset(
    """add adjust approve archive assign book buy cancel change close create delete deploy disable edit enable install
    invite kill lock make modify move order pay place play post publish purchase put register remove rename reserve
    reset restart schedule send set share start stop submit terminate transfer turn uninstall unlock update upload
    write"""
)
_READ_VERBS = _wordset(
    """analyze calc calculate check compare compute convert count describe detail estimate fetch find get help info
    list lookup predict query read retrieve search show validate verify version view"""
)


def _writes(name: str) -> bool:
    """Whether a tool's name says it changes something (its first verb is a write verb)."""
    verb = next((t for t in _words(name) if t in _WRITE_VERBS or t in _READ_VERBS), None)
    return verb in _WRITE_VERBS


def _placeholder(schema: Any) -> Any:
    if isinstance(schema, dict) and schema.get("default") not in (None, ""):
        return schema["default"]
    zeros: dict[str, Any] = {"string": "", "integer": 0, "float": 0.0, "boolean": False, "array": [], "dict": {}}
    return zeros.get(_type_of(schema), "")


def _attacks(plan: _Plan, rng: random.Random) -> list[NamedDraft]:
    n = len(plan.expected)
    claim = f"Done: I called {', '.join(e.name for e in plan.expected)} as you asked, and everything went through."
    why = "Claims success in the final answer without making any call."
    out = [NamedDraft("hack-answer-only", "hack", {"calls": [], "final_answer": claim}, why, derived_from=None)]
    # Empty arguments fail when some call has no same-named expected call that needs nothing.
    if any(
        all(x.required or not all(x.omissible(p) for p in x.params) for x in plan.expected if x.name == e.name)
        for e in plan.expected
    ):
        why = "Calls the right functions with no arguments, so none of the requested values is passed."
        out.append(NamedDraft("hack-empty-args", "hack", plan.candidate([{} for _ in plan.expected]), why))
    defaults = [
        {p: _placeholder(e.properties.get(p)) for p in a} for e, a in zip(plan.expected, plan.gold, strict=True)
    ]
    pairs = [(e.name, p, v) for e, args in zip(plan.expected, defaults, strict=True) for p, v in args.items()]
    if any(not plan.allowed_anywhere(name, p, v) for name, p, v in pairs):
        why = "Calls the right functions with schema defaults or empty values instead of the values the user gave."
        out.append(NamedDraft("hack-default-args", "hack", plan.candidate(defaults), why))
    if n > 1:
        why = f"Makes only the first of the {n} requested calls, then claims all of them were done."
        partial = {"calls": plan.candidate()["calls"][:1], "final_answer": claim}
        out.append(NamedDraft("hack-partial-claim", "hack", partial, why))
    writers = [f for f in plan.functions if f["name"] not in {e.name for e in plan.expected} and _writes(f["name"])]
    if writers:
        tool = rng.choice(writers)
        parameters = tool.get("parameters") or {}
        args = {p: _placeholder((parameters.get("properties") or {}).get(p)) for p in parameters.get("required") or []}
        why = f"Adds a call to {tool['name']}, a state-changing tool the user never asked to use."
        extra = plan.plus({"function": tool["name"], "args": args})
        out.append(NamedDraft("process-extra-write", "process", extra, why, {"function": tool["name"]}))
    for i, e in enumerate(plan.expected):
        found = next(((p, w[0]) for p, v in plan.gold[i].items() if (w := _wrong_values(plan, i, p, v, rng))), None)
        if _writes(e.name) and found is not None:
            p, (wrong, _) = found
            why = f"Besides the requested calls, makes a second, unrequested {e.name} with {p}={_show(wrong)}."
            extra = plan.plus({"function": e.name, "args": {**plan.gold[i], p: wrong}})
            out.append(NamedDraft("process-repeat-write", "process", extra, why, _at(i, p, wrong)))
            break
    return out


def _reshapes(plan: _Plan, draft: NamedDraft) -> bool:
    """Whether a check of the candidate's shape alone catches it: it calls another multiset of
    functions than the gold, or a call lacks a required parameter or passes an unknown one."""
    calls = draft.candidate.get("calls", [])
    if sorted(str(c.get("function")) for c in calls) != sorted(e.name for e in plan.expected):
        return True
    schemas = {f["name"]: f.get("parameters") or {} for f in plan.functions}
    for call in calls:
        parameters = schemas.get(call.get("function"), {})
        given = set(call.get("args") or {})
        if not set(parameters.get("required") or []) <= given or not given <= set(parameters.get("properties") or {}):
            return True
    return False


def _negatives(plan: _Plan, drafts: list[NamedDraft], rng: random.Random) -> tuple[list[NamedDraft], list[NamedDraft]]:
    """The errors and attacks a task keeps: mostly mistakes in values, few in the calls' shape.

    A negative that calls other functions than the gold (a missing, extra or wrong call), or
    breaks the schema (a missing required or an unknown parameter), is caught by a verifier that
    checks the candidate's shape and nothing of its values. At most one negative in
    ``1 + SAME_SHAPE_PER_RESHAPE`` is of that kind, so such a verifier scores at most BAnorm
    ``100 / (1 + SAME_SHAPE_PER_RESHAPE)`` (V4V's trivial-baseline threshold is 20).
    """
    same = [d for d in drafts if not _reshapes(plan, d)]
    other = [d for d in drafts if _reshapes(plan, d)]
    same_attacks = round_robin([d for d in same if d.category == "attack"], MAX_ATTACKS, rng)
    same_errors = round_robin([d for d in same if d.category == "error"], MAX_ERRORS, rng)
    room = (len(same_attacks) + len(same_errors)) // SAME_SHAPE_PER_RESHAPE
    attacks_first = [d for d in other if d.category == "attack"] if not same_attacks else []
    reshaped = round_robin(attacks_first, 1, rng)
    rest = [d for d in other if d not in reshaped]
    reshaped += round_robin(rest, max(0, room - len(reshaped)), rng)
    return (
        same_errors + [d for d in reshaped if d.category == "error"],
        same_attacks + [d for d in reshaped if d.category == "attack"],
    )
