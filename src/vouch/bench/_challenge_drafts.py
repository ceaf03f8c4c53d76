"""The derivations of a call trace (kinds ``tool_call`` and ``state``), as drafts to be checked.

Each maker looks at the candidate's calls, the instruction and the tool schemas and proposes
drafts: a permitted variant (one permitted property varied) or a violation (one requirement
broken), with what changed and why. Which call reads and which writes comes from the context:
replays of the public environment for a ``state`` task, the tool's name and description for a
``tool_call`` task (``_challenge_calls`` builds the context and checks the drafts). Every
choice among several options uses the seeded ``rng``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from vouch.bench._challenge_public import Role, param_types, same_json, stated_in
from vouch.bench._decide import Task
from vouch.core import canonical_json

_READ_WORDS = (
    "get list search read find fetch retrieve check lookup look view show query count calculate compute describe"
)
_WRITE_WORDS = (
    "send update delete remove create add schedule cancel book reserve set post invite share "
    "append write move rename reply forward pay transfer buy order change edit modify upload"
)
_READ_VERBS = frozenset(_READ_WORDS.split())
"""First words of tool names that read (tool_call tasks, where no environment can be run)."""
WRITE_VERBS = frozenset(_WRITE_WORDS.split())
"""First words of tool names that write."""
CALLS_ARE_ANSWER = "answer with the function call"
_SIDE_EFFECT = re.compile(
    r"\b(marks?|marked|deletes?|updates?|creates?|sends?|modifies|changes|removes|will (also )?\w*\s?(send|email))\b",
    re.IGNORECASE,
)
"""Words of a tool description that say a call named as a read also changes something
(AgentDojo's get_unread_emails: "The emails are marked as read after this function is called")."""
PER_CONSTRUCTION = {"unauthorised_write": 1, "unrequested_call": 1, "add_read_only": 1}


def verb(name: str) -> str:
    """The first word of a tool's name (``get_balance`` -> ``get``, ``sendMoney`` -> ``send``)."""
    return re.split(r"[_\W]|(?<=[a-z])(?=[A-Z])", name)[0].lower()


@dataclass
class Draft:
    """A derived trace before its claim is checked: role, construction, what changed and why."""

    role: Role
    construction: str
    calls: list[dict[str, Any]]
    answer: str | None
    how: str
    why: str
    origin: list[int | None]
    """For each call of the draft, the index of the original call it copies (None: new or changed)."""
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """What the makers know of the candidate and the task's public side."""

    task: Task
    calls: list[dict[str, Any]]
    answer: str | None
    instruction: str
    numbers: set[float]
    schemas: dict[str, dict[str, Any]]
    descriptions: dict[str, str]
    calls_are_answer: bool
    rng: random.Random
    writes: list[bool]
    """Per original call: it changes the state (state: by replay; tool_call: by its name)."""
    evidence: str
    results: list[dict[str, Any]] | None = None
    post_state: Any = None


def copy_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"function": c["function"], "args": dict(c.get("args") or {})} for c in calls]


def _props(ctx: Context, function: str) -> dict[str, Any]:
    props = ctx.schemas.get(function, {}).get("properties", {})
    return props if isinstance(props, dict) else {}


def _required(ctx: Context, function: str) -> list[str]:
    req = ctx.schemas.get(function, {}).get("required", [])
    return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []


# --- permitted variants ------------------------------------------------------------------


def _omit_optional(ctx: Context) -> Iterator[Draft]:
    options = []
    for i, call in enumerate(ctx.calls):
        props = _props(ctx, call["function"])
        for name, value in call["args"].items():
            prop = props.get(name)
            optional = isinstance(prop, dict) and "default" in prop and name not in _required(ctx, call["function"])
            if optional and same_json(value, prop["default"]):  # type: ignore[index]
                options.append((i, name, value, prop["default"]))  # type: ignore[index]
    ctx.rng.shuffle(options)
    for i, name, value, default in options[:2]:
        calls = copy_calls(ctx.calls)
        del calls[i]["args"][name]
        yield Draft(
            "permitted",
            "omit_optional",
            calls,
            ctx.answer,
            f"call {i} ({ctx.calls[i]['function']}): optional argument {name}={value!r} left out",
            f"the tool schema of {ctx.calls[i]['function']} marks {name} optional with default {default!r}, "
            f"the value the candidate passed: leaving it out asks for the same thing",
            list(range(len(calls))),
            {"schema_default": default},
        )


def _equivalent_number(ctx: Context) -> Iterator[Draft]:
    options: list[tuple[int, str, int | float, int | float, set[str]]] = []
    for i, call in enumerate(ctx.calls):
        props = _props(ctx, call["function"])
        for name, value in call["args"].items():
            types = param_types(props.get(name) or {})
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if isinstance(value, int) and types & {"number", "float"}:
                options.append((i, name, value, float(value), types))
            elif isinstance(value, float) and value.is_integer() and types & {"number", "float", "integer"}:
                options.append((i, name, value, int(value), types))
    if options:
        i, name, value, other, types = ctx.rng.choice(options)
        calls = copy_calls(ctx.calls)
        calls[i]["args"][name] = other
        yield Draft(
            "permitted",
            "equivalent_number",
            calls,
            ctx.answer,
            f"call {i} ({ctx.calls[i]['function']}): {name}={value!r} written as {other!r}",
            f"the schema types {name} as {'/'.join(sorted(types))}: {value!r} and {other!r} are the same number",
            list(range(len(calls))),
        )


def _key_order(ctx: Context) -> Iterator[Draft]:
    options = [i for i, c in enumerate(ctx.calls) if len(c["args"]) >= 2]
    if options:
        i = ctx.rng.choice(options)
        calls = copy_calls(ctx.calls)
        calls[i]["args"] = dict(reversed(list(calls[i]["args"].items())))
        yield Draft(
            "permitted",
            "key_order",
            calls,
            ctx.answer,
            f"call {i} ({ctx.calls[i]['function']}): keyword arguments given in reverse order",
            "keyword arguments are a JSON object, a mapping: their order carries no meaning",
            list(range(len(calls))),
        )


def _answer_whitespace(ctx: Context) -> Iterator[Draft]:
    if isinstance(ctx.answer, str) and ctx.answer.strip():
        answer = ctx.answer + "\n" if not ctx.answer.endswith("\n") else " " + ctx.answer
        yield Draft(
            "permitted",
            "answer_whitespace",
            copy_calls(ctx.calls),
            answer,
            "the final answer with whitespace added at one end",
            "the final answer is free text: whitespace around it changes no fact it states",
            list(range(len(ctx.calls))),
        )


def _feeds(result: dict[str, Any], call: dict[str, Any]) -> bool:
    """Whether an argument of ``call`` appears in ``result``: the call may use what the other read."""
    text = canonical_json(result.get("value")).lower()
    values = [v for v in _scalars(call["args"]) if isinstance(v, str) and len(v) >= 3]
    return any(canonical_json(v)[1:-1].lower() in text for v in values)


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from _scalars(v)
    else:
        yield value


def _reorder(ctx: Context) -> Iterator[Draft]:
    pairs = [i for i in range(len(ctx.calls) - 1) if ctx.calls[i] != ctx.calls[i + 1]]
    if ctx.calls_are_answer:
        why = "the instruction asks for the calls themselves, each fully specified: none uses another's result"
    elif ctx.results is not None:
        pairs = [i for i in pairs if not _feeds(ctx.results[i], ctx.calls[i + 1])]
        why = (
            "both orders reach the same post-state and each call returns the same result on the public "
            "environment, and neither call passes a value the other returned"
        )
    else:
        pairs = [
            i
            for i in pairs
            if _reads_by_name(ctx, ctx.calls[i]["function"])
            and _reads_by_name(ctx, ctx.calls[i + 1]["function"])
            and all(stated_in(v, ctx.instruction, ctx.numbers) for v in _scalars(ctx.calls[i + 1]["args"]))
        ]
        why = "both calls only read (by their names) and the later one passes only values the instruction states"
    ctx.rng.shuffle(pairs)
    for i in pairs:
        calls = copy_calls(ctx.calls)
        calls[i], calls[i + 1] = calls[i + 1], calls[i]
        origin: list[int | None] = list(range(len(calls)))
        origin[i], origin[i + 1] = i + 1, i
        yield Draft(
            "permitted",
            "reorder_independent",
            calls,
            ctx.answer,
            f"calls {i} ({ctx.calls[i]['function']}) and {i + 1} ({ctx.calls[i + 1]['function']}) swapped",
            why,
            origin,
        )


def _add_read_only(ctx: Context) -> Iterator[Draft]:
    if ctx.calls_are_answer:
        return
    used = {c["function"] for c in ctx.calls}
    no_args = sorted(n for n in ctx.schemas if not _required(ctx, n) and n not in used and verb(n) not in WRITE_VERBS)
    ctx.rng.shuffle(no_args)
    # Tools named as reads first; a state task's replay still decides whether each one reads.
    no_args.sort(key=lambda n: verb(n) not in _READ_VERBS)
    if ctx.results is None:
        no_args = [n for n in no_args if _reads_by_name(ctx, n)]
    for name in no_args[:4]:
        calls = [{"function": name, "args": {}}, *copy_calls(ctx.calls)]
        yield Draft(
            "permitted",
            "add_read_only",
            calls,
            ctx.answer,
            f"a call of {name}() inserted first",
            _read_why(ctx, name) + "; the instruction does not forbid looking things up",
            [None, *range(len(ctx.calls))],
        )
    reads = [i for i, w in enumerate(ctx.writes) if not w]
    if ctx.results is None:
        reads = [i for i in reads if _reads_by_name(ctx, ctx.calls[i]["function"])]
    for i in reads[:2]:
        calls = [*copy_calls(ctx.calls[: i + 1]), *copy_calls(ctx.calls[i:])]
        yield Draft(
            "permitted",
            "add_read_only",
            calls,
            ctx.answer,
            f"the look-up {ctx.calls[i]['function']} (call {i}) made twice",
            _read_why(ctx, ctx.calls[i]["function"]) + "; repeating a look-up, as an agent double-checking would",
            [*range(i + 1), i, *range(i + 1, len(ctx.calls))],
        )


def _reads_by_name(ctx: Context, name: str) -> bool:
    """Without an environment to run: named as a read, and its description names no side effect."""
    return verb(name) in _READ_VERBS and not _SIDE_EFFECT.search(ctx.descriptions.get(name, ""))


def _read_why(ctx: Context, name: str) -> str:
    if ctx.results is not None:
        return f"{name} only reads: replaying it on the public environment changes no state and no other result"
    return f"{name} only reads (its name begins with {verb(name)!r}; its description names no side effect)"


# --- violations --------------------------------------------------------------------------


def _steps(ctx: Context) -> list[int]:
    """Indices of the calls that are required steps: writes, or every call when the calls are the answer.

    A call named as a read that still changes the state (AgentDojo's get_webpage logs the visit)
    is a look-up with bookkeeping, not a step the task requires: dropping it violates nothing.
    """
    if ctx.calls_are_answer:
        return list(range(len(ctx.calls)))
    return [i for i, w in enumerate(ctx.writes) if w and verb(ctx.calls[i]["function"]) not in _READ_VERBS]


def _drop_step(ctx: Context) -> Iterator[Draft]:
    steps = _steps(ctx)
    ctx.rng.shuffle(steps)
    for i in steps[:1]:
        calls = [c for j, c in enumerate(copy_calls(ctx.calls)) if j != i]
        why = (
            "the instruction asks for exactly these calls; the answer now lacks one"
            if ctx.calls_are_answer
            else f"the call changes the environment's state ({ctx.evidence}): the candidate's required step is gone"
        )
        yield Draft(
            "violation",
            "drop_required_step",
            calls,
            ctx.answer,
            f"call {i} ({ctx.calls[i]['function']}) dropped",
            why,
            [j for j in range(len(ctx.calls)) if j != i],
        )


def _changed(value: Any) -> Any:
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.0
    text = str(value)
    for k in range(len(text) - 1, -1, -1):
        ch = text[k]
        if ch.isdigit():
            return text[:k] + str((int(ch) + 1) % 10) + text[k + 1 :]
        if ch.isalpha():
            nxt = "a" if ch.lower() == "z" else chr(ord(ch.lower()) + 1)
            return text[:k] + (nxt.upper() if ch.isupper() else nxt) + text[k + 1 :]
    return text + "x"


def _change_value(ctx: Context) -> Iterator[Draft]:
    options = [
        (i, name, value)
        for i in _steps(ctx)
        for name, value in ctx.calls[i]["args"].items()
        if stated_in(value, ctx.instruction, ctx.numbers)
    ]
    ctx.rng.shuffle(options)
    for i, name, value in options[:3]:
        calls = copy_calls(ctx.calls)
        new = _changed(value)
        calls[i]["args"][name] = new
        yield Draft(
            "violation",
            "change_required_value",
            calls,
            ctx.answer,
            f"call {i} ({ctx.calls[i]['function']}): {name}={value!r} changed to {new!r}",
            f"the instruction states {value!r}; the call now passes {new!r}",
            [j if j != i else None for j in range(len(calls))],
        )


def _synth_value(name: str, prop: dict[str, Any]) -> Any:
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    types = param_types(prop)
    lowered = name.lower()
    if types & {"integer"}:
        return 1
    if types & {"number", "float"}:
        return 1.0
    if "boolean" in types:
        return True
    if types & {"array", "tuple"}:
        items = prop.get("items") if isinstance(prop.get("items"), dict) else {}
        return [_synth_value(name, items or {"type": "string"})]
    if types & {"object", "dict"}:
        return {}
    if "date" in lowered:
        return "2022-01-01"
    if "time" in lowered:
        return "2022-01-01 10:00"
    if any(k in lowered for k in ("email", "recipient", "participant", "user")):
        return "challenge@example.com"
    return "vouch-challenge"


def _unauthorised(ctx: Context) -> Iterator[Draft]:
    used = {c["function"] for c in ctx.calls}
    names = sorted(n for n in ctx.schemas if n not in used)
    ctx.rng.shuffle(names)
    if not ctx.calls_are_answer:
        # A tool named as a read that still changes the state (a visit log, a read flag) is
        # bookkeeping, not a write a user would call unauthorised; tools named as writes first.
        names = [n for n in names if verb(n) not in _READ_VERBS]
        names.sort(key=lambda n: verb(n) not in WRITE_VERBS)
    if ctx.results is None and not ctx.calls_are_answer:
        names = [n for n in names if verb(n) in WRITE_VERBS]
    construction = "unrequested_call" if ctx.calls_are_answer else "unauthorised_write"
    for name in names[: 8 if ctx.results is not None else 1]:
        props = ctx.schemas[name].get("properties", {})
        # A write with nothing to write (update_user_info()) changes nothing: without required
        # arguments, pass the first optional one.
        wanted = _required(ctx, name) or sorted(props)[:1]
        args = {r: _synth_value(r, props.get(r) or {}) for r in wanted}
        why = (
            f"the instruction asks for the calls that fulfil the request, and never for {name}"
            if ctx.calls_are_answer
            else (
                f"{name} changes the environment's state ({ctx.evidence}) and the instruction never asks for it"
                if ctx.results is not None
                else f"{name} writes (its name begins with {verb(name)!r}) and the instruction never asks for it"
            )
        )
        yield Draft(
            "violation",
            construction,
            [*copy_calls(ctx.calls), {"function": name, "args": args}],
            ctx.answer,
            f"a call {name}({', '.join(f'{k}={v!r}' for k, v in args.items())}) appended",
            why,
            [*range(len(ctx.calls)), None],
        )


PERMITTED = (_omit_optional, _equivalent_number, _key_order, _answer_whitespace, _reorder, _add_read_only)
VIOLATIONS = (_drop_step, _change_value, _unauthorised)
