"""Preconditions of a function-level task: which inputs the prompt allows.

An input outside what P allows makes a false refutation, so the audit keeps every generated
input inside preconditions gathered from four places:

* the prompt's text: "non-empty", "positive", "sorted", "balanced", numeric ranges such as
  ``1 <= n <= 100``;
* the prompt's examples and T0's inputs (the *seeds*), read as Daikon reads invariants: each
  argument keeps the type signature seen there (``list[int]`` stays ``list[int]``), numbers
  stay in the seeds' sign and a widened range, a categorical domain (a grid of 0s and 1s)
  stays categorical, strings keep the seeds' alphabet (its classes opened whole), case, token
  lengths, whitespace shape and fixed words, lists keep sortedness and distinctness when every
  seed has them; the natural edges (the empty string and list) stay in unless P rules them out
  (``Widening``: how far past the seeds, each choice measured);
* G's own behaviour (checked by the caller): G raising, running away, or returning a value
  of a type it never returns on the seeds marks an input invalid.

``admits`` answers with the first precondition an input breaks (None when it holds them all),
which is also what re-judging of a witness checks.
"""

from __future__ import annotations

import itertools
import math
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Sig = tuple[Any, ...]
"""A type signature: ("int",), ("list", frozenset of element sigs), ("tuple", (sigs...)), ..."""

_BRACKETS = {")": "(", "]": "[", "}": "{", ">": "<"}


def signature(value: Any) -> Sig:
    """The type signature of a value: its type, and its elements' types, recursively."""
    if value is None:
        return ("none",)
    if isinstance(value, bool):
        return ("bool",)
    if isinstance(value, int):
        return ("int",)
    if isinstance(value, float):
        return ("float",)
    if isinstance(value, str):
        return ("str",)
    if isinstance(value, list):
        return ("list", frozenset(signature(v) for v in value))
    if isinstance(value, tuple):
        return ("tuple", tuple(signature(v) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset(signature(k) for k in value), frozenset(signature(v) for v in value.values()))
    return ("other", type(value).__name__)


def compatible(new: Sig, seen: Iterable[Sig]) -> bool:
    """Whether ``new`` fits one of the seen signatures (an empty list fits any list)."""
    return any(_fits(new, old) for old in seen)


def _fits(new: Sig, old: Sig) -> bool:
    if new == old:
        return True
    if new[0] != old[0]:
        return False
    if new[0] == "list":
        return all(any(_fits(n, o) for o in old[1]) for n in new[1])
    if new[0] == "tuple":
        return len(new[1]) == len(old[1]) and all(_fits(n, o) for n, o in zip(new[1], old[1], strict=True))
    if new[0] == "dict":
        keys = all(any(_fits(n, o) for o in old[1]) for n in new[1])
        return keys and all(any(_fits(n, o) for o in old[2]) for n in new[2])
    return False


def _numbers(value: Any) -> Iterable[int | float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)


def _lists(value: Any) -> Iterable[list[Any]]:
    if isinstance(value, list):
        yield value
        for v in value:
            yield from _lists(v)
    elif isinstance(value, tuple):
        for v in value:
            yield from _lists(v)


def is_balanced(text: str) -> bool:
    """Every closing bracket closes the last open one of its kind, and none is left open."""
    stack: list[str] = []
    for ch in text:
        if ch in "([{<":
            stack.append(ch)
        elif ch in _BRACKETS and (not stack or stack.pop() != _BRACKETS[ch]):
            return False
    return not stack


def shape(text: str) -> str:
    """A string's format: each digit is d, a run of letters is one a, anything else is itself."""
    out: list[str] = []
    for ch in text:
        if ch.isdigit():
            out.append("d")
        elif ch.isalpha():
            if not out or out[-1] != "a":
                out.append("a")
        else:
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True)
class Widening:
    """How far an argument's domain reaches past what the seeds show: each field a measured
    choice (``benchmarks/audit_pool.py --widen``), in general terms, never per task.

    Daikon's rule decides what the seeds prove: a property binds when the seeds would be
    unlikely to show it by chance. Every seed string being lowercase, over many letters, is such
    a property; no seed being empty, zero or one element long is not (those are single points
    of the domain, its natural edges), so the edges are in unless P rules them out.
    """

    empty: bool = True
    """The empty string and the empty list are in unless P says "non-empty" (False: only when a
    seed shows them)."""
    empty_items: bool = True
    """The empty string as an element of a list (of words, of operators) is in unless P says
    "non-empty" (False: only when a seed has one)."""
    zero: bool = False
    """0 is in for whole numbers at or above zero unless P says "positive" (False: only when a seed
    shows it; seeds at or above 1 open down to 1)."""
    keep_case: str = "letters"
    """Where P says nothing of case and the seeds' letters (``CASE_EVIDENCE`` or more) are all one
    case: ``always`` keeps letters in that case; ``letters`` keeps them so where P speaks of
    letters or the alphabet (the letters its rule is about are the ones the seeds show; a string
    P speaks of only as text may hold either case); ``never`` opens the other case."""
    letter_class: int = 8
    """A case of letters the seeds use with this many distinct letters is open whole."""
    presupposed: bool = True
    """Where P singles out an element by its kind ("the largest prime", "the smallest even
    number") and every seed list (``PRESUPPOSED_EVIDENCE`` or more) holds one, a list without
    any is outside P: the description presupposes one."""
    token_length: bool = True
    """Whitespace-separated tokens keep the one length every seed's tokens have (``TOKEN_EVIDENCE``
    tokens or more): "a b c" stays single letters."""
    fixed_words: bool = True
    """The words of a formatted string that every seed writes alike stay as they are ("5 apples
    and 6 oranges": the numbers vary, the words do not)."""
    bounds_over_t0: bool = True
    """A bound P states in words holds when P's own examples keep it, though T0's inputs break it
    (False: any seed breaking it drops it)."""


WIDENING = Widening()
CASE_EVIDENCE = 8
PRESUPPOSED_EVIDENCE = 3
TOKEN_EVIDENCE = 6

_LETTER_WORDS = re.compile(r"\bletters?\b|\balphabet")
_CASE_WORDS = re.compile(r"lower|upper|capital|\bcase\b|small letters|\bcaps?\b")
_LEADING_ZERO = re.compile(r"(?<![\d.])0\d")
_NOT_PRIME = re.compile(r"\bnot (?:a )?prime\b")


def _one_group(token: str) -> bool:
    """The token is one bracket pair and what it nests: its depth first returns to 0 at its end."""
    depth = 0
    for i, ch in enumerate(token):
        depth += 1 if ch in "([{<" else -1 if ch in _BRACKETS else 0
        if depth == 0 and i < len(token) - 1:
            return False
    return depth == 0


def _is_prime(n: Any) -> bool:
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        return False
    return all(n % k for k in range(2, math.isqrt(n) + 1))


_KINDS: dict[str, Any] = {
    "prime": _is_prime,
    "even": lambda n: isinstance(n, int) and n % 2 == 0,
    "odd": lambda n: isinstance(n, int) and n % 2 == 1,
}
"""Kinds of number P may single one element out by, each with its test (a sign is a bound, read
as one)."""
_SUPERLATIVE = r"\b(?:largest|smallest|biggest|greatest|highest|lowest|maximum|minimum|max|min)\s+"


def _presupposed(values: Sequence[Any], text: str) -> str | None:
    """The one kind of element P singles one out by ("the largest prime") that every seed list of
    numbers holds: a definite description presupposes one (None if none or several)."""
    lists = [v for v in values if isinstance(v, list) and v and all(isinstance(n, int) for n in _numbers(v))]
    if not WIDENING.presupposed or len(lists) < PRESUPPOSED_EVIDENCE or len(lists) != len(values):
        return None
    found = [
        kind
        for kind, test in _KINDS.items()
        if re.search(rf"{_SUPERLATIVE}{kind}\b", text) and all(any(test(n) for n in _numbers(v)) for v in lists)
    ]
    return found[0] if len(found) == 1 else None


def _is_sorted(items: list[Any]) -> bool:
    try:
        return all(a <= b for a, b in itertools.pairwise(items))
    except TypeError:
        return False


@dataclass(frozen=True)
class ArgRule:
    """What one argument may be."""

    name: str
    sigs: frozenset[Sig]
    low: float | None = None
    high: float | None = None
    categories: frozenset[Any] | None = None
    """A small set of numbers every numeric leaf must come from (a grid of 0s and 1s)."""
    alphabet: frozenset[str] | None = None
    strip_spaces: bool = False
    """No leading or trailing whitespace, no doubled spaces (as in every seed)."""
    nonempty_str: bool = False
    nonempty_items: bool = False
    """No string inside a list is empty (as in every seed, where ``Widening.empty_items`` is off)."""
    balanced: bool = False
    min_len: int = 0
    max_len: int | None = None
    sorted_lists: bool = False
    distinct_lists: bool = False
    whole_floats: bool = False
    """Every float seed is a whole number: keep it so."""
    shapes: frozenset[str] | None = None
    """For strings with digits: the seeds' shapes (digits exact, letter runs collapsed), e.g. dd-dd-dddd."""
    single_groups: bool = False
    """Every whitespace-separated group is one bracket pair with what it nests (as in every seed):
    "(())((()))" is two groups run together, not a group P describes."""
    no_leading_zeros: bool = False
    """No run of digits starts with 0 (no seed writes a number so: "05/01" is not a fraction P shows)."""
    not_prime: bool = False
    """P says the number is not a prime ("Assume n > 1 and is not a prime")."""
    presupposes: str | None = None
    """A kind of element P singles one out by that every seed list holds (``Widening.presupposed``)."""
    token_length: int | None = None
    """Every whitespace-separated token has this length (as in every seed)."""
    words: tuple[str | None, ...] | None = None
    """A formatted string's letter runs, in order: a word every seed writes there, or None where
    the seeds differ."""
    stated_low: bool = False
    stated_high: bool = False
    """P states the bound (``1 <= n <= 100``, ``n > 1``); otherwise it is the seeds' scale, widened."""
    any_width: bool = False
    """A digit run of any width keeps a formatted string's shape (past the seeds' scale)."""
    said_positive: bool = False
    """P says "positive" or "natural" of the numbers: the floor is P's word, not the seeds'."""
    said_sorted: bool = False
    """P says the lists are sorted ("sorted", "ascending", "increasing")."""
    said_nonempty: bool = False
    """P says "non-empty", or states the argument's length: the empty value is out by P's words."""


@dataclass(frozen=True)
class Preconditions:
    """Every argument's rule, and what G's outputs look like on valid inputs."""

    args: tuple[ArgRule, ...]
    output_sigs: frozenset[Sig] = field(default_factory=frozenset)
    relations: tuple[tuple[str, int, int], ...] = ()
    """Relations between arguments that every seed shows: ("same_len", i, j), ("len_diff:-1", i, j)
    (len(args[i]) - len(args[j]) == -1), ("le", i, j), ("le_len", i, j)."""
    notes: tuple[str, ...] = ()

    def admits(self, args: Sequence[Any]) -> str | None:
        """The first precondition ``args`` breaks, as one line; None when it holds them all."""
        if len(args) != len(self.args):
            return f"takes {len(self.args)} arguments, got {len(args)}"
        for rule, value in zip(self.args, args, strict=True):
            problem = _check(rule, value)
            if problem is not None:
                return f"{rule.name}: {problem}"
        for relation, i, j in self.relations:
            if not _holds(relation, args[i], args[j]):
                return f"{self.args[i].name} and {self.args[j].name}: break {relation}, which every seed holds"
        return None

    def lines(self) -> list[str]:
        """The domain, one line per argument and per relation between arguments."""
        parts = [f"{rule.name}: {', '.join(_bindings(rule)) or 'any value of its type'}" for rule in self.args]
        return parts + [f"{self.args[i].name} {relation} {self.args[j].name}" for relation, i, j in self.relations]

    def describe(self) -> str:
        """The rules that bind, one clause per argument (for a witness's ``why_valid``)."""
        return "; ".join(self.lines())

    def past_scale(self) -> Preconditions:
        """These rules without the seeds' scale: numbers of any magnitude on the seeds' side of
        zero and digit runs of any width, where P states no bound; every other rule holds."""
        return replace(self, args=tuple(_past_scale(rule) for rule in self.args))

    def wide(self) -> Preconditions:
        """These rules with the seeds' edges opened where P's words do not close them: numbers on
        either side of zero, and lists in any order, with repeats and words of any length. The
        type signatures, the formats, the alphabet, the relations and every bound P states hold.
        An input only these rules admit refutes nothing unless the jury of trials confirms G's
        answer on it (``_trial.unconfirmed``)."""
        return replace(self, args=tuple(_wide(rule) for rule in self.args))

    def output_ok(self, value: Any) -> bool:
        """Whether G's output has a type G gives on the seeds (else the input is not valid)."""
        return not self.output_sigs or compatible(signature(value), self.output_sigs)


def _bindings(rule: ArgRule) -> list[str]:
    out = [" or ".join(_show(sig) for sig in sorted(rule.sigs))] if rule.sigs else []
    if rule.low is not None or rule.high is not None:
        low = "" if rule.low is None else f"{rule.low:g} <= "
        high = "" if rule.high is None else f" <= {rule.high:g}"
        out.append(f"{low}numbers{high}" + (" (P states it)" if rule.stated_low or rule.stated_high else ""))
    flags = {
        "categories": rule.categories is not None,
        "no outer or doubled spaces": rule.strip_spaces,
        "non-empty text": rule.nonempty_str,
        "no empty string in a list": rule.nonempty_items,
        "balanced brackets": rule.balanced,
        "one of the seeds' formats" + (" (digit runs of any width)" if rule.any_width else ""): rule.shapes is not None,
        "one group per word": rule.single_groups,
        "no leading zeros": rule.no_leading_zeros,
        "sorted": rule.sorted_lists,
        "distinct elements": rule.distinct_lists,
        "whole floats": rule.whole_floats,
        "not a prime": rule.not_prime,
        "the seeds' fixed words": rule.words is not None,
        f"holds a {rule.presupposes} element, as every seed does": rule.presupposes is not None,
    }
    if rule.alphabet is not None:
        out.append(f"characters {_show_alphabet(rule.alphabet)}")
    out += [name for name, holds in flags.items() if holds]
    if rule.token_length is not None:
        out.append(f"words of {rule.token_length} character{'s' if rule.token_length > 1 else ''}")
    if rule.min_len or rule.max_len is not None:
        out.append(f"length >= {rule.min_len}" + ("" if rule.max_len is None else f", <= {rule.max_len}"))
    return out


def _show_alphabet(alphabet: frozenset[str]) -> str:
    """An alphabet in a few words: whole classes by their range, the other characters listed."""
    parts, rest = [], set(alphabet)
    for pool, name in ((string.ascii_lowercase, "a-z"), (string.ascii_uppercase, "A-Z"), (string.digits, "0-9")):
        if set(pool) <= rest:
            parts.append(name)
            rest -= set(pool)
    if rest:
        parts.append(repr("".join(sorted(rest))))
    return " ".join(parts)


def _past_scale(rule: ArgRule) -> ArgRule:
    low, high = rule.low, rule.high
    if not rule.stated_low and low is not None and low < 0:
        low = None
    if not rule.stated_high and high is not None and high > 0:
        high = None
    return replace(rule, low=low, high=high, any_width=True)


def _wide(rule: ArgRule) -> ArgRule:
    low, high = rule.low, rule.high
    # Where P bounds the number at all ("base numbers are less than 10"), P speaks of its range,
    # and the side of zero the seeds show stays: a negative base is not an edge P leaves open.
    said = rule.stated_low or rule.stated_high or rule.said_positive
    if not said and low is not None and low >= 0:
        low = None
    if not said and high is not None and high <= 0:
        high = None
    return replace(
        rule,
        low=low,
        high=high,
        sorted_lists=rule.sorted_lists and rule.said_sorted,
        distinct_lists=False,
        token_length=None,
        nonempty_str=rule.nonempty_str and rule.said_nonempty,
        nonempty_items=rule.nonempty_items and rule.said_nonempty,
        min_len=rule.min_len if rule.said_nonempty else 0,
    )


def _holds(relation: str, a: Any, b: Any) -> bool:
    try:
        if relation == "same_len":
            return len(a) == len(b)
        if relation.startswith("len_diff:"):
            return len(a) - len(b) == int(relation.split(":")[1])
        if relation == "le":
            return bool(a <= b)
        if relation == "le_len":
            return bool(a <= len(b))
    except TypeError:
        return False
    return True


def _relations(seeds: Sequence[Sequence[Any]], count: int) -> tuple[tuple[str, int, int], ...]:
    if len(seeds) < 3:
        return ()
    found = []
    for i in range(count):
        for j in range(count):
            if i == j:
                continue
            pairs = [(s[i], s[j]) for s in seeds]
            sized = all(isinstance(a, (str, list, tuple)) and isinstance(b, (str, list, tuple)) for a, b in pairs)
            if i < j and sized and all(len(a) == len(b) for a, b in pairs):
                found.append(("same_len", i, j))
            elif i < j and sized and len({len(a) - len(b) for a, b in pairs}) == 1:
                # do_algebra: "the length of operator list is equal to the length of operand list minus one".
                found.append((f"len_diff:{len(pairs[0][0]) - len(pairs[0][1])}", i, j))
            numeric = all(
                isinstance(a, (int, float))
                and isinstance(b, (int, float))
                and not isinstance(a, bool)
                and not isinstance(b, bool)
                for a, b in pairs
            )
            if numeric and all(a <= b for a, b in pairs) and any(a < b for a, b in pairs):
                found.append(("le", i, j))
            counted = all(
                isinstance(a, int) and not isinstance(a, bool) and isinstance(b, (str, list, tuple)) for a, b in pairs
            )
            if counted and all(a <= len(b) for a, b in pairs):
                found.append(("le_len", i, j))
    return tuple(found)


def _check(rule: ArgRule, value: Any) -> str | None:
    if not compatible(signature(value), rule.sigs):
        return f"type {_show(signature(value))} is not one P's examples or T0 use"
    for number in _numbers(value):
        if isinstance(number, float) and not math.isfinite(number):
            return f"{number!r} is not finite"
        if rule.low is not None and number < rule.low:
            return f"{number!r} is below {rule.low:g}"
        if rule.high is not None and number > rule.high:
            return f"{number!r} is above {rule.high:g}"
        if rule.categories is not None and number not in rule.categories:
            return f"{number!r} is not one of {sorted(rule.categories)}"
        if rule.whole_floats and isinstance(number, float) and not number.is_integer():
            return f"{number!r} is not a whole number"
    for text in _strings(value):
        if rule.alphabet is not None and not set(text) <= rule.alphabet:
            extra = "".join(sorted(set(text) - rule.alphabet))
            return f"characters {extra!r} are not in the alphabet of P's examples and T0"
        if rule.strip_spaces and (text != text.strip() or "  " in text):
            return "leading, trailing or doubled whitespace"
        if not text and (rule.nonempty_str if isinstance(value, str) else rule.nonempty_items):
            return "empty string"
        if rule.balanced and not is_balanced(text):
            return f"{text!r} is not balanced"
        if rule.shapes is not None and isinstance(value, str) and not _shaped(rule, text):
            return f"{text!r} has the shape {shape(text)!r}, which no example or T0 input has"
        if rule.single_groups and not all(_one_group(g) for g in text.split()):
            return f"{text!r} runs groups together without a space"
        if rule.no_leading_zeros and _LEADING_ZERO.search(text):
            return f"{text!r} writes a number with a leading zero, which no example or T0 input does"
        if rule.token_length is not None and any(len(t) != rule.token_length for t in text.split()):
            return f"{text!r} has a word not {rule.token_length} character(s) long, as every seed's are"
        if rule.words is not None and isinstance(value, str) and not _keeps_words(rule.words, text):
            return f"{text!r} changes words every example and T0 input writes alike"
    if rule.not_prime and isinstance(value, int) and not isinstance(value, bool) and _is_prime(value):
        return f"{value} is a prime, and P says it is not"
    kind = rule.presupposes
    if kind is not None and isinstance(value, list) and not any(_KINDS[kind](n) for n in _numbers(value)):
        return f"the list holds no {kind} element, and P singles one out as every seed holds one"
    if isinstance(value, (list, str, dict, tuple)):
        if len(value) < rule.min_len:
            return f"length {len(value)} is below {rule.min_len}"
        if rule.max_len is not None and len(value) > rule.max_len:
            return f"length {len(value)} is above {rule.max_len}"
    for items in _lists(value):
        if rule.sorted_lists and not _is_sorted(items):
            return "a list is not sorted"
        if rule.distinct_lists and len({repr(v) for v in items}) != len(items):
            return "a list repeats an element"
    return None


_LETTER_RUN = re.compile(r"[^\W\d_]+")


def _keeps_words(words: tuple[str | None, ...], text: str) -> bool:
    runs = _LETTER_RUN.findall(text)
    return len(runs) == len(words) and all(w is None or w == r for w, r in zip(words, runs, strict=True))


def _fixed_words(texts: Sequence[str]) -> tuple[str | None, ...] | None:
    """The letter runs of formatted strings where every seed writes the same word (None where
    they differ); None when the seeds do not share one sequence of runs or none is fixed."""
    runs = [tuple(_LETTER_RUN.findall(t)) for t in texts]
    if len(runs) < 2 or len({len(r) for r in runs}) != 1 or not runs[0]:
        return None
    words = tuple(column[0] if len(set(column)) == 1 else None for column in zip(*runs, strict=True))
    return words if any(w is not None for w in words) else None


def _shaped(rule: ArgRule, text: str) -> bool:
    if rule.shapes is None:
        return True
    if not rule.any_width:
        return shape(text) in rule.shapes
    return _DIGIT_RUN.sub("d", shape(text)) in {_DIGIT_RUN.sub("d", s) for s in rule.shapes}


_DIGIT_RUN = re.compile(r"d+")


def _show(sig: Sig) -> str:
    if sig[0] == "list":
        return "list[" + "|".join(sorted(_show(s) for s in sig[1])) + "]"
    if sig[0] == "tuple":
        return "tuple[" + ", ".join(_show(s) for s in sig[1]) + "]"
    if sig[0] == "dict":
        return "dict"
    return str(sig[0])


_RANGE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(<=?|≤)\s*([A-Za-z_][\w\[\]()]*)\s*(<=?|≤)\s*(-?\d+(?:\.\d+)?)")


def _text_ranges(prompt: str, names: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``1 <= n <= 100`` and the like, for argument names (and ``len(name)``)."""
    found: dict[str, tuple[float, float]] = {}
    for low, op1, target, op2, high in _RANGE.findall(prompt):
        lo, hi = float(low), float(high)
        if op1 == "<":
            lo += 1
        if op2 == "<":
            hi -= 1
        found[target] = (lo, hi)
    out: dict[str, tuple[float, float]] = {}
    for target, bounds in found.items():
        inner = target[4:-1] if target.startswith("len(") and target.endswith(")") else target
        # P may shorten a parameter's name ("1 <= num <= 1000" for `number`).
        matches = [n for n in names if n == inner] or [n for n in names if n.startswith(inner) or inner.startswith(n)]
        if len(matches) == 1:
            out[f"len({matches[0]})" if inner != target else matches[0]] = bounds
    return out


_COMPARE = {"<": "lt", "<=": "le", "≤": "le", ">": "gt", ">=": "ge", "≥": "ge"}
_WORDS = {
    "less than": "lt",
    "less then": "lt",
    "smaller than": "lt",
    "smaller then": "lt",
    "below": "lt",
    "greater than": "gt",
    "larger than": "gt",
    "larger then": "gt",
    "more than": "gt",
    "greater then": "gt",
    "more then": "gt",
    "above": "gt",
    "at most": "le",
    "at least": "ge",
}


def _text_bounds(prompt: str, names: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """One-sided bounds P states for an argument: ``n > 1``, "base numbers are less than 10"."""
    found: dict[str, list[tuple[str, float]]] = {}
    words = "|".join(_WORDS)
    for name in names:
        # The number ends there: not a decimal, not a power such as 10^3.
        number = r"(-?\d+(?:\.\d+)?)(?!\w|\.\d|\s*(?:\^|\*\*))"
        symbolic = re.compile(rf"(?<![\w.]){re.escape(name)}\s*(<=|>=|<|>|≤|≥)\s*{number}")
        # The name may stand in brackets or quotes ("(a) is less then 100").
        spoken = re.compile(rf"(?<![\w.]){re.escape(name)}\b[)\]'\"`]?(?:\s+\w+){{0,3}}?\s+(?:{words})\s+{number}")
        for op, number in symbolic.findall(prompt):
            found.setdefault(name, []).append((_COMPARE[op], float(number)))
        for match in spoken.finditer(prompt):
            phrase = next(w for w in _WORDS if w in match.group(0).lower())
            found.setdefault(name, []).append((_WORDS[phrase], float(match.group(1))))
    return found


def _bound_holds(op: str, value: float, bound: float) -> bool:
    return {"lt": value < bound, "le": value <= bound, "gt": value > bound, "ge": value >= bound}[op]


def _apply_bounds(rule: ArgRule, bounds: list[tuple[str, float]], values: list[Any]) -> tuple[ArgRule, list[str]]:
    """Tighten ``rule`` by P's one-sided bounds that every seed of the argument keeps (a bound a
    seed breaks is a misreading of P's text, and is dropped)."""
    numbers = [n for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) for n in [v]]
    if not numbers or len(numbers) != len(values):
        return rule, []
    low, high = rule.low, rule.high
    stated_low, stated_high = rule.stated_low, rule.stated_high
    kept = []
    for op, bound in bounds:
        if not all(_bound_holds(op, n, bound) for n in numbers):
            continue
        whole = all(isinstance(n, int) for n in numbers)
        if op in ("gt", "ge"):
            edge = bound + 1 if op == "gt" and whole else bound
            low = edge if low is None else max(low, edge)
            stated_low = True
        else:
            edge = bound - 1 if op == "lt" and whole else bound
            high = edge if high is None else min(high, edge)
            stated_high = True
        kept.append(f"{rule.name} {op} {bound:g}")
    return replace(rule, low=low, high=high, stated_low=stated_low, stated_high=stated_high), kept


def infer(
    prompt: str,
    names: Sequence[str],
    seeds: Sequence[Sequence[Any]],
    outputs: Iterable[Any] = (),
    examples: Sequence[Sequence[Any]] = (),
) -> Preconditions:
    """Preconditions from the prompt's text and the seeds (examples and T0 inputs).

    Args:
        prompt: P, HumanEval's prompt (signature and docstring).
        names: The entry point's parameter names, in order.
        seeds: Valid inputs: argument lists from the prompt's examples and T0.
        outputs: G's outputs on the seeds, for the output-type check.
        examples: The arguments of P's own examples (also among ``seeds``). A bound P states in
            words is a misreading when one of P's examples breaks it; where P gives examples
            that keep it, T0's inputs past it do not undo it (T0 tests beyond what P asks).

    Returns:
        The preconditions; an argument no seed shows is left unconstrained but for its name.
    """
    text = prompt.lower()
    ranges = _text_ranges(prompt, names)
    rules: list[ArgRule] = []
    notes: list[str] = []
    usable = [list(s) for s in seeds if len(s) == len(names)]
    for index, name in enumerate(names):
        values = [s[index] for s in usable]
        if not values:
            rules.append(ArgRule(name, frozenset()))
            continue
        rules.append(_rule(name, values, text, ranges))
    # Lists of one kind that repeat an element in one argument may in another (common(l1, l2):
    # T0 repeats 5 in l2, so l1 may repeat it too).
    repeating = {
        rules[i].sigs
        for i in range(len(rules))
        for s in usable
        if isinstance(s[i], list) and len({repr(x) for x in s[i]}) < len(s[i])
    }
    rules = [
        replace(r, distinct_lists=False) if r.distinct_lists and any(r.sigs & sigs for sigs in repeating) else r
        for r in rules
    ]
    if ranges:
        notes.append("ranges stated in P: " + ", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in ranges.items()))
    bounds = _text_bounds(prompt, names)
    stated = []
    own = [list(e) for e in examples if len(e) == len(names)]
    for index, name in enumerate(names):
        if name in bounds and name not in ranges and rules[index].sigs:
            judges = own if own and WIDENING.bounds_over_t0 else usable
            rules[index], kept = _apply_bounds(rules[index], bounds[name], [s[index] for s in judges])
            stated += kept
    if stated:
        notes.append("bounds stated in P: " + ", ".join(stated))
    relations = _relations(usable, len(names))
    if relations:
        notes.append(
            "relations every seed holds: " + ", ".join(f"{r}({names[i]}, {names[j]})" for r, i, j in relations)
        )
    return Preconditions(tuple(rules), frozenset(signature(o) for o in outputs), relations, tuple(notes))


def _widened(alphabet: frozenset[str]) -> frozenset[str]:
    """The seeds' characters, with a whole class added when the seeds already use much of it
    (4 digits, or ``WIDENING.letter_class`` letters of one case): a class seen that widely is
    not a restriction."""
    out = set(alphabet)
    letters = WIDENING.letter_class
    for pool, enough in ((string.digits, 4), (string.ascii_lowercase, letters), (string.ascii_uppercase, letters)):
        if len(alphabet & set(pool)) >= enough:
            out |= set(pool)
    return frozenset(out)


def _alphabet(strings: Sequence[str], text: str) -> frozenset[str] | None:
    """The characters an argument's strings may use: the seeds', their classes widened; where P
    says nothing of case, the other case too, unless the seeds' letters are many and all one case
    (``Widening.keep_case``)."""
    if not any(strings):
        return None
    alphabet = _widened(frozenset("".join(strings)))
    if _CASE_WORDS.search(text) is not None:
        return alphabet
    letters = [c for t in strings for c in t if c.isalpha() and c.isascii()]
    one_case = all(c.islower() for c in letters) or all(c.isupper() for c in letters)
    keeps = WIDENING.keep_case == "always" or (WIDENING.keep_case == "letters" and _LETTER_WORDS.search(text))
    if keeps and one_case and len(letters) >= CASE_EVIDENCE:
        return alphabet
    # P says nothing of case: a letter's other case is a letter P allows as well.
    return _widened(alphabet | {c.swapcase() for c in alphabet if c.isalpha() and c.isascii()})


def _token_length(strings: Sequence[str]) -> int | None:
    """The one length of every whitespace-separated token of strings that hold several, when
    the seeds show enough of them (``Widening.token_length``)."""
    tokens = [t for s in strings if len(s.split()) > 1 for t in s.split()]
    lengths = {len(t) for t in tokens}
    if not WIDENING.token_length or len(tokens) < TOKEN_EVIDENCE or len(lengths) != 1:
        return None
    return lengths.pop()


def _rule(name: str, values: list[Any], text: str, ranges: dict[str, tuple[float, float]]) -> ArgRule:
    numbers = [n for v in values for n in _numbers(v)]
    low = high = None
    categories = None
    said_positive = False
    if numbers:
        lo, hi = min(numbers), max(numbers)
        # Stay on the seeds' side of zero; widen the range outwards, never across the sign.
        # Far outwards: a trial may be right up to a size (recursion past a thousand levels).
        # Seeds at or above zero open downwards: floats to zero, whole numbers to 1, or to zero
        # (``Widening.zero``); to the least positive value where P says "positive".
        whole_numbers = all(isinstance(n, int) for n in numbers)
        floor = 0 if WIDENING.zero or not whole_numbers else min(lo, 1)
        low = floor if lo >= 0 else lo - max(10 * abs(lo), 100)
        high = hi + max(10 * abs(hi), 100) if hi > 0 else (hi if hi < 0 else 100)
        said_positive = ("positive" in text or "natural" in text) and lo > 0
        if said_positive:
            low = 1 if whole_numbers else min(lo, 1e-3)
        distinct = set(numbers)
        if len(distinct) <= 3 and len(numbers) >= 8:
            categories = frozenset(distinct)
    stated = name in ranges
    if stated:
        low, high = ranges[name]
    strings = [s for v in values for s in _strings(v)]
    alphabet = _alphabet(strings, text)
    # Whitespace shape binds unless P itself speaks of spaces ("keep the order of words and blank spaces").
    speaks_of_spaces = re.search(r"\b(?:spaces?|blanks?|whitespaces?)\b", text) is not None
    strip = bool(strings) and not speaks_of_spaces and all(s == s.strip() and "  " not in s for s in strings)
    says_nonempty = "non-empty" in text or "nonempty" in text or "not empty" in text
    direct_strings = [v for v in values if isinstance(v, str)]
    items = [s for v in values if not isinstance(v, str) for s in _strings(v)]
    nonempty_str = bool(direct_strings) and all(direct_strings) and (says_nonempty or not WIDENING.empty)
    nonempty_items = bool(items) and all(items) and (says_nonempty or not WIDENING.empty_items)
    # P speaks of balanced or nested brackets and every seed is balanced: an unbalanced string is
    # not the "groups of nested parentheses" P describes.
    bracket_words = ("balanced", "nested", "parenthes", "bracket")
    bracketed = any(ch in _BRACKETS for s in strings for ch in s)
    balanced = (
        bool(strings) and bracketed and any(w in text for w in bracket_words) and all(is_balanced(s) for s in strings)
    )
    direct = [v for v in values if isinstance(v, str)]
    # A format binds when most string seeds have digits (dates, fractions, "5 apples and 6 oranges"),
    # not when a digit turns up in some of a task's free text ("Example 1").
    formatted = [v for v in direct if any(ch.isdigit() for ch in v)]
    shapes = frozenset(shape(v) for v in direct) if direct and len(formatted) * 4 >= len(direct) * 3 else None
    words = _fixed_words(direct) if shapes is not None and WIDENING.fixed_words else None
    lengths = [len(v) for v in values if isinstance(v, (list, str, tuple, dict))]
    min_len = min(lengths) if lengths and min(lengths) > 0 else 0
    # Seeds of two or more elements leave one element open (P asks for "a list", and a mean of
    # one number is that number), and none leaves the empty one out unless P does.
    min_len = min(min_len, 1) if min_len and not WIDENING.empty else 0
    if says_nonempty:
        min_len = max(min_len, 1)
    # No length cap of the seeds' own: a wrong trial may be right up to some size (a table of the
    # primes below 100). Generation keeps most values near the seeds' sizes.
    max_len = None
    len_key = f"len({name})"
    if len_key in ranges:
        min_len = max(min_len, int(ranges[len_key][0]))
        max_len = min(max_len or 10**6, int(ranges[len_key][1]))
    lists = [items for v in values for items in _lists(v) if len(items) >= 2]
    long_lists = [items for items in lists if len(items) >= 3]
    said_sorted = "sorted" in text or "ascending" in text or "increasing" in text
    sorted_lists = bool(lists) and all(_is_sorted(i) for i in lists) and (len(long_lists) >= 3 or said_sorted)
    distinct_lists = (
        bool(long_lists) and len(long_lists) >= 3 and all(len({repr(x) for x in i}) == len(i) for i in lists)
    )
    floats = [n for n in numbers if isinstance(n, float)]
    whole = bool(floats) and all(f.is_integer() for f in floats) and len(floats) >= 3
    single_groups = balanced and all(_one_group(g) for t in strings for g in t.split())
    digit_strings = [t for t in strings if any(ch.isdigit() for ch in t)]
    no_leading_zeros = bool(digit_strings) and not any(_LEADING_ZERO.search(t) for t in digit_strings)
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    not_prime = (
        bool(ints)
        and len(ints) == len(values)
        and _NOT_PRIME.search(text) is not None
        and not any(map(_is_prime, ints))
    )
    return ArgRule(
        name=name,
        sigs=frozenset(signature(v) for v in values),
        low=low,
        high=high,
        categories=categories,
        alphabet=alphabet,
        strip_spaces=strip,
        nonempty_str=nonempty_str,
        nonempty_items=nonempty_items,
        balanced=balanced,
        min_len=min_len,
        max_len=max_len,
        sorted_lists=sorted_lists,
        distinct_lists=distinct_lists,
        whole_floats=whole,
        shapes=shapes,
        single_groups=single_groups,
        no_leading_zeros=no_leading_zeros,
        not_prime=not_prime,
        presupposes=_presupposed(values, text),
        token_length=_token_length(strings),
        words=words,
        stated_low=stated,
        stated_high=stated,
        said_positive=said_positive,
        said_sorted=said_sorted,
        said_nonempty=says_nonempty or len_key in ranges,
    )
