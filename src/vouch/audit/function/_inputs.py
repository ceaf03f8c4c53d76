"""Type-aware mutation of seed inputs, and shrinking of a failing one; pure, seeded.

Every edit keeps an argument's type: an int stays an int (nudged, or moved to a boundary),
a list stays a list of the same element types (an element dropped, duplicated, swapped or
mutated), a string keeps its character classes (a letter becomes another letter of the same
case, a digit run another number). Inputs are filtered through the preconditions by the
caller; these functions only propose.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from vouch.audit.function._preconditions import Preconditions

Args = list[Any]


def key(args: Sequence[Any]) -> str:
    """A stable identity for an argument list (for deduplication)."""
    return json.dumps(_plain(args), sort_keys=True, default=repr)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return {"t": [_plain(v) for v in value]}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {"d": sorted(([repr(k), _plain(v)] for k, v in value.items()), key=lambda kv: kv[0])}
    if isinstance(value, float):
        return {"f": repr(value)}
    return value


def depth(value: Any) -> int:
    """How deep containers nest in ``value`` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, (list, tuple, set, frozenset)):
            stack += [(v, level + 1) for v in item]
        elif isinstance(item, dict):
            stack += [(v, level + 1) for v in (*item.keys(), *item.values())]
    return deepest


def size(args: Sequence[Any]) -> int:
    """How big an input is, for preferring small witnesses."""
    return len(key(args))


def _same_class(ch: str, rng: random.Random, alphabet: Sequence[str]) -> str:
    for pool in (string.ascii_lowercase, string.ascii_uppercase, string.digits):
        if ch in pool:
            choices = [c for c in alphabet if c in pool and c != ch] or [c for c in pool if c != ch]
            return rng.choice(choices)
    others = [c for c in alphabet if c != ch and not c.isalnum() and not c.isspace()]
    return rng.choice(others) if others else ch


def _mutate_str(text: str, rng: random.Random) -> str:
    if not text:
        return text
    alphabet = sorted(set(text))
    op = rng.randrange(8)
    i = rng.randrange(len(text))
    if op == 7 and text[i].isalpha():
        return text[:i] + text[i].swapcase() + text[i + 1 :]
    if op == 0:
        return text[:i] + _same_class(text[i], rng, alphabet) + text[i + 1 :]
    if op == 1:
        return text[:i] + text[i + 1 :]
    if op == 2:
        return text[:i] + text[i] + text[i:]
    if op == 3 and len(text) > 1:
        j = rng.randrange(len(text))
        chars = list(text)
        chars[i], chars[j] = chars[j], chars[i]
        return "".join(chars)
    if op == 4 and " " in text:
        words = text.split(" ")
        k = rng.randrange(len(words))
        if rng.random() < 0.5 and len(words) > 1:
            del words[k]
        else:
            words.insert(k, words[k])
        return " ".join(words)
    if op == 5:
        return text[::-1]
    return text + text[rng.randrange(len(text))]


def _mutate_number(value: int | float, rng: random.Random) -> int | float:
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, value + 2, value - 2, value * 2, value // 2, 0, 1, value + 7])
    return rng.choice([value + 0.5, value - 0.5, value * 1.5, value / 2, round(value), value + 0.1, -value])


def mutate_value(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """One type-preserving edit of a value (containers: of their shape or of one element)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return _mutate_number(value, rng)
    if isinstance(value, str):
        return _mutate_str(value, rng)
    if isinstance(value, list):
        items = list(value)
        op = rng.randrange(7)
        if not items:
            return items
        i = rng.randrange(len(items))
        if op == 0:
            del items[i]
        elif op == 1:
            items.insert(i, items[i])
        elif op == 2 and len(items) > 1:
            j = rng.randrange(len(items))
            items[i], items[j] = items[j], items[i]
        elif op == 3:
            items.reverse()
        elif op == 4:
            items.append(mutate_value(items[i], rng, depth + 1))
        elif op == 5:
            items = items[:i] + items[i + 1 :] if rng.random() < 0.5 else items[: i + 1]
        else:
            items[i] = mutate_value(items[i], rng, depth + 1)
        return items
    if isinstance(value, tuple):
        if not value:
            return value
        i = rng.randrange(len(value))
        return tuple(mutate_value(v, rng, depth + 1) if j == i else v for j, v in enumerate(value))
    if isinstance(value, dict):
        if not value:
            return value
        keys = list(value)
        k = rng.choice(keys)
        out = dict(value)
        if rng.random() < 0.4 and len(out) > 1:
            del out[k]
        else:
            out[k] = mutate_value(out[k], rng, depth + 1)
        return out
    return value


def _repair(args: Args, rules: Preconditions) -> Args:
    """Sort lists an argument requires sorted, so that an edit does not leave the domain for nothing."""
    out = list(args)
    for i, rule in enumerate(rules.args[: len(out)]):
        if rule.sorted_lists and isinstance(out[i], list):
            try:
                out[i] = sorted(out[i])
            except TypeError:
                pass
    return out


def neighbours(
    seeds: Iterable[Args], rules: Preconditions, rng: random.Random, *, per_seed: int, limit: int
) -> list[Args]:
    """Admitted type-aware mutants of the seeds, deduplicated, seeds themselves excluded.

    Args:
        seeds: Valid inputs to start from.
        rules: The preconditions every proposal must hold.
        rng: The seeded source of every choice.
        per_seed: Proposals per seed (before filtering).
        limit: At most this many inputs returned.

    Returns:
        Inputs in proposal order.
    """
    seed_list = [list(s) for s in seeds]

    def proposals() -> Iterator[Args]:
        for seed in seed_list:
            if not seed:
                continue
            for _ in range(per_seed):
                args = list(seed)
                for _edit in range(1 + (rng.random() < 0.3)):
                    i = rng.randrange(len(args))
                    args[i] = mutate_value(args[i], rng)
                yield _repair(args, rules)

    return admitted(proposals(), rules, {key(s) for s in seed_list}, limit)


def admitted(candidates: Iterable[Args], rules: Preconditions, seen: set[str], limit: int) -> list[Args]:
    """The candidates ``rules`` admits, in order, each once and none in ``seen`` (which grows),
    at most ``limit`` of them (the candidates are drawn no further than that)."""
    out: list[Args] = []
    for args in candidates:
        k = key(args)
        if k in seen or rules.admits(args) is not None:
            continue
        seen.add(k)
        out.append(args)
        if len(out) >= limit:
            break
    return out


def with_constants(
    seeds: Iterable[Args], constants: Sequence[Any], rules: Preconditions, rng: random.Random, *, limit: int
) -> list[Args]:
    """Seeds with a program's own constants put in, the way a fuzzer's dictionary does it: a
    number argument (or a number in a list) set to the constant or one past either side of it,
    a string argument set to it, prefixed or suffixed with it, a constant of a list's element
    type put in place of an element or appended, a list cut or grown (its own elements repeated)
    to a small whole constant's length. Admitted by ``rules``, deduplicated, seeds excluded, in a
    seeded order.
    """
    seed_list = [list(s) for s in seeds]
    variants: list[Args] = []
    for seed in seed_list:
        for i, arg in enumerate(seed):
            for c in constants:
                for value in _with_constant(arg, c):
                    variants.append([*seed[:i], value, *seed[i + 1 :]])
    rng.shuffle(variants)
    return admitted((_repair(a, rules) for a in variants), rules, {key(s) for s in seed_list}, limit)


def _with_constant(arg: Any, c: Any) -> list[Any]:
    if isinstance(arg, bool) or isinstance(c, bool):
        return []
    if isinstance(arg, (int, float)) and isinstance(c, (int, float)):
        kind = type(arg)
        return [kind(v) for v in (c, c - 1, c + 1)] if kind is float or float(c).is_integer() else []
    if isinstance(arg, str) and isinstance(c, str):
        return [c, c + arg, arg + c]
    if isinstance(arg, list) and arg:
        element = arg[0]
        out = []
        for v in _with_constant(element, c)[:2] if not isinstance(element, (list, dict)) else []:
            out.append([*arg[:-1], v])
            out.append([*arg, v])
        if isinstance(c, int) and 0 <= c <= MAX_CONSTANT_LENGTH and c != len(arg):
            out.append((arg * (c // len(arg) + 1))[:c])
        return out
    return []


MAX_CONSTANT_LENGTH = 64
"""A whole constant up to this is also tried as a list's length."""


def _shrink_value(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [v for v in (0, 1, value // 2, value - 1 if value > 0 else value + 1) if abs(v) < abs(value)]
    if isinstance(value, float):
        return [v for v in (0.0, 1.0, float(round(value))) if abs(v) < abs(value)]
    if isinstance(value, str):
        out: list[Any] = [value[:i] + value[i + 1 :] for i in range(min(len(value), 12))]
        if " " in value:
            words = value.split(" ")
            out += [" ".join(words[:i] + words[i + 1 :]) for i in range(min(len(words), 8))]
        return out
    if isinstance(value, list):
        out = [value[:i] + value[i + 1 :] for i in range(min(len(value), 12))]
        out += [value[: len(value) // 2]] if len(value) > 3 else []
        for i, item in enumerate(value[:6]):
            out += [[*value[:i], smaller, *value[i + 1 :]] for smaller in _shrink_value(item)[:2]]
        return out
    if isinstance(value, dict):
        return [{k: v for k, v in value.items() if k != drop} for drop in list(value)[:8]]
    return []


def shrink_candidates(args: Args, rules: Preconditions, limit: int = 40) -> list[Args]:
    """Smaller admitted variants of a failing input, smallest first."""
    out: list[Args] = []
    seen = {key(args)}
    for i, value in enumerate(args):
        for smaller in _shrink_value(value):
            cand = _repair([*args[:i], smaller, *args[i + 1 :]], rules)
            k = key(cand)
            if k in seen or rules.admits(cand) is not None or size(cand) >= size(args):
                continue
            seen.add(k)
            out.append(cand)
    out.sort(key=size)
    return out[:limit]


def boundary_inputs(seeds: Iterable[Args], rules: Preconditions) -> list[Args]:
    """Seeds with one numeric argument moved to its allowed floor or to floor + 1."""
    out: list[Args] = []
    for seed in seeds:
        for i, rule in enumerate(rules.args[: len(seed)]):
            value = seed[i]
            if isinstance(value, int) and not isinstance(value, bool) and rule.low is not None:
                for target in (int(rule.low), int(rule.low) + 1):
                    cand = [*seed[:i], target, *seed[i + 1 :]]
                    if rules.admits(cand) is None:
                        out.append(cand)
    return out


Proposer = Callable[[Sequence[Args], Preconditions, random.Random], list[Args]]
