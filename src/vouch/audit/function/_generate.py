"""Structure-aware input generation from the seeds' types and the preconditions; pure, seeded.

Mutation (``_inputs``) stays close to the seeds. These generators reach what mutation rarely
does, still inside what the preconditions admit (every proposal is filtered by
``Preconditions.admits`` here, and by G's behaviour later):

* **edges**: each argument of each seed replaced by the edge values of its type (0, 1, -1,
  the allowed floor and ceiling; the empty string or list, one element, the seed doubled,
  reversed, sorted; every element equal; each number written in a formatted string moved to
  its edges or to the number another seed writes there);
* **sizes**: values of every small length, and a few long ones (a wrong trial may be right
  up to a size, e.g. a table of primes below 100);
* **random**: fresh values built from the seeds' signature, with elements, characters and
  words drawn from the seeds (balanced brackets stay balanced, formatted strings keep their
  format, sorted lists stay sorted), and arguments crossed between seeds;
* **scaled**: the seeds taken past their own scale where P states no bound (numbers ten to a
  thousand times the largest magnitude a seed shows, digit runs of formatted strings wider,
  strings and lists hundreds of elements long), filtered by ``Preconditions.past_scale``: a wrong
  trial is often right up to the sizes its author tried.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vouch.audit.function._inputs import Args, admitted, key
from vouch.audit.function._preconditions import ArgRule, Preconditions, is_balanced
from vouch.audit.function._preconditions import _numbers as numbers_of

LONG = 120
"""The length of a 'long' generated string or list, unless P bounds it."""
SMALL_SIZES = 24
"""``sizes`` tries every length up to this one."""


@dataclass
class _Values:
    """What the seeds show of one argument position (or of the elements of a list there)."""

    values: list[Any] = field(default_factory=list)

    def of(self, kind: type) -> list[Any]:
        return [v for v in self.values if type(v) is kind]


def _flat_elements(values: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, list):
            out += v
    return out


def _int_range(rule: ArgRule, ints: Sequence[int]) -> tuple[int, int]:
    lo = int(rule.low) if rule.low is not None else min([*ints, 0]) - 10
    hi = int(rule.high) if rule.high is not None else max([*ints, 0]) + 10
    return lo, max(lo, hi)


def _edge_ints(rule: ArgRule, value: int, ints: Sequence[int]) -> list[int]:
    lo, hi = _int_range(rule, ints)
    out = [0, 1, 2, -1, -2, lo, lo + 1, hi, hi - 1, value + 1, value - 1, value * 2, -value, value * 10 + 1]
    out += [sign * 10**k + d for k in range(2, 7) for d in (0, 1) for sign in (1, -1)]
    return [v for v in out if lo <= v <= hi]


def _edge_floats(value: float) -> list[float]:
    return [0.0, 1.0, -1.0, 0.5, -0.5, value + 1.0, value - 1.0, -value, value * 2, value / 3, value + 0.05]


def _edge_strings(value: str, rule: ArgRule) -> list[str]:
    alphabet = sorted(rule.alphabet) if rule.alphabet else sorted(set(value) or "a")
    letters = [c for c in alphabet if c.isalpha()] or alphabet
    out = ["", value[:1], value[-1:], value + value, value[::-1], value * 3, value[: len(value) // 2]]
    out += [c for c in alphabet[:40]]
    out += [letters[0] * n for n in (2, 3, 4)]
    if value:
        out += [value.upper(), value.lower(), value.swapcase(), "".join(sorted(value)), value[1:], value[:-1]]
        out += [value[:1].swapcase() + value[1:], value[:-1] + value[-1:].swapcase(), value.title()]
        out += [value + value[-1], value[0] + value]
        words = value.split(" ")
        if len(words) > 1:
            out += [" ".join(reversed(words)), "  ".join(words), " " + value, value + " ", words[0], words[-1]]
    return out


def _edge_runs(value: str, others: Sequence[str]) -> list[str]:
    """A formatted string with one run of digits moved, its width kept: to zero, one and all
    nines, one up and one down, and to the run at the same place in another seed of its shape
    (a month from one date with the day of another)."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"\d+", value)]
    out: list[str] = []
    for index, (start, end) in enumerate(runs):
        width, number = end - start, int(value[start:end])
        texts = ["0" * width, "1".zfill(width), "9" * width, str(number + 1).zfill(width)]
        texts += [str(number - 1).zfill(width)] if number else []
        for other in others:
            found = re.findall(r"\d+", other)
            if len(found) == len(runs) and found[index] != value[start:end]:
                texts.append(found[index][-width:].zfill(width))
        out += [value[:start] + t + value[end:] for t in texts if len(t) == width]
    return out


def _edge_lists(value: list[Any], elements: Sequence[Any]) -> list[list[Any]]:
    out: list[list[Any]] = [[], value + value, value[::-1], value[: len(value) // 2], value[1:], value[:-1]]
    pool = list(value) or list(elements)
    for x in pool[:6]:
        out += [[x], [x, x], [x] * len(value or [1, 1, 1])]
    if value:
        out += [[*value, value[0]], [value[-1], *value], value[:1] * 2 + value[1:]]
        try:
            out += [sorted(value), sorted(value, reverse=True)]
        except TypeError:
            pass
        numbers = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers and len(numbers) == len(value):
            out += [[-v for v in value], [v + 1 for v in value], [v * 2 for v in value], [0 for _ in value]]
    return out


def _edge_values(value: Any, rule: ArgRule, seen: _Values) -> list[Any]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return list(_edge_ints(rule, value, seen.of(int)))
    if isinstance(value, float):
        return list(_edge_floats(value))
    if isinstance(value, str):
        runs = _edge_runs(value, seen.of(str)) if rule.shapes is not None else []
        return runs + list(_edge_strings(value, rule))
    if isinstance(value, list):
        return list(_edge_lists(value, _flat_elements(seen.values)))
    return []


def _positions(seeds: Sequence[Args], rules: Preconditions) -> list[_Values]:
    return [_Values([s[i] for s in seeds if i < len(s)]) for i in range(len(rules.args))]


def edges(seeds: Sequence[Args], rules: Preconditions, limit: int) -> list[Args]:
    """Each argument of each seed replaced by the edge values of its type (admitted ones)."""
    seen = {key(s) for s in seeds}
    at = _positions(seeds, rules)
    candidates: list[Args] = []
    for seed in seeds:
        for i, rule in enumerate(rules.args[: len(seed)]):
            for value in _edge_values(seed[i], rule, at[i]):
                candidates.append([*seed[:i], value, *seed[i + 1 :]])
    return admitted(candidates, rules, seen, limit)


def _length_cap(rule: ArgRule) -> int:
    return min(rule.max_len, LONG * 4) if rule.max_len is not None else LONG


def sizes(seeds: Sequence[Args], rules: Preconditions, rng: random.Random, limit: int) -> list[Args]:
    """Sized arguments stretched or cut to every length up to 24, and to a few long lengths."""
    seen = {key(s) for s in seeds}
    candidates: list[Args] = []
    for seed in seeds:
        for i, rule in enumerate(rules.args[: len(seed)]):
            value = seed[i]
            if not isinstance(value, (str, list)) or not value:
                continue
            cap = _length_cap(rule)
            lengths = [*range(0, min(cap, SMALL_SIZES) + 1), cap // 2, cap - 1, cap]
            for n in lengths:
                if isinstance(value, str):
                    stretched: Any = (value * (n // len(value) + 1))[:n]
                else:
                    stretched = [value[j % len(value)] for j in range(n)]
                    if rule.sorted_lists:
                        try:
                            stretched = sorted(stretched)
                        except TypeError:
                            continue
                candidates.append([*seed[:i], stretched, *seed[i + 1 :]])
    rng.shuffle(candidates)
    return admitted(candidates, rules, seen, limit)


MADE_DEPTH = 4
"""Levels of nesting a fresh value is made anew to; deeper, a seed's own value is taken whole
(a value made anew at every level of a list nested 150 deep would never end)."""


class _Maker:
    """Fresh values for one argument position, shaped like its seeds."""

    def __init__(self, rule: ArgRule, values: Sequence[Any], rng: random.Random, depth: int = 0) -> None:
        self.rule = rule
        self.depth = depth
        self.values = list(values)
        self.rng = rng
        self.strings = [v for v in values if isinstance(v, str)]
        self.chars = "".join(self.strings) or string.ascii_lowercase
        self.elements = _flat_elements(values)
        self.inner: _Maker | None = None
        if self.elements and depth < MADE_DEPTH:
            inner_rule = ArgRule(rule.name, frozenset(), low=rule.low, high=rule.high)
            self.inner = _Maker(inner_rule, self.elements, rng, depth + 1)

    def length(self, longest: int) -> int:
        cap = _length_cap(self.rule)
        if self.rng.random() < 0.1:
            return self.rng.randint(min(longest * 2, cap), cap) if cap > longest * 2 else cap
        return self.rng.randint(self.rule.min_len, max(self.rule.min_len, min(cap, max(longest + 3, 6))))

    def make(self) -> Any:
        if not self.values:
            return None
        template = self.rng.choice(self.values)
        if self.depth >= MADE_DEPTH:
            return template
        if isinstance(template, bool):
            return self.rng.random() < 0.5
        if isinstance(template, int):
            return self._int()
        if isinstance(template, float):
            return self._float()
        if isinstance(template, str):
            return self._string(template)
        if isinstance(template, list):
            return self._list(template)
        if isinstance(template, tuple):
            return tuple(self.rng.choice([v, self._like(v)]) for v in template)
        return template

    def _like(self, value: Any) -> Any:
        return _Maker(self.rule, [value], self.rng, self.depth + 1).make()

    def _int(self) -> int:
        ints = [v for v in self.values if isinstance(v, int) and not isinstance(v, bool)]
        ints += [v for v in self.elements if isinstance(v, int) and not isinstance(v, bool)]
        lo, hi = _int_range(self.rule, ints)
        roll = self.rng.random()
        if roll < 0.4:
            return self.rng.randint(max(lo, -10), max(min(hi, 10), max(lo, -10)))
        if roll < 0.7 and ints:
            return self.rng.choice(ints) + self.rng.randint(-3, 3)
        if roll < 0.85:
            return self.rng.randint(lo, hi)
        # Log-uniform: large values as often as small ones.
        top = max(abs(lo), abs(hi), 1)
        magnitude = int(10 ** self.rng.uniform(0, max(1.0, len(str(top)) - 1)))
        value = magnitude if lo >= 0 or self.rng.random() < 0.5 else -magnitude
        return min(max(value, lo), hi)

    def _float(self) -> float:
        floats = [v for v in self.values if isinstance(v, float)] or [1.0]
        lo = self.rule.low if self.rule.low is not None else min(floats) - 10
        hi = self.rule.high if self.rule.high is not None else max(floats) + 10
        value = self.rng.uniform(lo, hi)
        if self.rule.whole_floats:
            return float(round(value))
        return round(value, self.rng.choice([1, 1, 2, 3]))

    def _string(self, template: str) -> str:
        rule = self.rule
        if rule.shapes is not None and any(ch.isdigit() for ch in template):
            return self._formatted(template)
        if rule.balanced:
            return self._brackets(template)
        n = self.length(max(len(s) for s in self.strings))
        pool = [c for c in self.chars if c != " "] or list(string.ascii_lowercase)
        if self.rng.random() < 0.3:
            # A small alphabet makes repeats, palindromes, rotations and matches likely.
            pool = self.rng.sample(sorted(set(pool)), min(len(set(pool)), self.rng.randint(1, 3)))
        if " " in self.chars and n > 2:
            out: list[str] = []
            while len(" ".join(out)) < n:
                out.append("".join(self.rng.choice(pool) for _ in range(self.rng.randint(1, 7))))
            text = " ".join(out)[:n].strip() if rule.strip_spaces else " ".join(out)[:n]
            return text
        return "".join(self.rng.choice(pool) for _ in range(n))

    def _formatted(self, template: str) -> str:
        out = []
        for ch in template:
            if ch.isdigit():
                out.append(self.rng.choice(string.digits))
            elif ch.isalpha() and self.rng.random() < 0.3:
                out.append(self.rng.choice([c for c in self.chars if c.isalpha()] or [ch]))
            else:
                out.append(ch)
        return "".join(out)

    def _brackets(self, template: str) -> str:
        pairs = [(o, c) for o, c in ("()", "[]", "{}", "<>") if o in self.chars or c in self.chars] or [("(", ")")]
        grouped = " " in template

        def group(depth: int) -> str:
            o, c = self.rng.choice(pairs)
            inner = "".join(group(depth + 1) for _ in range(self.rng.randint(0, 2 if depth < 4 else 0)))
            return o + inner + c

        count = self.rng.randint(1, 5)
        if grouped or self.rule.single_groups:
            return " ".join(group(0) for _ in range(count))
        text = "".join(group(0) for _ in range(count))
        return text if is_balanced(text) else template

    def _list(self, template: list[Any]) -> list[Any]:
        longest = max(len(v) for v in self.values if isinstance(v, list))
        n = self.length(longest)
        if self.inner is None:
            return []
        items = [self.inner.make() for _ in range(n)]
        if self.rule.distinct_lists:
            unique: list[Any] = []
            for x in items:
                if x not in unique:
                    unique.append(x)
            items = unique
        if self.rule.sorted_lists:
            try:
                items = sorted(items)
            except TypeError:
                return list(template)
        return items


def fresh(seeds: Sequence[Args], rules: Preconditions, rng: random.Random, limit: int, tries: int = 6) -> list[Args]:
    """Inputs built anew from the seeds' shapes, and seeds crossed argument by argument."""
    seen = {key(s) for s in seeds}
    at = _positions(seeds, rules)
    makers = [_Maker(rule, at[i].values, rng) for i, rule in enumerate(rules.args)]
    out: list[Args] = []
    for _ in range(limit * tries):
        if len(out) >= limit:
            break
        roll = rng.random()
        if roll < 0.1 and len(rules.args) > 1:
            args = _derived(rng.choice(seeds), rng)
        elif roll < 0.25 and len(seeds) > 1:
            # Crossing: each argument from some seed, so relations between arguments get tried.
            args = [rng.choice(seeds)[i] for i in range(len(rules.args))]
        elif roll < 0.5 and seeds:
            base = list(rng.choice(seeds))
            i = rng.randrange(len(base))
            base[i] = makers[i].make()
            args = base
        else:
            args = [m.make() for m in makers]
        out += admitted([args], rules, seen, 1)
    return out


def _derived(seed: Args, rng: random.Random) -> Args:
    """One sized argument made from another (a piece, rotated, reversed or sorted), so that
    relations such as "b is a substring of a" hold far more often than by chance."""
    sized = [i for i, v in enumerate(seed) if isinstance(v, (str, list))]
    if len(sized) < 2:
        return list(seed)
    i, j = rng.sample(sized, 2)
    source = seed[i]
    if type(source) is not type(seed[j]) or not source:
        return list(seed)
    start = rng.randrange(len(source))
    piece = source[start : start + rng.randint(1, len(source))]
    turn = rng.randrange(len(piece)) if piece else 0
    options = [piece, piece[turn:] + piece[:turn], piece[::-1], source]
    if isinstance(source, str):
        options.append("".join(sorted(piece)))
    out = list(seed)
    out[j] = rng.choice(options)
    return out


SCALES = (10, 100, 1000)
"""How far past the seeds' largest magnitude ``scaled`` takes a number."""
MAX_SCALED = 10**6
"""The largest magnitude ``scaled`` makes, unless a seed's is already larger (G must still answer quickly)."""
FAR_LENGTHS = (300, 1000)
"""The lengths ``scaled`` stretches strings and lists to, unless P bounds them."""


def scaled(seeds: Sequence[Args], rules: Preconditions, rng: random.Random, limit: int) -> list[Args]:
    """The seeds past their own scale, one argument at a time and every argument at once; only
    inputs the rules without the seeds' scale admit (``Preconditions.past_scale``)."""
    wide = rules.past_scale()
    at = _positions(seeds, rules)
    tops = [max([abs(n) for value in v.values for n in numbers_of(value)] + [10]) for v in at]
    candidates: list[Args] = []
    for seed in seeds:
        together: list[list[Any]] = [list(seed) for _ in SCALES]
        for i, rule in enumerate(wide.args[: len(seed)]):
            far = _far_values(seed[i], rule, tops[i], rng)
            candidates += [[*seed[:i], value, *seed[i + 1 :]] for value in far]
            for step, value in enumerate(far[: len(SCALES)]):
                together[step][i] = value
        candidates += together
    rng.shuffle(candidates)
    return admitted(candidates, wide, {key(s) for s in seeds}, limit)


def _far_values(value: Any, rule: ArgRule, top: float, rng: random.Random) -> list[Any]:
    """Values like ``value`` past the scale ``top`` (the largest magnitude the seeds show there);
    the first ``len(SCALES)`` are one per scale, in order."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [_far_number(value or 1, top, f, rng) for f in SCALES * 2]
    if isinstance(value, str):
        if rule.shapes is not None and any(ch.isdigit() for ch in value):
            digits = sorted(c for c in (rule.alphabet or string.digits) if c.isdigit()) or list(string.digits)
            return [_wider_runs(value, extra, digits, rng) for extra in (1, 2, 3)]
        lengths = [n for n in FAR_LENGTHS if rule.max_len is None or n <= rule.max_len]
        return [_stretched(value, n, rng) for n in lengths] if value else []
    if isinstance(value, list) and value:
        return _far_lists(value, rule, top, rng)
    return []


def _far_lists(value: list[Any], rule: ArgRule, top: float, rng: random.Random) -> list[list[Any]]:
    out: list[list[Any]] = []
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        out += [[_far_number(v, top, f, rng) for v in value] for f in SCALES]
    if not rule.distinct_lists:
        lengths = [n for n in FAR_LENGTHS if rule.max_len is None or n <= rule.max_len]
        out += [[rng.choice(value) for _ in range(n)] for n in lengths]
    if rule.sorted_lists:
        try:
            out = [sorted(items) for items in out]
        except TypeError:
            return []
    return out


def _far_number(value: int | float, top: float, factor: int, rng: random.Random) -> int | float:
    """A number of ``value``'s type and sign, between a tenth of ``top * factor`` and that (capped
    at ``MAX_SCALED`` unless the seeds are larger); zero stays zero."""
    far = min(top * factor, max(MAX_SCALED, top * 10))
    sign = -1 if value < 0 else 1
    if isinstance(value, float):
        return sign * round(rng.uniform(far / 10, far), 2) if value else 0.0
    return sign * rng.randint(int(far) // 10 + 1, int(far)) if value else 0


def _wider_runs(text: str, extra: int, digits: Sequence[str], rng: random.Random) -> str:
    """Each run of digits in ``text`` ``extra`` digits wider (new digits first, never a leading zero)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if not text[i].isdigit():
            out.append(text[i])
            i += 1
            continue
        j = i
        while j < len(text) and text[j].isdigit():
            j += 1
        nonzero = [d for d in digits if d != "0"] or ["1"]
        out.append(rng.choice(nonzero) + "".join(rng.choice(digits) for _ in range(extra - 1)) + text[i:j])
        i = j
    return "".join(out)


def _stretched(text: str, n: int, rng: random.Random) -> str:
    if " " in text:
        words = text.split()
        return " ".join(rng.choice(words) for _ in range(n // max(1, len(text) // max(1, len(words)))))[:n].strip()
    return "".join(rng.choice(text) for _ in range(n))


Generator = Callable[[Sequence[Args], Preconditions, random.Random, int], list[Args]]
