"""Reference verifier of vouch's ACEBench tool-call tasks: ACEBench's checking rules, stdlib only.

The ACEBench builder copies this module's text into every task's ``reference/verifier.py`` and
appends the task's answer (``GROUND_TRUTH``, ``CATEGORY``, ``FUNCTIONS``, ``MENTIONED``, and for a
special task ``PHRASES``) as JSON literals, plus the ``verify(candidate, env)`` of the verifier
contract. So this file must stay
standalone: standard library only, no vouch import.

The rules are ACEBench's checker (``model_eval/checker.py`` and ``eval_main.py`` at commit
the pinned commit) read as a specification and written anew, together with the rules its prompt states.

Normal categories (the answer is a set of calls, ``{name: {param: value}}``; when the answer
calls a function more than once, its keys carry a suffix, ``name_1``, ``name_2``):

* The candidate makes exactly as many calls as the answer lists; calls pair with expected calls
  one to one, in any order.
* A call matches an expected call when it names the same function, passes every parameter the
  schema requires, passes no parameter that the schema or the answer lacks, gives each parameter
  a value of the schema's type (an integer where a number is declared; ``"true"``/``"false"`` for
  a boolean; the answer's own type where the answer departs from the schema), and a value equal
  to the answer's under ACEBench's normalisation.
* Equality: strings ignore whitespace, letter case and ``,./-_*^``, and treat ``'`` as ``"``; a
  string passes too when the answer's words appear in it in order and side by side (ACEBench
  accepts a string that contains the answer's text); strings inside lists compare whole. Numbers
  compare by value, booleans and ``None`` exactly, lists element-wise in order, dicts key by key
  with the same keys.
* A parameter of the answer may be left out when the schema does not require it, unless the
  conversation mentions its value (``MENTIONED``, computed by the builder) and the value is not
  the schema's default: ACEBench's prompt asks for every parameter the user mentioned.

ACEBench's containment is on the normalised text, so ``"Indirect"`` contains ``"Direct"``; here the
answer's words must appear whole (V4V's C1 found it: a case that repeats the ``Indirect`` call in
place of the ``Direct`` one passed). Where this differs from ACEBench's checker it is also
stricter in three ways and more lenient in one:
ACEBench never compares integers, numbers or booleans with the answer (any value of the right
type passes), accepts leaving out a mentioned optional parameter, and pairs parallel calls without
a one-to-one matching (two identical calls can both satisfy two different expected calls). It
compares lists and nested dicts by their ``str()``, with all blanks stripped from the model's
side alone, so a nested list of strings with spaces never matches:
here they compare value by value.

Special categories (the answer is the problem the assistant must point out, with no call):
``incomplete`` (the text says ``lacks required parameters``, names the function and every
missing parameter), ``error_param`` (``gives invalid values`` and every incorrect value) and
``irrelevant`` (the refusal). The first two phrases are the formats the task's instruction asks
for, in vouch's own words (ACEBench's prompt has formats of its own, which vouch does not copy); the
refusal's phrase is the first clause of the refusal text in the irrelevant category's answers,
which the builder reads from the data and passes in ``PHRASES``. The phrases are matched
ignoring letter case and runs of whitespace; names and values exactly. A text that also carries
another scenario's phrase (answering every scenario at once) fails, as does any call.
"""

from __future__ import annotations

import re
from typing import Any

_IGNORED = re.compile(r"[\s,./\-_*^]")
_SUFFIX = re.compile(r"_\d+$")
_WORD = re.compile(r"[^\W_]+")
FORMAT_PHRASES: dict[str, str] = {
    "incomplete": "lacks required parameters",
    "error_param": "gives invalid values",
}
"""The phrase the answer of these special categories must carry (the instruction's formats), lower case.
The irrelevant category's phrase comes from the data: :func:`refusal_phrase`."""
_CLAUSE_END = re.compile(r"[,.;:!?]")


def refusal_phrase(refusal: str) -> str:
    """The phrase a refusal must carry: the first clause of the answer's refusal text, lower case.

    >>> refusal_phrase("Owing to  the tools at hand, this cannot be done.")
    'owing to the tools at hand'
    """
    flat = " ".join(refusal.split()).lower()
    return _CLAUSE_END.split(flat, 1)[0].strip() or flat


_TYPES: dict[str, tuple[str, ...]] = {
    "string": ("str",),
    "integer": ("int",),
    "number": ("int", "float"),
    "float": ("int", "float"),
    "boolean": ("bool",),
    "array": ("list",),
    "tuple": ("list",),
    "object": ("dict",),
    "dict": ("dict",),
}


def standardize(text: str) -> str:
    """ACEBench's string form: no whitespace or ``,./-_*^``, lower case, ``'`` as ``"``."""
    return _IGNORED.sub("", text).lower().replace("'", '"')


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _contains_words(value: str, expected: str) -> bool:
    """Whether the answer's words appear in ``value`` in order and side by side."""
    got, want = _words(value), _words(expected)
    return any(got[i : i + len(want)] == want for i in range(len(got) - len(want) + 1))


def kind(value: Any) -> str:
    """The JSON kind of ``value``: bool, int, float, str, list, dict, null or other."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "other"


def _as_bool(value: Any) -> Any:
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def value_equal(value: Any, expected: Any, *, whole: bool = False) -> bool:
    """Whether ``value`` equals the answer's ``expected`` under ACEBench's normalisation.

    Args:
        value: What the candidate passed.
        expected: The answer's value.
        whole: Compare strings whole (inside lists); else the expected text may be contained.
    """
    expected_kind, value_kind = kind(expected), kind(value)
    if expected_kind == "str":
        if value_kind != "str":
            return False
        if standardize(value) == standardize(expected):
            return True
        return not whole and _contains_words(value, expected)
    if expected_kind == "bool":
        value = _as_bool(value)
        return kind(value) == "bool" and value == expected
    if expected_kind in ("int", "float"):
        return value_kind in ("int", "float") and value == expected
    if expected_kind == "null":
        return value is None
    if expected_kind == "list":
        return (
            value_kind == "list"
            and len(value) == len(expected)
            and all(value_equal(v, e, whole=True) for v, e in zip(value, expected, strict=True))
        )
    if expected_kind == "dict":
        return (
            value_kind == "dict"
            and set(value) == set(expected)
            and all(value_equal(value[key], expected[key]) for key in expected)
        )
    return False


def type_fits(value: Any, schema: Any, expected: Any) -> bool:
    """Whether ``value`` has the schema's declared type, or the answer's own type."""
    declared = _TYPES.get(str(schema.get("type"))) if isinstance(schema, dict) else None
    value_kind = kind(_as_bool(value)) if declared == ("bool",) else kind(value)
    if declared is None or value_kind in declared:
        return True
    return value_kind == kind(expected)


def expected_calls(answer: dict[str, Any], functions: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The answer's calls as (function, params), ``name_1``/``name_2`` keys read as ``name``."""
    names = {f.get("name") for f in functions if isinstance(f, dict)}
    out = []
    for key, params in answer.items():
        name = key if key in names else _SUFFIX.sub("", key)
        out.append((name, params if isinstance(params, dict) else {}))
    return out


def call_matches(
    call: dict[str, Any], name: str, params: dict[str, Any], function: dict[str, Any] | None, mentioned: list[str]
) -> bool:
    """Whether one call ``{"function", "args"}`` matches one expected call of the answer."""
    if call["function"] != name or function is None:
        return False
    args: dict[str, Any] = call["args"]
    parameters = function.get("parameters") or {}
    properties: dict[str, Any] = parameters.get("properties") or {}
    required = list(parameters.get("required") or [])
    if any(param not in args for param in required):
        return False
    for param, value in args.items():
        if param not in properties or param not in params:
            return False
        if not type_fits(value, properties[param], params[param]):
            return False
        if not value_equal(value, params[param]):
            return False
    for param, expected in params.items():
        if param in args:
            continue
        schema = properties.get(param)
        default = schema.get("default") if isinstance(schema, dict) else None
        if param in required or (param in mentioned and not (default is not None and value_equal(default, expected))):
            return False
    return True


def calls_of(candidate: Any) -> list[dict[str, Any]] | None:
    """The candidate's calls as ``{"function", "args"}`` dicts, or None when malformed."""
    if not isinstance(candidate, dict) or not isinstance(candidate.get("calls"), list):
        return None
    calls = []
    for call in candidate["calls"]:
        if not isinstance(call, dict) or not isinstance(call.get("function"), str):
            return None
        args = call.get("args", {})
        if not isinstance(args, dict):
            return None
        calls.append({"function": call["function"], "args": args})
    return calls


def _perfect_matching(fits: list[list[bool]]) -> bool:
    """Whether every expected call i can take its own call j with ``fits[i][j]`` (Kuhn's algorithm)."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j, ok in enumerate(fits[i]):
            if ok and j not in seen:
                seen.add(j)
                if j not in owner or place(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return all(place(i, set()) for i in range(len(fits)))


def normal_matches(
    candidate: Any, answers: list[dict[str, Any]], functions: list[dict[str, Any]], mentioned: dict[str, list[str]]
) -> bool:
    """Whether ``candidate`` makes the calls of one of the answers (ACEBench lists alternatives).

    Args:
        candidate: ``{"calls": [...], "final_answer": ...}``; the final answer plays no part.
        answers: The accepted answers, each ``{name: {param: value}}``.
        functions: The task's function schemas.
        mentioned: Per answer key, the optional parameters whose values the conversation mentions.
    """
    calls = calls_of(candidate)
    if calls is None:
        return False
    schemas = {f.get("name"): f for f in functions if isinstance(f, dict)}
    for answer in answers:
        if not isinstance(answer, dict):
            continue
        expected = expected_calls(answer, functions)
        if len(calls) != len(expected):
            continue
        keys = list(answer)
        fits = [
            [call_matches(call, name, params, schemas.get(name), mentioned.get(key, [])) for call in calls]
            for key, (name, params) in zip(keys, expected, strict=True)
        ]
        if _perfect_matching(fits):
            return True
    return False


def special_matches(candidate: Any, category: str, truth: Any, phrases: dict[str, str] | None = None) -> bool:
    """Whether ``candidate`` points out the problem of a special task, and calls nothing.

    Args:
        candidate: ``{"calls": [], "final_answer": str}``.
        category: ``incomplete``, ``error_param`` or ``irrelevant``.
        truth: ACEBench's answer: ``{function: [missing parameters]}``, ``{parameter: [incorrect
            values]}``, or the refusal text.
        phrases: The phrase of each scenario, lower case; by default :data:`FORMAT_PHRASES` and,
            for an irrelevant task, its own refusal's phrase.
    """
    if phrases is None:
        phrases = dict(FORMAT_PHRASES)
        if category == "irrelevant" and isinstance(truth, str):
            phrases["irrelevant"] = refusal_phrase(truth)
    calls = calls_of(candidate)
    text = candidate.get("final_answer") if isinstance(candidate, dict) else None
    if calls is None or calls or not isinstance(text, str) or category not in phrases:
        return False
    flat = " ".join(text.split())
    lower = flat.lower()
    if phrases[category] not in lower:
        return False
    if any(phrase in lower for other, phrase in phrases.items() if other != category):
        return False
    if category == "incomplete":
        if not isinstance(truth, dict):
            return False
        for function, missing in truth.items():
            if function not in flat or not all(" ".join(str(p).split()) in flat for p in missing):
                return False
    elif category == "error_param":
        if not isinstance(truth, dict):
            return False
        for values in truth.values():
            if not all(" ".join(str(v).split()) in flat for v in values):
                return False
    return True


def decide(
    candidate: Any,
    category: str,
    truth: Any,
    functions: list[dict[str, Any]],
    mentioned: dict[str, list[str]],
    phrases: dict[str, str] | None = None,
) -> bool:
    """The decision for one candidate of a task of ``category`` (``normal`` or a special one)."""
    if category == "normal":
        answers = truth if isinstance(truth, list) else [truth]
        return normal_matches(candidate, answers, functions, mentioned)
    return special_matches(candidate, category, truth, phrases)
