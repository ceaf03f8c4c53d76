"""The ``offline`` witness source at function level: differential testing against G, inside P.

Per task, inputs are generated from seeds (T0's inputs and P's examples; P's examples alone
when T0 is hidden) by type-aware mutation, kept inside the preconditions, and G is run on
them once: an input on which G raises, runs away or returns an off-type value is dropped.
Level 1 mutates the seeds, level 2 mutates level 1, level 3 mutates both again: iteration i
of the generate-and-validate loop looks for a difference among levels 1..i.
"""

from __future__ import annotations

import ast
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vouch.audit.function import _generate, _inputs
from vouch.audit.function._preconditions import Preconditions, infer, shape
from vouch.audit.function._prompt import Example, apply_wrapper
from vouch.core import equal
from vouch.exec import Call, Limits, RunResult, RunSpec, from_data
from vouch.sources.trials import Problem

OUTPUT_LIMITS = Limits(timeout_s=60.0, memory_mb=512)
RUN_BUDGET_S = 20.0
"""Seconds one run may spend calling a program on its pool; the calls after are skipped."""
QUICK_S = 0.1
"""G answers in at most this on an input for a trial's timeout there to count as a difference."""
WITHIN_S = 2.0
"""A timing witness asks for an answer within this (20 times what G needs at most)."""
PAST_LENGTH = 10
"""An argument more than this many times as long as the seeds' longest there (and longer than
``_generate``'s small sizes) is past the seeds' scale, as numbers past their magnitude are."""


@dataclass
class Pool:
    """Valid generated inputs of a task, with G's output on each (the required value)."""

    rules: Preconditions
    inputs: list[tuple[int, list[Any], Any]] = field(default_factory=list)
    """(level, args, G's output)."""
    dropped: int = 0
    """Generated inputs G rejected (raised, ran away, off-type output)."""
    shape_outputs: dict[tuple[int, str], list[Any]] = field(default_factory=dict)
    """(argument, string shape) -> G's outputs on the seeds of that shape."""
    wrapper: str | None = None
    """``tuple`` or ``list`` when T0 compares ``tuple(candidate(x))``: outputs are compared so too."""
    slow: dict[str, float] = field(default_factory=dict)
    """Keys of inputs G took more than ``QUICK_S`` on, with its time (no ground for a timing witness)."""
    explicit: set[str] = field(default_factory=set)
    """Keys of P's own examples whose stated value G gives: requirements P states (never ambiguous)."""
    conflicts: list[str] = field(default_factory=list)
    """P's own examples G answers otherwise (a finding about G; no witness rests on them)."""
    past_scale: set[str] = field(default_factory=set)
    """Keys of inputs past the seeds' scale (``_generate.scaled``): valid by ``rules.past_scale()``."""
    wide: set[str] = field(default_factory=set)
    """Keys of inputs on the edges the seeds leave out and P's words do not (``rules.wide()``):
    evidence only where the jury of trials confirms G's answer (``_trial.unconfirmed``)."""

    def admits(self, args: Sequence[Any]) -> str | None:
        """The first precondition ``args`` breaks (None when it holds them all); an input past
        the seeds' scale is held to the rules without that scale, one on the domain's edges to
        the wide rules."""
        problem = self.rules.admits(args)
        if problem is not None and _inputs.key(args) in self.past_scale:
            return self.rules.past_scale().admits(args)
        if problem is not None and _inputs.key(args) in self.wide:
            return self.rules.wide().admits(args)
        return problem

    def only_past_scale(self, args: Sequence[Any], actual: Any) -> str | None:
        """Why a difference is a question of scale (None when it is not): the trial runs out of
        time, recursion depth or memory, and only on an input past the seeds' scale. P's examples
        and T0 show no such size, so whether P asks for it is a reading of P, not a defect."""
        if _inputs.key(args) not in self.past_scale or not isinstance(actual, str):
            return None
        if not actual.startswith(tuple(f"raised {e}" for e in ("timeout", "RecursionError", *RESOURCE_ERRORS))):
            return None
        what = "gives no answer in time" if actual == "raised timeout" else actual
        return (
            f"the trial {what} only on an input past the scale of P's examples and T0's inputs, where it "
            "runs out of time, recursion depth or memory: whether P asks for that scale is a reading of P"
        )

    def why_valid(self, args: Sequence[Any]) -> str:
        """Why ``args`` is inside P, in one sentence (the witness's ``why_valid``)."""
        k = _inputs.key(args)
        if k in self.explicit:
            return "it is one of P's own examples, and G gives the value P states"
        answered = "G answers it with a value of the type it gives on P's examples and T0's inputs"
        if k in self.wide:
            return (
                f"it is on an edge of the domain that P's words do not close ({self.rules.wide().describe()}), "
                f"{answered}, and independent models' passing trials give G's answer there"
            )
        if k in self.past_scale:
            return (
                "it is past the scale of P's examples and T0's inputs, where P states no bound; it keeps "
                f"every other precondition ({self.rules.past_scale().describe()}), and {answered}"
            )
        return (
            f"it keeps every precondition read from P, its examples and T0's inputs ({self.rules.describe()}), "
            f"and {answered}"
        )

    def balance(self, limit: int) -> None:
        """Keep at most ``limit`` inputs, spread over G's outputs: each kind of answer G gives
        (each value, when G gives few; else its type and size) in turn, in plan order within a
        kind, P's own examples always. A rare answer (``True`` for one fraction product in a
        hundred) is where a trial's shortcut shows, and a pool cut in plan order keeps few of them."""
        if len(self.inputs) <= limit:
            return
        kinds = [_output_kind(value) for _, _, value in self.inputs]
        if len(set(kinds)) > MAX_KINDS:
            kinds = [_output_kind(value, coarse=True) for _, _, value in self.inputs]
        keep = {i for i, (_, args, _) in enumerate(self.inputs) if _inputs.key(args) in self.explicit}
        queues: dict[str, list[int]] = {}
        for i, kind in enumerate(kinds):
            if i not in keep:
                queues.setdefault(kind, []).append(i)
        heads = [iter(q) for q in queues.values()]
        while len(keep) < limit and heads:
            for head in list(heads):
                if len(keep) >= limit:
                    break
                index = next(head, None)
                if index is None:
                    heads.remove(head)
                else:
                    keep.add(index)
        self.inputs = [row for i, row in enumerate(self.inputs) if i in keep]

    def normal(self, value: Any) -> Any:
        """An output as T0 compares it (through T0's ``tuple(...)``, ``set(...)``, ..., when it uses one)."""
        return apply_wrapper(self.wrapper, value)

    def accepts(self, args: Sequence[Any], row: dict[str, Any]) -> bool:
        """Whether G's answer on ``args`` makes it a usable input: a value of G's usual type that a
        test can state, and, for a formatted string, the answer every seed of its shape gets."""
        if not (row.get("ok") and "value" in row):
            return False
        value = row["value"]
        if not self.rules.output_ok(value) or not literal_round_trip(value):
            return False
        for i, arg in enumerate(args):
            if isinstance(arg, str) and i < len(self.rules.args) and self.rules.args[i].shapes is not None:
                seen = self.shape_outputs.get((i, shape(arg)), [])
                # P's examples and T0 answer every seed of this format alike: G answering otherwise
                # shows behaviour P may not ask for (valid_date: G takes "0003-13-30" as a date).
                if seen and all(close(o, seen[0]) for o in seen) and not close(value, seen[0]):
                    return False
        return True


RESOURCE_ERRORS = ("MemoryError", "SystemError")
"""Exceptions that show the run's memory limit (CPython raises these when a frame or an object
cannot be allocated under it). On an input of the pool they are a difference like any other: G
answered that input under the same limit (an input G runs out of memory on is dropped), so a
trial that does not is the trial's failure, and its witness shows whether it holds. They rank
after wrong values and other exceptions, which make plainer witnesses."""
MAX_KINDS = 64
"""More distinct outputs than this and ``Pool.balance`` spreads over their type and size instead."""


def _output_kind(value: Any, *, coarse: bool = False) -> str:
    if not coarse:
        return repr(value)[:200]
    if isinstance(value, (bool, type(None))):
        return repr(value)
    if isinstance(value, (int, float)):
        sign = "-" if value < 0 else "0" if value == 0 else "+"
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)
        magnitude = int(abs(value))
        # Its decimal digits; past what Python converts to text (4,300 digits), from its bit length.
        bits = magnitude.bit_length()
        digits = len(str(magnitude)) if bits < 14_000 else math.floor(bits * math.log10(2)) + 1
        return f"{type(value).__name__}{sign}{digits}"
    if isinstance(value, (str, list, tuple, dict)):
        return f"{type(value).__name__}:{len(value).bit_length()}"
    return type(value).__name__


def outputs_spec(
    program: str,
    task: Problem | str,
    inputs: Sequence[Sequence[Any]],
    name: str,
    per_call_s: float,
    *,
    arcs: bool = False,
    arcs_per_call: bool = False,
    give_up_after: int | None = None,
) -> RunSpec:
    """One run that calls the entry point of ``program`` on every input (and records arcs, if
    asked: all the calls took, or each call's). ``task`` is the task (the program is built into
    the benchmark's module with T0's test, as in T0's and the witnesses' runs) or, for a program
    of vouch's own, the entry point alone."""
    from vouch.exec import to_data

    data = [to_data(list(a)) for a in inputs]
    entry_point = task if isinstance(task, str) else task.entry_point
    return RunSpec(
        Call(
            "vouch.audit.function._inrun:outputs",
            (entry_point, data, per_call_s, RUN_BUDGET_S),
            {"arcs": arcs}
            | ({"arcs_per_call": True} if arcs_per_call else {})
            | ({"give_up_after": give_up_after} if give_up_after is not None else {})
            | ({"test": task.test} if not isinstance(task, str) else {}),
        ),
        files={"solution.py": program},
        limits=OUTPUT_LIMITS,
        name=name,
    )


def decoded(result: RunResult, count: int) -> list[dict[str, Any]]:
    """Per input: ``{"ok", "value"}`` or ``{"ok": False, "error"}``; a failed run gives errors."""
    if not result.ok or not isinstance(result.value, dict) or not result.value.get("loaded"):
        reason = (
            result.reason or (result.value or {}).get("load_error") if isinstance(result.value, dict) else result.reason
        )
        return [{"ok": False, "error": f"run: {reason or result.status.value}"} for _ in range(count)]
    found = result.value.get("results")
    # What a run writes is untrusted data: a row that is not a row is that input's error.
    rows = (
        [r if isinstance(r, dict) else {"ok": False, "error": "run: a malformed row"} for r in found]
        if isinstance(found, list)
        else []
    )
    rows += [{"ok": False, "error": "skipped"}] * (count - len(rows))
    out = []
    for row in rows[:count]:
        if row.get("ok") and "opaque" not in row:
            out.append({"ok": True, "value": from_data(row.get("value"))} | ({"s": row["s"]} if "s" in row else {}))
        elif row.get("ok"):
            out.append({"ok": True, "opaque": row["opaque"]})
        else:
            out.append({"ok": False, "error": str(row.get("error"))})
    return out


def close(actual: Any, expected: Any) -> bool:
    """Equality as vouch's tests use it (``vouch.core._equality``: ``==``, floats up to 1e-6)."""
    return bool(equal(actual, expected))


def literal_round_trip(value: Any) -> bool:
    """Whether ``repr(value)`` reads back as the same value (so a witness can state it)."""
    try:
        return close(ast.literal_eval(repr(value)), value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def seeds_of(t0_inputs: Sequence[Sequence[Any]], exs: Sequence[Example], *, use_t0: bool) -> list[list[Any]]:
    """The seeds: T0's inputs (unless hidden) and the arguments of P's examples, deduplicated."""
    seen: set[str] = set()
    out: list[list[Any]] = []
    candidates = [list(a) for a in t0_inputs] if use_t0 else []
    candidates += [list(e.args) for e in exs]
    for args in candidates:
        k = _inputs.key(args)
        if k not in seen:
            seen.add(k)
            out.append(args)
    return out


def plan_pool(
    prompt: str,
    params: Sequence[str],
    seeds: Sequence[list[Any]],
    seed_outputs: Sequence[Any],
    rng: random.Random,
    *,
    per_seed: int,
    limit: int,
    examples: Sequence[Sequence[Any]] = (),
    edges: bool = True,
) -> tuple[Preconditions, list[tuple[int, list[Any]]], set[str], set[str]]:
    """Preconditions from P and the seeds, and three levels of admitted generated inputs.

    Level 1: edge values of each argument, every small size, and type-aware mutants of the
    seeds. Level 2: mutants of level 1 and inputs built anew from the seeds' shapes. Level 3:
    mutants of both, and the seeds past their own scale (admitted by ``rules.past_scale()``;
    their keys are the third value returned, for ``fill_pool``). At level 2, the seeds' edges
    the narrow rules leave out and P's words do not (``rules.wide()``: zero and the other sign,
    any order, repeats; their keys are the fourth value returned; none unless ``edges``). At most ``limit`` inputs in
    all, each level given its share. ``examples`` are the arguments of P's own examples
    (``infer``'s).
    """
    rules = infer(prompt, params, seeds, seed_outputs, examples)
    admitted_seeds = [s for s in seeds if len(s) == len(params)]
    share = max(limit // 8, 4)
    far = _generate.scaled(admitted_seeds, rules, rng, share // 2)
    level1 = _inputs.boundary_inputs(admitted_seeds, rules)[:share]
    level1 += _generate.edges(admitted_seeds, rules, share * 2)
    level1 += _generate.sizes(admitted_seeds, rules, rng, share)
    level1 += _inputs.neighbours(admitted_seeds, rules, rng, per_seed=per_seed, limit=share)
    level2 = _inputs.neighbours(_sample(level1, rng, share), rules, rng, per_seed=3, limit=share)
    level2 += _generate.fresh(admitted_seeds, rules, rng, share * 2)
    wide = _wide_inputs(admitted_seeds, rules, rng, share) if edges else []
    level2 += wide
    level3 = _inputs.neighbours(_sample(level1 + level2, rng, share), rules, rng, per_seed=3, limit=share)
    seen = {_inputs.key(s) for s in admitted_seeds}
    planned: list[tuple[int, list[Any]]] = []
    # Past the scale is the last level: a witness inside the seeds' scale is plainer, and a trial
    # that only runs out of resources past it is flagged, so it must not take the place of one.
    for level, group in ((1, level1), (2, level2), (3, level3)):
        for args in group:
            k = _inputs.key(args)
            if k not in seen and len(planned) < limit - len(far):
                seen.add(k)
                planned.append((level, args))
    planned += [(3, args) for args in far if _inputs.key(args) not in seen]
    return rules, planned, {_inputs.key(args) for args in far}, {_inputs.key(args) for args in wide}


def _wide_inputs(seeds: Sequence[list[Any]], rules: Preconditions, rng: random.Random, limit: int) -> list[list[Any]]:
    """Edges of the seeds, their sizes and neighbours under the wide rules, where the narrow
    rules refuse them: the inputs only the jury can make evidence of."""
    wide = rules.wide()
    made = _generate.edges(seeds, wide, limit) + _generate.sizes(seeds, wide, rng, limit // 2)
    made += _inputs.neighbours(seeds, wide, rng, per_seed=4, limit=limit // 2)
    out, seen = [], set()
    for args in made:
        k = _inputs.key(args)
        if k not in seen and rules.admits(args) is not None:
            seen.add(k)
            out.append(args)
    return out[:limit]


def _sample(items: Sequence[list[Any]], rng: random.Random, count: int) -> list[list[Any]]:
    return list(items) if len(items) <= count else rng.sample(list(items), count)


def stated_examples(exs: Sequence[Example], t0_inputs: Sequence[Sequence[Any]]) -> list[Example]:
    """P's examples with a stated value whose input T0 does not already run (so the pool must)."""
    ran = {_inputs.key(list(a)) for a in t0_inputs}
    out, seen = [], set()
    for ex in exs:
        k = _inputs.key(list(ex.args))
        if ex.has_expected and k not in ran and k not in seen:
            seen.add(k)
            out.append(ex)
    return out


def fill_pool(
    rules: Preconditions,
    planned: Sequence[tuple[int, list[Any]]],
    g_rows: Sequence[dict[str, Any]],
    seeds: Sequence[Sequence[Any]] = (),
    seed_outputs: Sequence[Any] = (),
    wrapper: str | None = None,
    examples: Sequence[tuple[Example, dict[str, Any]]] = (),
    past_scale: set[str] | frozenset[str] = frozenset(),
    wide: set[str] | frozenset[str] = frozenset(),
) -> Pool:
    """Keep the planned inputs G answers usably (see ``Pool.accepts``), with G's output; and P's
    own examples (with G's row on each) where G gives the value P states, as explicit inputs."""
    pool = Pool(rules, wrapper=wrapper)
    for ex, row in examples:
        value = row.get("value")
        # Where G does not give the value P states, P and G disagree: no witness rests on it.
        if row.get("ok") and "value" in row and close(pool.normal(value), pool.normal(ex.expected)):
            pool.inputs.append((1, list(ex.args), pool.normal(value)))
            pool.explicit.add(_inputs.key(list(ex.args)))
        else:
            answer = repr(value) if row.get("ok") else f"raises {row.get('error')}"
            pool.conflicts.append(f"P's example {ex.text} (G gives {answer[:80]})")
    for seed, out in zip(seeds, seed_outputs, strict=False):
        for i, arg in enumerate(seed):
            if isinstance(arg, str):
                pool.shape_outputs.setdefault((i, shape(arg)), []).append(out)
    longest = _longest(seeds)
    for (level, args), row in zip(planned, g_rows, strict=True):
        if pool.accepts(args, row):
            pool.inputs.append((level, args, pool.normal(row["value"])))
            k = _inputs.key(args)
            if k in wide and not _too_long(args, longest) and rules.admits(args) is not None:
                pool.wide.add(k)
            elif k in past_scale or rules.admits(args) is not None or _too_long(args, longest):
                pool.past_scale.add(k)
            if row.get("s", 0.0) > QUICK_S:
                pool.slow[_inputs.key(args)] = float(row["s"])
        else:
            pool.dropped += 1
    return pool


def _longest(seeds: Sequence[Sequence[Any]]) -> dict[int, int]:
    """The seeds' longest string, list or mapping at each argument position."""
    out: dict[int, int] = {}
    for seed in seeds:
        for i, arg in enumerate(seed):
            if isinstance(arg, str | list | tuple | dict):
                out[i] = max(out.get(i, 0), len(arg))
    return out


def _too_long(args: Sequence[Any], longest: dict[int, int]) -> bool:
    """Whether an argument is past the seeds' scale in length (``PAST_LENGTH``): a trial that only
    runs out of time there is flagged, not refuted (``Pool.only_past_scale``)."""
    return any(
        isinstance(arg, str | list | tuple | dict)
        and i in longest
        and len(arg) > max(_generate.SMALL_SIZES, PAST_LENGTH * longest[i])
        for i, arg in enumerate(args)
    )


@dataclass(frozen=True)
class Difference:
    level: int
    args: list[Any]
    expected: Any
    actual: Any
    """s's value, or ``"raised <error>"``."""


def differences(pool: Pool, s_rows: Sequence[dict[str, Any]]) -> list[Difference]:
    """Inputs where s's output is not the one G gives (smallest first within each level)."""
    out: list[Difference] = []
    for (level, args, expected), row in zip(pool.inputs, s_rows, strict=True):
        if not row.get("ok"):
            if row.get("error") in ("skipped", "cut short") or str(row.get("error", "")).startswith("run:"):
                continue
            if row.get("error") == "timeout" and _inputs.key(args) in pool.slow:
                continue  # G is slow here too: running out of time shows nothing
            out.append(Difference(level, args, expected, f"raised {row.get('error')}"))
        elif "opaque" in row:
            out.append(Difference(level, args, expected, row["opaque"]))
        elif not close(pool.normal(row["value"]), expected):
            out.append(Difference(level, args, expected, row["value"]))
    # Inside the seeds' scale before past it, and a wrong value or an exception before running out
    # of memory or time: those make plainer witnesses.
    out.sort(
        key=lambda d: (
            _inputs.key(d.args) in pool.past_scale,
            _inputs.key(d.args) in pool.wide,
            _resource_rank(d.actual),
            d.level,
            _inputs.size(d.args),
        )
    )
    return out


def _resource_rank(actual: Any) -> int:
    """0 for a wrong value or an exception, 1 for running out of memory, 2 for running out of time."""
    if actual == "raised timeout":
        return 2
    return int(isinstance(actual, str) and actual.startswith(tuple(f"raised {e}" for e in RESOURCE_ERRORS)))


APART_LIMITS = Limits(timeout_s=60.0, memory_mb=512)


def apart_spec(program: str, problem: Problem, inputs: Sequence[Sequence[Any]], name: str) -> RunSpec:
    """One run that asks ``program`` every input the way a witness run asks it: the program in
    the process a witness run gives it (the benchmark's module, ``_host``), only data back
    (``_inrun.outputs_apart``); rows as ``decoded`` reads them."""
    from vouch.exec import to_data

    return RunSpec(
        Call(
            "vouch.audit.function._inrun:outputs_apart",
            (problem.entry_point, [to_data(list(a)) for a in inputs]),
            {"test": problem.test},
        ),
        files={"solution.py": program},
        limits=APART_LIMITS,
        name=name,
    )
