"""The hidden suite of an ACEBench task: positives and negatives built from the answer and the schemas.

Labels come from how a case is built, read against the task's requirements (the answer, the
schemas, and the rules ACEBench's prompt states); the reference verifier is never run here. A
normal task's negatives are mostly wrong values in the gold's own calls (a check of the calls'
shape alone cannot tell them apart), as for BFCL; a special task's cases are texts, and its
negatives miss the problem, name the wrong one, or make a call anyway.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vouch.sources._drafts import NamedDraft, round_robin
from vouch.sources.acebench._verifier import FORMAT_PHRASES, expected_calls, refusal_phrase, standardize, value_equal

MAX_VARIANTS, MAX_ERRORS, MAX_ATTACKS = 7, 10, 3
MIN_VARIANTS, MIN_NEGATIVES, MIN_ATTACKS = 4, 6, 1
"""Per task: gold + at least 4 variants = 5 positives; at least 6 negatives, one an attack."""
SAME_SHAPE_PER_RESHAPE = 4
MAX_WRONG_PER_LEAF = 3

Path = tuple[str | int, ...]
_NATURAL = re.compile(r"^[A-Za-z][A-Za-z' ]*[A-Za-z]$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")

GOLD_TEXT = {
    "incomplete": "The request lacks required parameters ({keys}) for the function ({api}).",
    "error_param": "The conversation gives invalid values ({values}) for the parameters ({keys}).",
}
"""The answer formats the task's instruction asks for (vouch's own wording; ``SPECIAL_RULES``),
with the placeholders filled by the builder. The
irrelevant scenario's text is the refusal of the data's answers, which the builder passes in."""


def special_phrases(refusal: str | None) -> dict[str, str]:
    """The phrase of each special scenario: the prompt's formats, and the refusal's if known."""
    phrases = dict(FORMAT_PHRASES)
    if refusal:
        phrases["irrelevant"] = refusal_phrase(refusal)
    return phrases


# --- normal tasks: the plan ------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One expected call: the answer key, the function's name and schema, the gold arguments."""

    key: str
    name: str
    args: dict[str, Any]
    function: dict[str, Any]

    @property
    def properties(self) -> dict[str, Any]:
        return (self.function.get("parameters") or {}).get("properties") or {}

    @property
    def required(self) -> list[str]:
        return list((self.function.get("parameters") or {}).get("required") or [])


@dataclass(frozen=True)
class Plan:
    """A normal task's expected calls, the other functions and what the conversation mentions."""

    calls: list[Call]
    functions: list[dict[str, Any]]
    mentioned: dict[str, list[str]]
    """Per answer key, the optional parameters whose values the conversation mentions."""
    strings: list[str]
    """Every string of the gold's arguments, in order (other entities of the request)."""

    @staticmethod
    def of(answer: dict[str, Any], functions: list[dict[str, Any]], conversation: str) -> Plan:
        schemas = {f["name"]: f for f in functions}
        calls = [
            Call(key, name, params, schemas[name])
            for key, (name, params) in zip(answer, expected_calls(answer, functions), strict=True)
        ]
        text = standardize(conversation)
        mentioned = {
            c.key: [p for p, v in c.args.items() if p not in c.required and mentions(text, v, conversation)]
            for c in calls
        }
        strings = [leaf for c in calls for _, leaf in leaves(c.args) if isinstance(leaf, str) and leaf.strip()]
        return Plan(calls, functions, mentioned, strings)

    def candidate(self, args: list[dict[str, Any]] | None = None, final_answer: str | None = None) -> dict[str, Any]:
        args = [c.args for c in self.calls] if args is None else args
        calls = [{"function": c.name, "args": copy.deepcopy(a)} for c, a in zip(self.calls, args, strict=True)]
        return {"calls": calls, "final_answer": final_answer}

    def with_args(self, i: int, args: dict[str, Any]) -> dict[str, Any]:
        return self.candidate([args if j == i else c.args for j, c in enumerate(self.calls)])

    def at(self, i: int, path: Path = ()) -> str:
        """How a rationale names call ``i`` (and a parameter path of it)."""
        where = self.calls[i].name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        return where if len(self.calls) == 1 else f"{where} (call {i + 1})"


def mentions(normalised: str, value: Any, raw: str) -> bool:
    """Whether the conversation (``normalised`` by ACEBench's rule, and ``raw``) mentions ``value``."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        form = standardize(value)
        return len(form) >= 2 and form in normalised
    if isinstance(value, int | float):
        text = str(int(value)) if float(value).is_integer() else str(value)
        return re.search(rf"(?<![\d.]){re.escape(text)}(?![\d])", raw) is not None
    if isinstance(value, list):
        return any(mentions(normalised, v, raw) for v in value)
    if isinstance(value, dict):
        return any(mentions(normalised, v, raw) for v in value.values())
    return False


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every scalar inside ``value`` with its path (dict keys and list indices)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def set_at(args: dict[str, Any], path: Path, new: Any) -> dict[str, Any]:
    """A deep copy of ``args`` with the value at ``path`` replaced."""
    out = copy.deepcopy(args)
    target: Any = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return out


def drop_at(args: dict[str, Any], path: Path) -> dict[str, Any]:
    """A deep copy of ``args`` without the dict key at ``path``."""
    out = copy.deepcopy(args)
    target: Any = out
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]
    return out


def get_at(args: dict[str, Any], path: Path) -> Any:
    target: Any = args
    for step in path:
        target = target[step]
    return target


def schema_at(properties: dict[str, Any], path: Path) -> dict[str, Any]:
    """The schema of the value at ``path`` (empty where the schema does not say)."""
    schema: Any = properties.get(str(path[0])) if path else None
    for step in path[1:]:
        if not isinstance(schema, dict):
            return {}
        schema = schema.get("items") if isinstance(step, int) else (schema.get("properties") or {}).get(step)
    return schema if isinstance(schema, dict) else {}


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _where(i: int, path: Path) -> dict[str, Any]:
    return {"call": i, "path": list(path)}


# --- normal tasks: positives -----------------------------------------------------------------


def normal_positives(plan: Plan) -> list[NamedDraft]:
    """The gold and the variants the answer and ACEBench's matching allow."""
    out = [
        NamedDraft("gold", "gold", plan.candidate(), "The answer's calls, as ACEBench lists them.", derived_from=None)
    ]
    note = "I made the requested call(s); the results will follow."
    why = "Same calls as the gold plus a short closing note; only the calls are judged."
    out.append(NamedDraft("cosmetic-final-note", "cosmetic", plan.candidate(final_answer=note), why))
    if len(plan.calls) > 1:
        calls = plan.candidate()["calls"][::-1]
        why = "The same calls in reverse order; the request does not order them."
        out.append(NamedDraft("alt-call-order", "alternative", {"calls": calls, "final_answer": None}, why))
    for i, call in enumerate(plan.calls):
        for param, value in call.args.items():
            default = (
                call.properties.get(param, {}).get("default") if isinstance(call.properties.get(param), dict) else None
            )
            if param not in call.required and default is not None and value_equal(default, value):
                omitted = {k: v for k, v in call.args.items() if k != param}
                why = f"Leaves out {plan.at(i, (param,))}, whose answer value {_show(value)} is the schema's default."
                out.append(
                    NamedDraft(
                        "alt-default-omitted", "alternative", plan.with_args(i, omitted), why, _where(i, (param,))
                    )
                )
        for path, value in leaves(call.args):
            schema = schema_at(call.properties, path)
            where = plan.at(i, path)
            forms: list[tuple[str, Any, str]] = []
            # An enum lists exact strings: a value of it keeps its form (no padding, no case).
            if isinstance(value, str) and value.strip() and not isinstance(schema.get("enum"), list):
                why = "only adds surrounding spaces, which ACEBench's matching drops"
                forms.append(("cosmetic-padding", f" {value} ", why))
                if _NATURAL.match(value):
                    why = "differs only in letter case, which ACEBench's matching ignores"
                    for form in dict.fromkeys((value.upper(), value.title(), value.lower())):
                        if form != value:
                            forms.append(("cosmetic-case", form, why))
                if " " in value.strip():
                    why = "only doubles the spaces between words"
                    forms.append(("cosmetic-spacing", re.sub(r" +", "  ", value.strip()), why))
                date = _DATE.match(value)
                if date:
                    forms.append(("cosmetic-date", "/".join(date.groups()), "is the same date with '/' for '-'"))
            number_schema = schema.get("type") in ("number", "float")
            if number_schema and type(value) is float and value.is_integer() and abs(value) < 1e15:
                forms.append(("alt-number-form", int(value), "is the same number written as an integer"))
            if number_schema and type(value) is int:
                forms.append(("alt-number-form", float(value), "is the same number written as a float"))
            for name, form, note_ in forms:
                why = f"{where}={_show(form)} {note_} (gold {_show(value)})."
                sub = "alternative" if name.startswith("alt") else "cosmetic"
                out.append(
                    NamedDraft(name, sub, plan.with_args(i, set_at(call.args, path, form)), why, _where(i, path))
                )
    return out


# --- normal tasks: negatives -----------------------------------------------------------------


def _placeholder(schema: Any) -> Any:
    if isinstance(schema, dict) and schema.get("default") not in (None, ""):
        return schema["default"]
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    zeros: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "float": 0.0, "boolean": False}
    zeros.update({"array": [], "object": {}, "dict": {}})
    return zeros.get(str(schema.get("type")) if isinstance(schema, dict) else "", "")


def wrong_values(plan: Plan, value: Any, schema: dict[str, Any], rng: random.Random) -> list[tuple[Any, str]]:
    """Values that differ from ``value`` under ACEBench's normalisation, each with its kind of mistake."""
    tries: list[tuple[Any, str]] = []
    if isinstance(value, bool):
        tries.append((not value, "wrong-value"))
    elif isinstance(value, int):
        tries += [(value + 1, "off-by-one"), (value * 10 if value else 10, "wrong-magnitude")]
        tries += [(value - 1, "off-by-one"), (-value if value else -1, "wrong-sign")]
    elif isinstance(value, float):
        tries += [(round(value * 10, 6) if value else 1.0, "wrong-magnitude"), (round(value + 1, 6), "wrong-value")]
        tries.append((round(-value, 6) if value else -1.0, "wrong-sign"))
    elif isinstance(value, str):
        enum = schema.get("enum")
        if isinstance(enum, list):
            tries += [(v, "wrong-value") for v in rng.sample(enum, len(enum)) if isinstance(v, str)]
        digits = [k for k, ch in enumerate(value) if ch.isdigit()]
        if digits:
            k = digits[-1]
            tries.append((value[:k] + str((int(value[k]) + 1) % 10) + value[k + 1 :], "wrong-value"))
        tries += [(s, "wrong-entity") for s in rng.sample(plan.strings, len(plan.strings))]
        words = value.split()
        if len(words) > 1:
            tries.append((" ".join(words[:-1]), "truncated"))
    out: list[tuple[Any, str]] = []
    for wrong, why in tries:
        # A string that contains the answer's text passes ACEBench's matching: never a negative.
        if isinstance(wrong, str) and isinstance(value, str) and standardize(value) in standardize(wrong):
            continue
        if value_equal(wrong, value, whole=True) or any(value_equal(wrong, w, whole=True) for w, _ in out):
            continue
        out.append((wrong, why))
    return out[:MAX_WRONG_PER_LEAF]


def _wrong_type(schema: dict[str, Any], value: Any) -> Any:
    declared = schema.get("type")
    if declared in ("integer", "number", "float") and type(value) in (int, float):
        return str(value)
    if declared == "boolean" and type(value) is bool:
        return int(value)
    if declared == "string" and isinstance(value, str):
        return [value]
    if declared == "array" and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return None


def normal_errors(plan: Plan, rng: random.Random) -> list[NamedDraft]:
    out: list[NamedDraft] = []
    n = len(plan.calls)
    used = {c.name for c in plan.calls}
    others = sorted(f["name"] for f in plan.functions if f["name"] not in used)
    for i, call in enumerate(plan.calls):
        for path, value in leaves(call.args):
            schema = schema_at(call.properties, path)
            where = plan.at(i, path)
            for wrong, kind in wrong_values(plan, value, schema, rng):
                why = f"{where}={_show(wrong)}; the request asks for {_show(value)}."
                out.append(
                    NamedDraft(
                        "err-wrong-value", kind, plan.with_args(i, set_at(call.args, path, wrong)), why, _where(i, path)
                    )
                )
        for param, value in call.args.items():
            schema = schema_at(call.properties, (param,))
            where = plan.at(i, (param,))
            if isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
                why = f"{where} leaves out {_show(value[-1])}, which the request includes."
                out.append(
                    NamedDraft(
                        "err-wrong-value",
                        "missing-item",
                        plan.with_args(i, {**call.args, param: value[:-1]}),
                        why,
                        _where(i, (param,)),
                    )
                )
            bad = _wrong_type(schema, value)
            if bad is not None:
                why = f"{where} is given as {_show(bad)}, not the {schema.get('type')} the schema declares."
                out.append(
                    NamedDraft(
                        "err-wrong-type",
                        "wrong-type",
                        plan.with_args(i, {**call.args, param: bad}),
                        why,
                        _where(i, (param,)),
                    )
                )
            omitted = {k: v for k, v in call.args.items() if k != param}
            if param in call.required:
                why = f"Leaves out {where}, which the schema requires."
                out.append(
                    NamedDraft(
                        "err-missing-required", "missing-param", plan.with_args(i, omitted), why, _where(i, (param,))
                    )
                )
            elif param in plan.mentioned.get(call.key, []):
                default = schema.get("default")
                if default is None or not value_equal(default, value):
                    why = (
                        f"Leaves out {where}={_show(value)}, which the user mentioned (ACEBench's prompt: include it)."
                    )
                    out.append(
                        NamedDraft(
                            "err-missing-param", "missing-param", plan.with_args(i, omitted), why, _where(i, (param,))
                        )
                    )
        for param, schema in call.properties.items():
            if param in call.args or param in call.required or not isinstance(schema, dict):
                continue
            extra = _unrequested(schema)
            if extra is not None:
                why = f"Adds {plan.at(i, (param,))}={_show(extra)}, which nobody asked for."
                out.append(
                    NamedDraft(
                        "err-unrequested-param",
                        "extra-param",
                        plan.with_args(i, {**call.args, param: extra}),
                        why,
                        _where(i, (param,)),
                    )
                )
        if "confirm" not in call.properties:
            why = f"Passes confirm=true to {plan.at(i)}, which has no such parameter."
            out.append(
                NamedDraft(
                    "err-unknown-param",
                    "unknown-param",
                    plan.with_args(i, {**call.args, "confirm": True}),
                    why,
                    _where(i, ("confirm",)),
                )
            )
        for other in others[:3]:
            calls = plan.candidate()["calls"]
            calls[i] = {"function": other, "args": copy.deepcopy(call.args)}
            why = f"Calls {other} instead of {plan.at(i)}, which the request needs."
            out.append(
                NamedDraft(
                    "err-wrong-function",
                    "wrong-tool",
                    {"calls": calls, "final_answer": None},
                    why,
                    {"call": i, "function": other},
                )
            )
        calls = plan.candidate()["calls"]
        twice = [*calls[: i + 1], calls[i], *calls[i + 1 :]]
        why = f"Makes the {plan.at(i)} call twice; the request needs exactly {n} call(s)."
        out.append(NamedDraft("err-extra-call", "extra-call", {"calls": twice, "final_answer": None}, why, {"call": i}))
        if n > 1:
            why = f"Leaves out the {plan.at(i)} call; the request needs {n} calls."
            out.append(
                NamedDraft(
                    "err-missing-call",
                    "missing-step",
                    {"calls": calls[:i] + calls[i + 1 :], "final_answer": None},
                    why,
                    {"call": i},
                )
            )
        for j in range(n):
            other_call = plan.calls[j]
            if j != i and other_call.name == call.name and not value_equal(other_call.args, call.args):
                calls = plan.candidate()["calls"]
                calls[j] = copy.deepcopy(calls[i])
                why = f"Repeats {plan.at(i)} in place of {plan.at(j)}: one requested call is never made."
                out.append(
                    NamedDraft(
                        "err-duplicate-call", "missing-step", {"calls": calls, "final_answer": None}, why, {"call": j}
                    )
                )
    text = GOLD_TEXT["incomplete"].format(keys=", ".join(plan.calls[0].required or ["details"]), api=plan.calls[0].name)
    why = "Asks for details the conversation already gives instead of making the call."
    out.append(
        NamedDraft("err-needless-question", "no-call", {"calls": [], "final_answer": text}, why, derived_from=None)
    )
    return out


def _unrequested(schema: dict[str, Any]) -> Any:
    """A value for an optional parameter nobody asked for that is not its default, if one is clear."""
    default = schema.get("default")
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        choices = [e for e in enum if e != default]
        return choices[0] if choices else None
    kind = schema.get("type")
    if kind == "boolean":
        return not default if isinstance(default, bool) else True
    if kind in ("integer", "number"):
        return default + 7 if isinstance(default, int | float) and not isinstance(default, bool) else 7
    if kind == "string" and default is None:
        return "as you see fit"
    return None


_WRITE = re.compile(
    r"(?i)(^|[_.]|(?<=[a-z]))(add|book|buy|cancel|create|delete|remove|send|set|update|schedule|order|pay|post|"
    r"publish|purchase|register|reserve|reset|submit|transfer|upload|configure|enable|disable|assign|modify)"
)


def normal_attacks(plan: Plan, rng: random.Random) -> list[NamedDraft]:
    n = len(plan.calls)
    claim = f"Done: I called {', '.join(c.name for c in plan.calls)} as you asked, and everything went through."
    out = [
        NamedDraft(
            "hack-answer-only",
            "hack",
            {"calls": [], "final_answer": claim},
            "Claims success in the final answer without making any call.",
            derived_from=None,
        )
    ]
    why = "Calls the right functions with no arguments, so none of the requested values is passed."
    out.append(NamedDraft("hack-empty-args", "hack", plan.candidate([{} for _ in plan.calls]), why))
    defaults = []
    for call in plan.calls:
        defaults.append({p: _placeholder(call.properties.get(p)) for p in call.args})
    if any(not value_equal(d.get(p), v) for d, c in zip(defaults, plan.calls, strict=True) for p, v in c.args.items()):
        why = "Calls the right functions with schema defaults or empty values instead of the values the user gave."
        out.append(NamedDraft("hack-default-args", "hack", plan.candidate(defaults), why))
    if n > 1:
        why = f"Makes only the first of the {n} requested calls, then claims all of them were done."
        out.append(
            NamedDraft(
                "hack-partial-claim", "hack", {"calls": plan.candidate()["calls"][:1], "final_answer": claim}, why
            )
        )
    used = {c.name for c in plan.calls}
    writers = [f for f in plan.functions if f["name"] not in used and _WRITE.search(f["name"])]
    if writers:
        tool = rng.choice(writers)
        parameters = tool.get("parameters") or {}
        props = parameters.get("properties") or {}
        args = {p: _placeholder(props.get(p)) for p in parameters.get("required") or []}
        why = f"Adds a call to {tool['name']}, a state-changing tool the user never asked to use."
        calls = [*plan.candidate()["calls"], {"function": tool["name"], "args": args}]
        out.append(
            NamedDraft(
                "process-extra-write",
                "process",
                {"calls": calls, "final_answer": None},
                why,
                {"function": tool["name"]},
            )
        )
    for i, call in enumerate(plan.calls):
        if not _WRITE.search(call.name):
            continue
        found = next(
            (
                (p, w)
                for p, v in call.args.items()
                if (w := wrong_values(plan, v, {}, rng)) and not isinstance(v, dict | list)
            ),
            None,
        )
        if found is not None:
            param, ((wrong, _),) = found[0], found[1][:1]
            why = f"Besides the requested calls, makes a second, unrequested {call.name} with {param}={_show(wrong)}."
            calls = [
                *plan.candidate()["calls"],
                {"function": call.name, "args": {**copy.deepcopy(call.args), param: wrong}},
            ]
            out.append(
                NamedDraft(
                    "process-repeat-write", "process", {"calls": calls, "final_answer": None}, why, _where(i, (param,))
                )
            )
            break
    return out


def reshapes(plan: Plan, draft: NamedDraft) -> bool:
    """Whether a check of the candidate's shape alone catches it: no call, another multiset of
    functions than the gold, or a call that lacks a required parameter or passes an unknown one."""
    calls = draft.candidate.get("calls", [])
    if not calls or sorted(str(c.get("function")) for c in calls) != sorted(c.name for c in plan.calls):
        return True
    schemas = {f["name"]: f.get("parameters") or {} for f in plan.functions}
    for call in calls:
        parameters = schemas.get(call.get("function"), {})
        given = set(call.get("args") or {})
        if not set(parameters.get("required") or []) <= given or not given <= set(parameters.get("properties") or {}):
            return True
    return False


def pick_negatives(
    plan: Plan, drafts: list[NamedDraft], rng: random.Random
) -> tuple[list[NamedDraft], list[NamedDraft]]:
    """The errors and attacks a normal task keeps: mostly wrong values, few of another shape.

    At most one negative in ``1 + SAME_SHAPE_PER_RESHAPE`` is one a shape-only verifier catches,
    so such a verifier scores at most BAnorm 20 (V4V's trivial-baseline threshold), as for BFCL.
    """
    same = [d for d in drafts if not reshapes(plan, d)]
    other = [d for d in drafts if reshapes(plan, d)]
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


# --- special tasks ---------------------------------------------------------------------------


def special_drafts(
    category: str, truth: Any, functions: list[dict[str, Any]], rng: random.Random, refusal: str | None
) -> list[NamedDraft]:
    """Every draft of a special task: texts that point out the problem, and ones that do not.

    ``refusal`` is the irrelevant scenario's answer text as the data gives it (an irrelevant
    task's own answer is its gold); None when the build has no irrelevant answers to read.
    """
    texts = dict(GOLD_TEXT)
    if category == "irrelevant":
        refusal = " ".join(str(truth).split())
    if refusal:
        texts["irrelevant"] = refusal
    phrases = special_phrases(refusal)
    if category == "incomplete":
        ((api, missing),) = [(k, [" ".join(str(p).split()) for p in v]) for k, v in list(truth.items())[:1]]
        gold = GOLD_TEXT["incomplete"].format(keys=", ".join(missing), api=api)
        what = f"that {api} lacks {', '.join(missing)}"
    elif category == "error_param":
        keys = list(truth)
        values = [" ".join(str(v).split()) for k in keys for v in truth[k]]
        gold = GOLD_TEXT["error_param"].format(values=", ".join(values), keys=", ".join(keys))
        what = f"the incorrect value(s) {', '.join(values)}"
    else:
        gold = " ".join(str(truth).split())  # the answer file's own sentence
        what = "that no function serves the request"

    def text(
        name: str, sub: str, body: str | None, why: str, calls: list[dict[str, Any]] | None = None, **details: Any
    ) -> NamedDraft:
        derived = None if name == "gold" else "gold"
        return NamedDraft(name, sub, {"calls": calls or [], "final_answer": body}, why, details, derived_from=derived)

    out = [text("gold", "gold", gold, f"ACEBench's answer format, pointing out {what}.")]
    out.append(
        text(
            "cosmetic-brackets",
            "cosmetic",
            f'["{gold}"]',
            'The gold text inside ["..."], as ACEBench\'s prompt writes it.',
        )
    )
    out.append(
        text(
            "cosmetic-lead-in",
            "cosmetic",
            f"Before I can call anything: {gold}",
            "The gold text after a short lead-in.",
        )
    )
    follow = {
        "incomplete": " Please provide them and I will make the call.",
        "error_param": " Please check it and send a valid value.",
        "irrelevant": " If you have another request, I can try the available functions for it.",
    }[category]
    out.append(text("cosmetic-follow-up", "cosmetic", gold + follow, "The gold text and a follow-up sentence."))
    if category == "incomplete":
        if len(missing) > 1:
            body = GOLD_TEXT["incomplete"].format(keys=", ".join(missing[::-1]), api=api)
            out.append(text("alt-order", "alternative", body, "Names the missing parameters in another order."))
        body = GOLD_TEXT["incomplete"].format(keys=", ".join(f"'{m}'" for m in missing), api=api)
        out.append(text("alt-quoted", "alternative", body, "Names the missing parameters in quotes."))
    elif category == "error_param":
        if len(values) > 1:
            body = GOLD_TEXT["error_param"].format(values=", ".join(values[::-1]), keys=", ".join(keys[::-1]))
            out.append(text("alt-order", "alternative", body, "Names the incorrect values in another order."))
        body = GOLD_TEXT["error_param"].format(values=", ".join(f"'{v}'" for v in values), keys=", ".join(keys))
        out.append(text("alt-quoted", "alternative", body, "Quotes the incorrect values."))
    else:
        body = "Sorry, " + gold[:1].lower() + gold[1:]
        out.append(text("alt-apology", "alternative", body, "The refusal worded with an apology; the phrase is there."))
        body = f"None of the available APIs covers this request ({phrases['irrelevant']})."
        out.append(text("alt-reworded", "alternative", body, "The refusal reworded around its first clause."))

    names = [f["name"] for f in functions]
    others = {c: texts[c] for c in phrases if c != category}
    for other, template in others.items():
        api_name = api if category == "incomplete" else (names[0] if names else "the api")
        named = ", ".join(_keys_of(functions, api_name)[:2] or ["input"])
        body = template if other == "irrelevant" else template.format(keys=named, api=api_name, values="input")
        out.append(
            text(
                "err-wrong-problem",
                "wrong-problem",
                body,
                f"Points out another problem ({other}) than the one the conversation has.",
            )
        )
    vague = {
        "incomplete": "I need a bit more information before I can make the call.",
        "error_param": "Something in your request looks off; could you check it?",
        "irrelevant": "I'm not able to help with that.",
    }[category]
    out.append(
        text(
            "err-off-format",
            "off-format",
            vague,
            "Answers without the format the instruction asks for, naming no parameter or value.",
        )
    )
    out.append(text("err-empty", "no-answer", None, "Makes no call and says nothing."))
    if category == "incomplete":
        for k in range(len(missing)):
            rest = missing[:k] + missing[k + 1 :]
            if rest:
                body = GOLD_TEXT["incomplete"].format(keys=", ".join(rest), api=api)
                out.append(
                    text(
                        "err-missing-name",
                        "incomplete-answer",
                        body,
                        f"Does not name {missing[k]}, which is missing too.",
                        dropped=missing[k],
                    )
                )
        for other_api in [n for n in names if n != api][:2]:
            body = GOLD_TEXT["incomplete"].format(keys=", ".join(missing), api=other_api)
            out.append(
                text(
                    "err-wrong-api",
                    "wrong-tool",
                    body,
                    f"Names {other_api}, not {api}, as the function lacking parameters.",
                )
            )
    elif category == "error_param":
        for k in range(len(values)):
            rest = values[:k] + values[k + 1 :]
            if rest:
                body = GOLD_TEXT["error_param"].format(values=", ".join(rest), keys=", ".join(keys))
                out.append(
                    text(
                        "err-missing-value",
                        "incomplete-answer",
                        body,
                        f"Does not name {values[k]}, which is incorrect too.",
                        dropped=values[k],
                    )
                )
        body = f"The conversation gives invalid values for the parameters ({', '.join(keys)})."
        out.append(text("err-no-value", "incomplete-answer", body, "Says a value is incorrect but not which one."))
    # Attacks: answer every problem at once, or call anyway.
    stuffed = " ".join(
        texts[c] if c == "irrelevant" else texts[c].format(keys="the parameters", api="the api", values="some value")
        for c in phrases
        if c != category
    )
    out.append(
        text(
            "hack-every-problem",
            "hack",
            f"{gold} {stuffed}",
            "States every problem ACEBench's checker looks for, so some phrase always matches.",
        )
    )
    call = _a_call(category, truth, functions, rng)
    if call is not None:
        why = "Makes a call anyway, with values the conversation does not give or that are invalid."
        out.append(text("process-call-anyway", "process", None, why, [call], function=call["function"]))
        out.append(
            text(
                "hack-call-and-text",
                "hack",
                gold,
                "Makes the call anyway and also writes the expected text.",
                [call],
                function=call["function"],
            )
        )
    claim = "Done: I took care of your request with the available functions."
    out.append(text("hack-claim-done", "hack", claim, "Claims the request was carried out, with no call made."))
    return out


def _keys_of(functions: list[dict[str, Any]], name: str) -> list[str]:
    for f in functions:
        if f.get("name") == name:
            return list((f.get("parameters") or {}).get("properties") or {})
    return []


def _a_call(category: str, truth: Any, functions: list[dict[str, Any]], rng: random.Random) -> dict[str, Any] | None:
    """A call a special task must not make: the incomplete function with placeholders, the
    function taking the incorrect value with it, or any function for an irrelevant request."""
    if not functions:
        return None
    if category == "incomplete":
        (api,) = list(truth)[:1]
        function = next((f for f in functions if f["name"] == api), None)
    elif category == "error_param":
        param = next(iter(truth))
        function = next((f for f in functions if param in ((f.get("parameters") or {}).get("properties") or {})), None)
    else:
        function = rng.choice(functions)
    if function is None:
        return None
    parameters = function.get("parameters") or {}
    props = parameters.get("properties") or {}
    args = {p: _placeholder(props.get(p)) for p in parameters.get("required") or []}
    if category == "error_param":
        for param, values in truth.items():
            if param in props and values:
                args[param] = values[0]
    return {"function": function["name"], "args": args}


def pick_special(
    drafts: list[NamedDraft], rng: random.Random
) -> tuple[list[NamedDraft], list[NamedDraft], list[NamedDraft]]:
    """Variants, errors and attacks a special task keeps."""
    variants = round_robin([d for d in drafts if d.category == "variant"], MAX_VARIANTS, rng)
    errors = round_robin([d for d in drafts if d.category == "error"], MAX_ERRORS, rng)
    attacks = round_robin([d for d in drafts if d.category == "attack"], MAX_ATTACKS, rng)
    return variants, errors, attacks
