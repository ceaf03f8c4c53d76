"""Variants and violations of a function-level code candidate (kind ``code``, HumanEval).

Permitted: cosmetic changes that leave the program's behaviour as it is (locals renamed, a
comment per statement, a module comment added with libcst, the source reformatted). Violations:
single-edit mutants from :mod:`vouch.mutation` (a comparison, a constant, a condition) that
make the program wrong on an example the prompt itself gives, where the candidate is right.

Both claims are checked by running the programs on the prompt's examples, each program in a
sandboxed run of its own (:func:`run_examples` is the run's entry): untrusted code never runs
in the challenger's process.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from typing import Any

from vouch.bench._challenge_public import Derivations, Derived, Skipped, instruction_of, read_public
from vouch.bench._decide import Task
from vouch.errors import UsageError
from vouch.exec import Call, Executor, Limits, RunSpec
from vouch.sources.humaneval import add_comments, reformat, rename_locals

EXAMPLE_LIMITS = Limits(timeout_s=10.0, memory_mb=512)
_OPERATORS = ("compare_swap", "constant_change", "negate_condition", "boundary_shift", "arithmetic_swap")
_MUTANTS_TRIED = 16
_ARROW = re.compile(
    r"^[*\-\s]*(?P<call>[A-Za-z_]\w*\(.*\))\s*#?\s*(?:==>|=>|➞|->|==|=|should return|returns?)\s*(?P<want>.+?)\s*$"
)
_FOR = re.compile(r"^For \w+ = (?P<value>[^,]+?),?\s.*?the output should be (?P<want>.+?)\s*$")
_INPUT = re.compile(r"^Input: (?P<value>.+?)\s*$")


@dataclass(frozen=True)
class Example:
    """One example of the prompt: an expression calling the entry point, and what it should give."""

    call: str
    want: str


def prompt_of(task: Task) -> str:
    """The function-level prompt: ``environment/prompt.py``, else the instruction's code block."""
    text = read_public(task.root, "environment/prompt.py")
    if text is not None:
        return text
    block = re.search(r"```python\n(.*?)```", instruction_of(task), flags=re.DOTALL)
    return block.group(1) if block else ""


def _docstring_lines(prompt: str, entry_point: str) -> list[str]:
    """The raw source lines of the entry point's docstring (escapes as the solver reads them)."""
    lines = prompt.splitlines()
    head = next((i for i, line in enumerate(lines) if re.match(rf"\s*def {re.escape(entry_point)}\b", line)), None)
    return lines[head + 1 :] if head is not None else lines


def examples_of(prompt: str, entry_point: str) -> list[Example]:
    """The examples the prompt gives for the entry point, in the forms HumanEval prompts use.

    Doctests (``>>> f(x)`` then the value; ``>>> f(x) == y`` alone), arrows (``f(x) ==> y``,
    ``f(x) -> y``, ``f(x) ➞ y``), ``For x = v the output should be y``, and ``Input: v`` /
    ``Output: y`` pairs (the last two for one-argument functions).
    """
    lines = [line.strip() for line in _docstring_lines(prompt, entry_point)]
    found: list[Example] = []
    for i, line in enumerate(lines):
        if line.startswith(">>>") and entry_point in line:
            call = line[3:].strip()
            want = []
            for nxt in lines[i + 1 :]:
                if not nxt or nxt.startswith(">>>") or nxt.startswith('"""'):
                    break
                want.append(nxt)
            if want:
                found.append(Example(call, " ".join(want)))
            elif "==" in call:
                found.append(Example(call, "True"))
            continue
        match = _ARROW.match(line)
        if match and entry_point in match.group("call"):
            found.append(Example(match.group("call"), _want(match.group("want"))))
            continue
        match = _FOR.match(line)
        if match:
            found.append(Example(f"{entry_point}({match.group('value')})", _want(match.group("want"))))
            continue
        match = _INPUT.match(line)
        output = next((x for x in lines[i + 1 : i + 3] if x.startswith("Output:")), None)
        if match and output:
            found.append(Example(f"{entry_point}({match.group('value')})", output[len("Output:") :].strip()))
    return [e for e in found if _parses(e.call) and _parses(e.want)]


def _want(text: str) -> str:
    """The expected value of an example line, without a trailing remark or worked arithmetic.

    ``'No' (the name should ...)`` -> ``'No'``; ``19 - 5 - 6 = 8`` -> ``8``.
    """
    text = text.strip().rstrip(".")
    for option in (text, text.split(" (")[0], text.rpartition("=")[2].strip()):
        if option and _parses(option):
            return option
    return text


def _parses(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True


def run_examples(source: str, examples: list[list[str]]) -> list[dict[str, Any]]:
    """Run-side entry (inside a sandbox): the program's value on each example, and whether it is right.

    ``examples`` holds ``[call, want]`` pairs of expression text. ``want`` is evaluated too
    (doctest shows values as their repr); a value matches when it equals it, or when its repr
    is the text itself.
    """
    namespace: dict[str, Any] = {"__name__": "candidate"}
    exec(compile(source, "candidate.py", "exec", dont_inherit=True), namespace)  # noqa: S102 - this run exists to run it
    out: list[dict[str, Any]] = []
    for call, want in examples:
        try:
            value = eval(call, namespace)  # noqa: S307 - the prompt's example, in the candidate's sandbox
        except Exception as exc:  # noqa: BLE001 - a crash on an example is an outcome
            out.append({"ok": False, "match": False, "shown": f"{type(exc).__name__}: {exc}"[:200]})
            continue
        out.append({"ok": True, "match": _matches(value, want), "shown": repr(value)[:200]})
    return out


def _matches(value: Any, want: str) -> bool:
    if repr(value) == want:
        return True
    try:
        expected = eval(want, {})  # noqa: S307 - the prompt's expected value, in the candidate's sandbox
        numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (value, expected))
        return bool((numbers or type(value) is type(expected)) and value == expected)
    except Exception:  # noqa: BLE001 - a want that does not evaluate, or a value that cannot compare
        return False


def _outcomes(
    executor: Executor, task: Task, sources: list[str], examples: list[Example], hidden: tuple[str, ...]
) -> list[list[dict[str, Any]] | None]:
    pairs = [[e.call, e.want] for e in examples]
    specs = [
        RunSpec(
            entry=Call("vouch.bench._challenge_code:run_examples", args=(s, pairs)),
            limits=EXAMPLE_LIMITS,
            hidden=hidden,
            name=f"{task.id}:examples",
        )
        for s in sources
    ]
    out: list[list[dict[str, Any]] | None] = []
    for result in executor.run_batch(specs):
        value = result.value if result.ok and isinstance(result.value, list) else None
        out.append(value)
    return out


def _header_comment(source: str) -> str | None:
    """A module comment added with libcst (which keeps everything else byte for byte)."""
    # Imported when used: libcst would add 0.2 s to every `import vouch.bench`.
    import libcst as cst

    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    line = cst.EmptyLine(comment=cst.Comment("# Reviewed: behaviour as the docstring describes."))
    return module.with_changes(header=[line, *module.header]).code


def _cosmetic(source: str, entry_point: str, prompt: str) -> list[tuple[str, str, str | None]]:
    prompt_lines = len(prompt.splitlines()) if source.startswith(prompt.rstrip("\n")) else 0
    return [
        ("rename_locals", "the entry point's local variables renamed", rename_locals(source, entry_point)),
        ("add_comments", "a comment line before each statement of the body", add_comments(source, prompt_lines)),
        ("add_module_comment", "a comment line added at the top of the module (libcst)", _header_comment(source)),
        ("reformat", "the source reformatted as ast.unparse prints it", reformat(source)),
    ]


def derive_code(
    task: Task, candidate: dict[str, Any], executor: Executor, rng: random.Random, hidden: tuple[str, ...]
) -> Derivations:
    """Cosmetic variants and example-breaking mutants of a code candidate, checked on the prompt's examples."""
    source = candidate.get("source")
    entry_point = task.spec.entry_point
    if not isinstance(source, str) or entry_point is None:
        raise UsageError(f"task {task.id}: the challenger handles function-level code candidates ({{'source': ...}})")
    prompt = prompt_of(task)
    examples = examples_of(prompt, entry_point)
    skipped: list[Skipped] = []
    cosmetic = []
    for name, how, text in _cosmetic(source, entry_point, prompt):
        if text is None or text == source:
            skipped.append(Skipped(name, "the edit does not apply to this source"))
        else:
            cosmetic.append((name, how, text))
    from vouch.mutation import mutate  # imported when used, as libcst above

    try:
        mutants = mutate(source, operators=list(_OPERATORS), function=entry_point)
    except UsageError as exc:
        mutants = []
        skipped.append(Skipped("wrong_on_example", f"no mutant: {exc}"))
    rng.shuffle(mutants)
    mutants = mutants[:_MUTANTS_TRIED]
    texts = [source, *(t for _, _, t in cosmetic if t is not None), *(m.source for m in mutants)]
    outcomes = _outcomes(executor, task, texts, examples, hidden) if examples else [None] * len(texts)
    base = outcomes[0]
    derived: list[Derived] = []
    for (name, how, text), got in zip(cosmetic, outcomes[1 : 1 + len(cosmetic)], strict=True):
        assert text is not None
        evidence: dict[str, Any] = {"examples": len(examples)}
        if examples and base is not None:
            if got is None or [g["shown"] for g in got] != [b["shown"] for b in base]:
                skipped.append(Skipped(name, "the edited program gives other values on the prompt's examples"))
                continue
            evidence["same_values_on_examples"] = True
        derived.append(
            Derived(
                id=f"{name}-1",
                role="permitted",
                construction=name,
                candidate={"source": text},
                how=how,
                why="a cosmetic change: the program's behaviour is unchanged, and the prompt asks only for behaviour",
                evidence=evidence,
            )
        )
    if not examples:
        skipped.append(Skipped("wrong_on_example", "the prompt gives no example to show a mutant wrong"))
    elif base is None:
        skipped.append(Skipped("wrong_on_example", "the candidate itself does not run on the prompt's examples"))
    else:
        right = [i for i, b in enumerate(base) if b["match"]]
        if not right:
            skipped.append(Skipped("wrong_on_example", "the candidate is right on none of the prompt's examples"))
        kept: list[Derived] = []
        used_ops: set[str] = set()
        for mutant, got in zip(mutants, outcomes[1 + len(cosmetic) :], strict=True):
            if len(kept) >= 2 or mutant.operator in used_ops:
                continue
            wrong = [i for i in right if got is None or not got[i]["match"]]
            if not wrong:
                continue
            ex = examples[wrong[0]]
            shown = "it fails to run" if got is None else got[wrong[0]]["shown"]
            used_ops.add(mutant.operator)
            kept.append(
                Derived(
                    id=f"wrong_on_example-{len(kept) + 1}",
                    role="violation",
                    construction="wrong_on_example",
                    candidate={"source": mutant.source},
                    how=f"{mutant.operator} at line {mutant.location.line}: {mutant.description}",
                    why=f"the prompt's example {ex.call} should give {ex.want}; the changed program gives {shown}",
                    evidence={"mutant": mutant.id, "diff": mutant.diff, "examples_wrong": len(wrong)},
                )
            )
        if right and not kept:
            skipped.append(Skipped("wrong_on_example", "no mutant tried goes wrong on the prompt's examples"))
        derived.extend(kept)
    return Derivations(derived, skipped)
