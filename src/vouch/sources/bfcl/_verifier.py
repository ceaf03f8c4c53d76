"""Reference verifier of vouch's BFCL tool-call tasks: possible-answer matching, stdlib only.

The BFCL builder copies this module's text into every task's ``reference/verifier.py`` and appends
the task's possible answer and function schemas as JSON literals, plus the ``verify(candidate,
env)`` of the verifier contract, which calls :func:`matches`. So this file must stay standalone:
standard library only, no vouch import.

The rules are BFCL's AST checker (bfcl-eval 2026.3.23) read as a specification and written anew:

* The candidate makes exactly as many calls as the possible answer lists. Calls pair with expected
  calls one to one, in any order (only the parallel sets expect more than one call).
* A call matches an expected call when it names the same function, passes every parameter the
  schema requires, passes no parameter that the schema or the possible answer lacks, leaves out
  only parameters whose allowed values include ``""`` (BFCL's mark for "may be omitted"), and gives
  every parameter it passes a value of the schema's type that equals one of the allowed values.
* Types: an integer is accepted where the schema says float (also inside arrays); a boolean is
  never a number. A value of the type of one of the allowed values is accepted too: BFCL's answer
  keys sometimes list a variable name or ``None`` for a typed parameter.
* Equality: strings ignore letter case, spaces and the characters ``,./-_*^``, and treat ``'`` as
  ``"``; numbers compare by value; lists compare element-wise in order. A dict among the allowed
  values is a spec: each key maps to its own allowed values, and a key may be left out when those
  include ``""``. Deeper dicts compare key by key.

Like BFCL's checker, an empty list passes where ``""`` is allowed (it reads as the omission). Where
this module differs from that checker it is more lenient, never stricter: strings nested inside
lists and dicts are normalised too, an integer is accepted for a float inside an array, and
parallel calls pair by a full matching (BFCL pairs greedily, so some valid orders fail there).
"""

from __future__ import annotations

import re
from typing import Any

_IGNORED = re.compile(r"[ ,./\-_*^]")

_SCHEMA_KINDS: dict[str, tuple[str, ...]] = {
    "string": ("str",),
    "integer": ("int",),
    "float": ("float", "int"),
    "number": ("float", "int"),
    "boolean": ("bool",),
    "array": ("list",),
    "tuple": ("list",),
    "dict": ("dict",),
    "object": ("dict",),
}


def standardize(text: str) -> str:
    """The form under which BFCL compares strings: no spaces or ``,./-_*^``, lower case."""
    return _IGNORED.sub("", text).lower().replace("'", '"')


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


def fits_schema(value: Any, schema: Any) -> bool:
    """Whether ``value`` has the type a parameter schema declares (unknown types accept anything)."""
    if not isinstance(schema, dict):
        return True
    kinds = _SCHEMA_KINDS.get(str(schema.get("type")))
    if kinds is None:
        return True
    if kind(value) not in kinds:
        return False
    if kinds == ("list",) and isinstance(schema.get("items"), dict):
        return all(fits_schema(item, schema["items"]) for item in value)
    return True


def literal_equal(value: Any, expected: Any) -> bool:
    """Whether ``value`` equals the allowed literal ``expected`` under BFCL's normalisation."""
    expected_kind = kind(expected)
    value_kind = kind(value)
    if expected_kind == "str":
        return value_kind == "str" and standardize(value) == standardize(expected)
    if expected_kind in ("int", "float"):
        return value_kind in ("int", "float") and value == expected
    if expected_kind in ("bool", "null"):
        return value_kind == expected_kind and value == expected
    if expected_kind == "list":
        return (
            value_kind == "list"
            and len(value) == len(expected)
            and all(literal_equal(v, e) for v, e in zip(value, expected, strict=True))
        )
    if expected_kind == "dict":
        return (
            value_kind == "dict"
            and set(value) == set(expected)
            and all(literal_equal(value[key], expected[key]) for key in expected)
        )
    return False


def _as_allowed(values: Any) -> list[Any]:
    return list(values) if isinstance(values, list) else [values]


def _omissible(allowed: Any) -> bool:
    return any(isinstance(a, str) and a == "" for a in _as_allowed(allowed))


def spec_match(value: Any, spec: dict[str, Any]) -> bool:
    """Whether dict ``value`` satisfies ``spec`` (key -> allowed values; ``""`` marks omittable)."""
    if not isinstance(value, dict):
        return False
    for key, item in value.items():
        if key not in spec or not any(literal_equal(item, a) for a in _as_allowed(spec[key])):
            return False
    return all(key in value or _omissible(allowed) for key, allowed in spec.items())


def value_allowed(value: Any, allowed: list[Any]) -> bool:
    """Whether ``value`` equals one of a parameter's allowed values (dicts in them are specs)."""
    for option in allowed:
        if isinstance(option, dict):
            if spec_match(value, option):
                return True
        elif isinstance(option, list) and any(isinstance(o, dict) for o in option):
            if kind(value) == "list" and len(value) == len(option):
                pairs = zip(value, option, strict=True)
                if all(spec_match(v, o) if isinstance(o, dict) else literal_equal(v, o) for v, o in pairs):
                    return True
        elif literal_equal(value, option) or (option == "" and value == []):
            return True
    return False


def type_allowed(value: Any, schema: Any, allowed: list[Any]) -> bool:
    """Whether ``value`` has the schema's type, or the type of one of the allowed values."""
    if fits_schema(value, schema):
        return True
    value_kind = kind(value)
    return any(kind(a) == value_kind for a in allowed if not (isinstance(a, str) and a == ""))


def call_matches(call: dict[str, Any], expected: dict[str, Any], function: dict[str, Any] | None) -> bool:
    """Whether one call ``{"function", "args"}`` matches one expected call ``{name: {param: allowed}}``.

    Args:
        call: The candidate's call.
        expected: One entry of BFCL's ``ground_truth``: a single function name mapped to its
            parameters' allowed values.
        function: That function's schema (``name``, ``parameters``), or None if the task has none.
    """
    ((name, params),) = expected.items()
    if call["function"] != name:
        return False
    args: dict[str, Any] = call["args"]
    parameters = (function or {}).get("parameters") or {}
    properties: dict[str, Any] = parameters.get("properties") or {}
    required: list[str] = parameters.get("required") or []
    if any(param not in args for param in required):
        return False
    for param, value in args.items():
        if param not in params or (function is not None and param not in properties):
            return False
        allowed = _as_allowed(params[param])
        if not type_allowed(value, properties.get(param), allowed):
            return False
        if not value_allowed(value, allowed):
            return False
    return all(param in args or _omissible(allowed) for param, allowed in params.items())


def _calls_of(candidate: Any) -> list[dict[str, Any]] | None:
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


def matches(candidate: Any, ground_truth: list[dict[str, Any]], functions: list[dict[str, Any]]) -> bool:
    """Whether ``candidate`` satisfies a BFCL possible answer.

    Args:
        candidate: ``{"calls": [{"function": str, "args": {...}}, ...], "final_answer": ...}``;
            the final answer plays no part.
        ground_truth: BFCL's possible answer: one ``{name: {param: [allowed, ...]}}`` per call.
        functions: The task's function schemas.

    Returns:
        True when the calls pair one to one, in any order, with the expected calls.
    """
    calls = _calls_of(candidate)
    if calls is None or len(calls) != len(ground_truth):
        return False
    schemas = {f.get("name"): f for f in functions if isinstance(f, dict)}
    fits = [
        [call_matches(call, expected, schemas.get(next(iter(expected)))) for call in calls] for expected in ground_truth
    ]
    return _perfect_matching(fits)
