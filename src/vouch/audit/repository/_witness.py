"""The repo-level offline witness source: differential testing of changed functions and methods.

Calls that T0 made into the changed modules from outside them (its tests, other modules) to
public functions, methods, properties, static and class methods are recorded in R[G], each
argument as a literal or a *recipe* that rebuilds it from literals (``vouch.worlds._inrun``): a
method's receiver is its first argument, rebuilt by the constructor call that made it or from its
state. Their literal arguments (and the literal arguments of a receiver's constructor call) are
mutated type-aware (a value keeps its type; strings may also become strings P or T0 mention);
every input is run in R[G] and R[s]; one on which R[G] returns and R[s] answers differently (the
result, or a receiver's public state afterwards) becomes a pytest witness whose expected value is
R[G]'s. An input on which R[G] raises is outside the task's preconditions and is never used.
Everything here is pure: the runs happen in ``repository._audit`` through the engine.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import random
import re
import textwrap
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from vouch.audit._docstring import in_docstring
from vouch.worlds import canon

__all__ = [
    "Candidate",
    "Probe",
    "Rendered",
    "function_targets",
    "is_recipe",
    "member_kinds",
    "mutate_call",
    "recorded_probes",
    "render",
    "string_pool",
    "with_mutants",
    "witness_source",
]

_MAX_STRINGS = 40
_MAX_PER_CALL = 40
RECORDED = ("t0", "suite")
"""Origins of the probes that are calls a test made: T0's, and the repository's own tests'."""
_PROBED_DUNDERS = frozenset({"__call__", "__getitem__", "__contains__"})
"""Special methods probed besides public names: calls whose result P can speak of."""


@dataclass(frozen=True)
class Probe:
    """One input to a public function of the repository."""

    file: str
    """Path of the function's module, relative to the repository root."""
    module: str
    """Dotted module name."""
    qualname: str
    """``name`` (a function) or ``Class.name`` (a member of a class)."""
    args: tuple[str, ...]
    """Positional arguments as Python literals (repr text) or recipes; a method's or property's
    receiver is the first."""
    kwargs: tuple[tuple[str, str], ...] = ()
    origin: str = "t0"
    """``t0`` (a call T0 made), ``suite`` (a call the repository's own tests beyond T0 made) or
    ``mutated: <what changed>``."""

    @property
    def recorded(self) -> bool:
        """A call a test made (T0's or the repository's own), not a variation of one."""
        return self.origin in RECORDED

    @property
    def public(self) -> bool:
        """Results are compared on public attributes: a member of a class, or a rebuilt argument."""
        return "." in self.qualname or any(is_recipe(a) for a in (*self.args, *(v for _, v in self.kwargs)))

    def as_call(self) -> dict[str, Any]:
        """The ``call_functions`` request for this probe."""
        call: dict[str, Any] = {
            "module": self.module,
            "qualname": self.qualname,
            "args": list(self.args),
            "kwargs": dict(self.kwargs),
        }
        if self.public:
            call["public"] = True
        return call

    def shown(self) -> str:
        parts = [*(_shown(a) for a in self.args), *(f"{k}={_shown(v)}" for k, v in self.kwargs)]
        return f"{self.qualname}({', '.join(parts)})"


@dataclass(frozen=True)
class Candidate:
    """A probe on which R[G] and R[s] disagree: the material of a witness."""

    probe: Probe
    expected: str
    """R[G]'s result (canonical text)."""
    expected_literal: str | None
    actual: str
    """R[s]'s result (canonical text) or ``raised <Type>``."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    expected_state: str | None = None
    """R[G]'s receiver afterwards (canonical public text), when it differs from R[s]'s."""
    actual_state: str | None = None
    """R[s]'s receiver afterwards, when it differs from R[G]'s."""
    same_result: bool = False
    """Both worlds return the same: only the receiver's state differs (and is asserted)."""


def disagreement(probe: Probe, ref: Mapping[str, Any], got: Mapping[str, Any]) -> Candidate | None:
    """The candidate when ``got`` (a ``call_functions`` outcome in one world) answers ``probe``
    otherwise than R[G] did (``ref``): a different result, a raise, or (a method) a receiver left
    otherwise; None when they agree."""
    actual = (got.get("literal") or got["value"]) if got.get("ok") else f"raised {got.get('exception')}"
    same_result = bool(got.get("ok")) and got["value"] == ref["value"]
    same_state = not got.get("ok") or got.get("state") == ref.get("state")
    if same_result and same_state:
        return None
    return Candidate(
        probe,
        ref["value"],
        ref.get("literal"),
        actual,
        expected_state=None if same_state else ref.get("state"),
        actual_state=None if same_state else got.get("state"),
        same_result=same_result,
    )


def function_targets(source: str, file: str, lines: Collection[int] | None = None) -> list[str]:
    """``"file::qualname"`` of each public function, and each public member of a public class, of
    a module's source.

    Members are methods, properties, static and class methods (``Class.name``, nested classes
    ``Outer.Inner.name``) and a few special methods (``__call__``, ``__getitem__``,
    ``__contains__``); a property's setter is not one. ``lines``, when given, keeps only the members
    whose lines (decorators included) meet them: the ones a patch touches.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = [
        f"{file}::{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_")
    ]
    wanted = set(lines) if lines is not None else None
    for qualname, node in _members(tree.body, ""):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if wanted is None or any(first <= n <= (node.end_lineno or node.lineno) for n in wanted):
            found.append(f"{file}::{qualname}")
    return found


def _members(body: Sequence[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Public members of public classes, with their qualnames (setters and deleters left out)."""
    for node in body:
        if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
            continue
        owner = f"{prefix}{node.name}"
        seen: set[str] = set()
        for item in node.body:
            if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if item.name.startswith("_") and item.name not in _PROBED_DUNDERS:
                continue
            if any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in item.decorator_list):
                continue
            if item.name not in seen:  # a redefinition (an overload, a version branch) is one member
                seen.add(item.name)
                yield f"{owner}.{item.name}", item
        yield from _members(node.body, f"{owner}.")


def member_kinds(source: str) -> dict[str, str]:
    """Qualname -> how each member of the module's classes is called: ``method``, ``static``,
    ``class`` or ``property`` (read from its decorators; ``call_functions`` decides on the live
    class the same way)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    kinds = {}
    for qualname, node in _members(tree.body, ""):
        names = {_decorator_name(d) for d in node.decorator_list}
        if "staticmethod" in names:
            kinds[qualname] = "static"
        elif "classmethod" in names:
            kinds[qualname] = "class"
        elif any(n.endswith("property") for n in names):
            kinds[qualname] = "property"
        else:
            kinds[qualname] = "method"
    return kinds


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def module_name(file: str) -> str:
    """Dotted module name of a repository-relative ``.py`` path (``pkg/__init__.py`` -> ``pkg``)."""
    parts = file[: -len(".py")].split("/")
    if parts[0] == "src" and len(parts) > 1:  # a src layout imports from src/
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


_BACKTICKED = re.compile(r"`([^`\n]{1,40})`")
_QUOTED = re.compile(r"\"([^\"\n]{1,40})\"|'([^'\n]{1,40})'")


def string_pool(problem: str, recorded: Sequence[Probe]) -> list[str]:
    """Strings the task talks about: P's code spans and quoted words, and T0's string arguments."""
    found: list[str] = []
    for match in _BACKTICKED.finditer(problem):
        found.append(match.group(1))
    for match in _QUOTED.finditer(problem):
        found.append(match.group(1) or match.group(2))
    for probe in recorded:
        for text in [*probe.args, *(v for _, v in probe.kwargs)]:
            value = _value(text)
            if isinstance(value, str):
                found.append(value)
    words = [s for s in dict.fromkeys(found) if s and not any(c in s for c in "()=,") and len(s) <= 20]
    return words[:_MAX_STRINGS]


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


# --- recipes (see vouch.worlds._inrun.build): checked, rendered as code, mutated -------------

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class Rendered:
    """A literal or recipe as Python code for a witness file."""

    code: str
    imports: tuple[str, ...] = ()
    """Modules the code names (``import m`` each)."""
    rebuilds: bool = False
    """The code calls ``_rebuild`` (an object made from its state), which the file must define."""


def _ref_parts(node: ast.AST) -> tuple[str, str] | None:
    """``(module, qualname)`` of a ``_ref('module', 'qualname')`` node, checked; else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_ref"):
        return None
    if node.keywords or len(node.args) != 2:
        return None
    parts = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
    if not all(isinstance(p, str) and _DOTTED.fullmatch(p) for p in parts):
        return None
    return str(parts[0]), str(parts[1])


def _is_constructor(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _ref_parts(node.func) is not None


def _well_formed(node: ast.AST) -> bool:
    """A literal, or a recipe of the grammar ``build`` accepts (nothing else is ever rendered)."""
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if _ref_parts(node) is not None:
        return True
    if _is_constructor(node):
        assert isinstance(node, ast.Call)
        return all(_well_formed(a) for a in node.args) and all(
            k.arg is not None and _well_formed(k.value) for k in node.keywords
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_rebuild":
        return (
            len(node.args) == 2
            and not node.keywords
            and _ref_parts(node.args[0]) is not None
            and isinstance(node.args[1], ast.Dict)
            and _well_formed(node.args[1])
        )
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_well_formed(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _well_formed(k) for k in node.keys) and all(_well_formed(v) for v in node.values)
    return False


def _parse(text: str) -> ast.expr | None:
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return node if _well_formed(node) else None


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def is_recipe(text: str) -> bool:
    """Whether an argument's text is a recipe (a value rebuilt from literals), not a literal."""
    return not _is_literal(text) and _parse(text) is not None


def render(text: str) -> Rendered | None:
    """A literal or recipe as witness code: ``_ref('m', 'C')`` becomes ``m.C`` (with ``import m``).

    Returns:
        None for text that is neither (a witness is never written from it).
    """
    if _is_literal(text):
        return Rendered(text)
    node = _parse(text)
    if node is None:
        return None
    imports: list[str] = []
    rebuilds = False

    class _Names(ast.NodeTransformer):
        def visit_Call(self, call: ast.Call) -> ast.AST:
            nonlocal rebuilds
            parts = _ref_parts(call)
            if parts is None:
                rebuilds = rebuilds or (isinstance(call.func, ast.Name) and call.func.id == "_rebuild")
                return self.generic_visit(call)
            module, qualname = parts
            imports.append(module)
            dotted: ast.expr = ast.Name(id=module.split(".")[0], ctx=ast.Load())
            for part in [*module.split(".")[1:], *qualname.split(".")]:
                dotted = ast.Attribute(value=dotted, attr=part, ctx=ast.Load())
            return dotted

    code = ast.unparse(_Names().visit(node))
    return Rendered(code, tuple(dict.fromkeys(imports)), rebuilds)


def _shown(text: str) -> str:
    rendered = render(text) if is_recipe(text) else None
    return rendered.code if rendered is not None else text


def receiver_class(text: str) -> tuple[str, str] | None:
    """``(module, qualname)`` of the class a receiver's recipe makes (a constructor or state)."""
    node = _parse(text)
    if isinstance(node, ast.Call) and _is_constructor(node):
        return _ref_parts(node.func)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_rebuild":
        return _ref_parts(node.args[0])
    return None


def arg_shape(text: str) -> str:
    """An argument's kind for re-judging: a literal's type; a recipe's class and the types of its
    constructor's literal arguments."""
    if not is_recipe(text):
        return type(_value(text)).__name__
    node = _parse(text)
    made = receiver_class(text)
    if made is None:
        return "recipe"
    inner = []
    if isinstance(node, ast.Call) and _is_constructor(node):
        inner = [type(_literal_of(a)).__name__ for a in node.args]
        inner += [f"{k.arg}:{type(_literal_of(k.value)).__name__}" for k in node.keywords]
        return f"{made[1]}({', '.join(inner)})"
    return f"{made[1]}(state)"


def _literal_of(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _recipe_mutations(text: str, pool: Sequence[str]) -> Iterator[tuple[str, str]]:
    """Single edits of the literal arguments of a recipe's constructor calls (not of a state,
    which no public call wrote), each with a note."""
    node = _parse(text)
    if node is None:
        return
    calls: list[ast.Call] = []

    def collect(n: ast.AST) -> None:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_rebuild":
            return
        if isinstance(n, ast.Call) and _is_constructor(n):
            calls.append(n)
        for child in ast.iter_child_nodes(n):
            collect(child)

    collect(node)
    for call in calls:
        made = _ref_parts(call.func)
        name = made[1] if made else "?"
        slots: list[tuple[str, ast.expr, Any]] = []
        for i, arg in enumerate(call.args):
            slots.append((f"{name} argument {i}", arg, lambda new, i=i, c=call: c.args.__setitem__(i, new)))
        for kw in call.keywords:
            slots.append((f"{name} keyword {kw.arg}", kw.value, lambda new, k=kw: setattr(k, "value", new)))
        for where, original, put in slots:
            try:
                value = ast.literal_eval(original)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            for changed, note in _mutations(value, pool):
                put(ast.parse(repr(changed), mode="eval").body)
                yield ast.unparse(node), f"{where}: {note}"
            put(original)


def _mutations(value: Any, pool: Sequence[str], depth: int = 0) -> Iterator[tuple[Any, str]]:
    """Type-preserving single edits of a literal value, each with a note of what changed."""
    if isinstance(value, bool):
        yield (not value), f"{value!r} -> {not value!r}"
    elif isinstance(value, int):
        for number in (value + 1, value - 1, value * 2, 0, -value):
            if number != value:
                yield number, f"{value!r} -> {number!r}"
    elif isinstance(value, float):
        for real in (value + 1.0, value * 2, value / 2, 0.0, -value):
            if real != value:
                yield real, f"{value!r} -> {real!r}"
    elif isinstance(value, str):
        edits = [value + ".", "." + value, value.upper(), value + " ", value[:-1], value + value[-1:]]
        edits += [p for p in pool if p != value]
        for text in dict.fromkeys(edits):
            if text != value:
                yield text, f"{value!r} -> {text!r}"
    elif isinstance(value, list | tuple) and depth < 3:
        kind = type(value)
        for i in range(len(value)):
            yield kind([*value[:i], *value[i + 1 :]]), f"dropped item {i}"
        for i, item in enumerate(value):
            for changed, note in _mutations(item, pool, depth + 1):
                yield kind([*value[:i], changed, *value[i + 1 :]]), f"item {i}: {note}"
                yield kind([*value, changed]), f"added a copy of item {i} with {note}"
    elif isinstance(value, dict) and depth < 3:
        for key in value:
            yield {k: v for k, v in value.items() if k != key}, f"dropped key {key!r}"
            for changed, note in _mutations(value[key], pool, depth + 1):
                yield {**value, key: changed}, f"{key!r}: {note}"


def recorded_probes(
    calls: Mapping[str, Sequence[Mapping[str, Any]]], origin: str = "t0", per_target: int | None = None
) -> list[Probe]:
    """The probes of calls a test run recorded (``run_tests``' ``calls``: target -> records of
    ``args`` and ``kwargs``), target by target; at most ``per_target`` calls of each."""
    out = []
    for target, records in sorted(calls.items()):
        file, _, qualname = target.partition("::")
        for record in list(records)[:per_target]:
            args, kwargs = tuple(record["args"]), tuple(sorted(record["kwargs"].items()))
            out.append(Probe(file, module_name(file), qualname, args, kwargs, origin=origin))
    return out


def with_mutants(
    recorded: Sequence[Probe],
    pool: Sequence[str],
    rng: random.Random,
    limit: int = _MAX_PER_CALL,
    seen: set[tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...]]] | None = None,
) -> list[Probe]:
    """The recorded calls, then their mutants (``mutate_call``, ``limit`` a call), each input once
    (two calls can mutate into the same input); inputs in ``seen`` are left out, and added to it."""
    seen = set() if seen is None else seen
    out = []
    for probe in [*recorded, *(m for p in recorded for m in mutate_call(p, pool, rng, limit))]:
        key = (probe.file, probe.qualname, probe.args, probe.kwargs)
        if key not in seen:
            seen.add(key)
            out.append(probe)
    return out


def mutate_call(probe: Probe, pool: Sequence[str], rng: random.Random, limit: int = _MAX_PER_CALL) -> list[Probe]:
    """Single-edit mutants of a recorded call: one argument changed, its type kept. A rebuilt
    argument (a receiver) changes by one literal argument of its constructor call.

    Args:
        probe: A call T0 made.
        pool: Strings a string argument may become (from P and T0).
        rng: Seeded; picks ``limit`` mutants when there are more.
        limit: Most mutants returned.

    Returns:
        Distinct probes, in a reproducible order.
    """
    out: list[Probe] = []
    seen: set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {(probe.args, probe.kwargs)}
    slots: list[tuple[str, int | str]] = [("arg", i) for i in range(len(probe.args))]
    slots += [("kw", name) for name, _ in probe.kwargs]
    for kind, slot in slots:
        text = probe.args[slot] if kind == "arg" and isinstance(slot, int) else dict(probe.kwargs)[str(slot)]
        if is_recipe(text):
            edits: Iterator[tuple[str, str]] = _recipe_mutations(text, pool)
        else:
            edits = ((repr(changed), note) for changed, note in _mutations(_value(text), pool))
        for literal, note in edits:
            if kind == "arg" and isinstance(slot, int):
                args = (*probe.args[:slot], literal, *probe.args[slot + 1 :])
                kwargs = probe.kwargs
            else:
                args = probe.args
                kwargs = tuple((k, literal if k == slot else v) for k, v in probe.kwargs)
            if (args, kwargs) in seen:
                continue
            seen.add((args, kwargs))
            where = f"argument {slot}" if kind == "arg" else f"keyword {slot}"
            out.append(Probe(probe.file, probe.module, probe.qualname, args, kwargs, origin=f"mutated {where}: {note}"))
    if len(out) > limit:
        # Keep the order (cheap edits first) but sample which survive, reproducibly.
        keep = sorted(rng.sample(range(len(out)), limit))
        out = [out[i] for i in keep]
    return out


_CANON_SOURCE = (
    textwrap.dedent(inspect.getsource(canon))
    .replace("def canon(", "def _canon(")
    .replace("canon(", "_canon(")
    .replace("def __canon(", "def _canon(")
)


_REBUILD_SOURCE = (
    "def _rebuild(cls: Any, state: Any) -> Any:\n"
    '    """An instance of cls made without __init__, its __dict__ set to state (as T0 left it)."""\n'
    "    made = cls.__new__(cls)\n"
    "    made.__dict__.update(state)\n"
    "    return made\n"
)


def test_file_name(hint: str, source: str) -> str:
    """The name a witness file has where it runs: ``test_<module>_<8 hex>.py``, like a test file
    of the repository's own, after the module ``hint`` names (a path or a name), and the hash of
    its ``source``. Nothing in a witness's path says it is one: the trial's code sees the same
    kind of path in a witness run as in T0's."""
    path = PurePosixPath(hint)
    stem = path.parent.name if path.stem == "__init__" else path.stem
    stem = re.sub(r"\W+", "_", stem).strip("_")
    stem = stem.removeprefix("test_").removesuffix("_test") or "module"
    return f"test_{stem}_{hashlib.sha256(source.encode()).hexdigest()[:8]}.py"


def witness_source(candidate: Candidate, *, instance_id: str, clause: str, index: int, kind: str = "function") -> str:
    """A pytest file asserting R[G]'s behaviour on the candidate's input.

    Args:
        candidate: The disagreeing probe.
        instance_id: For the docstring.
        clause: The clause of P the witness checks.
        index: Distinguishes witnesses of one trial.
        kind: How the probe's target is called (``function``, or a ``member_kinds`` kind):
            a method or property on the rebuilt receiver, a static or class method on its class.

    Returns:
        The test's source; it fails by an AssertionError when the call returns something else
        (or leaves the receiver otherwise, when that is what differs) or raises.

    Raises:
        ValueError: An argument that is neither a literal nor a recipe.
    """
    probe = candidate.probe
    owner, _, name = probe.qualname.rpartition(".")
    receives = bool(owner) and kind in ("method", "property")
    shown_args = [_rendered(a) for a in probe.args]
    shown_kwargs = [(k, _rendered(v)) for k, v in probe.kwargs]
    everything = [*shown_args, *(r for _, r in shown_kwargs)]
    imports = sorted({m for r in everything for m in r.imports})
    body: list[str] = []
    if receives:
        if not shown_args:
            raise ValueError(f"{probe.qualname}: a {kind} probe needs its receiver as the first argument")
        receiver, rest = shown_args[0], shown_args[1:]
        body.append(f"    receiver = {receiver.code}")
        call_args = ", ".join([*(r.code for r in rest), *(f"{k}={r.code}" for k, r in shown_kwargs)])
        exact = receiver_class(probe.args[0]) == (probe.module, owner)
        if kind == "property":
            call = f"receiver.{name}" if exact else f"{owner}.{name}.__get__(receiver, {owner})"
        elif exact:
            call = f"receiver.{name}({call_args})"
        else:  # a subclass's instance: the class's own code, as T0's call ran it
            call = f"{owner}.{name}(receiver{', ' if call_args else ''}{call_args})"
        imported = owner.split(".")[0]
    else:
        call_args = ", ".join([*(r.code for r in shown_args), *(f"{k}={r.code}" for k, r in shown_kwargs)])
        call = f"{probe.qualname}({call_args})"
        imported = probe.qualname.split(".")[0]
    public = ", public=True" if probe.public else ""
    shown_expected = candidate.expected_literal or candidate.expected
    doc = (
        f'"""{in_docstring(instance_id)}: {in_docstring(clause[:200])}\n\n'
        f"A call the tests made with the fix applied, {in_docstring(probe.origin)}; the fix's result is expected.\n"
        f'"""\n'
    )
    header = ["from typing import Any", ""]
    header += [f"import {m}" for m in imports]
    header += [f"from {probe.module} import {imported}", "", ""]
    helpers = [_CANON_SOURCE]
    if any(r.rebuilds for r in everything):
        helpers.append(_REBUILD_SOURCE)
    what = f"{probe.qualname}" if not receives else f"{probe.qualname} on the receiver"
    if owner:
        # Looked up outside the try: a member the world lacks (one G adds) is an error of the
        # test, never a failed assertion, and validation judges it as a name P may not give.
        body.append(f"    getattr({owner}, {name!r})")
    body += [
        "    try:",
        f"        got = {call}",
        "    except Exception as exc:",
        f"        raise AssertionError(f'{what} raised {{exc!r}}; expected ' + {shown_expected!r}) from exc",
    ]
    if not candidate.same_result:
        check = f"_canon(got{public}) == {candidate.expected!r}"
        body.append(f"    assert {check}, f'got {{got!r}}, expected ' + {shown_expected!r}")
    if receives and candidate.expected_state is not None:
        body.append(
            f"    assert _canon(receiver{public}) == {candidate.expected_state!r}, "
            f"'the receiver afterwards is ' + _canon(receiver{public}) + ', expected ' + {candidate.expected_state!r}"
        )
    test = f"def test_{name.strip('_') or 'call'}_{index}() -> None:"
    return "\n".join([doc, *header, "\n\n".join(h.rstrip("\n") + "\n" for h in helpers), "", test, *body, ""])


def _rendered(text: str) -> Rendered:
    rendered = render(text)
    if rendered is None:
        raise ValueError(f"argument {text[:80]!r} is neither a literal nor a recipe")
    return rendered


def iteration_batches(candidates: Sequence[Candidate], k: int, per_function: int = 2) -> list[list[Candidate]]:
    """Split candidates into at most ``k`` generate-and-validate rounds, spreading over functions.

    Each round takes up to ``per_function`` not-yet-tried candidates of each function, T0's own
    inputs first (they are the most plainly inside P's preconditions).
    """
    by_function: dict[str, list[Candidate]] = {}
    for cand in sorted(candidates, key=lambda c: c.probe.origin != "t0"):
        by_function.setdefault(f"{c_file(cand)}::{cand.probe.qualname}", []).append(cand)
    rounds: list[list[Candidate]] = []
    for r in range(k):
        batch = [c for group in by_function.values() for c in group[r * per_function : (r + 1) * per_function]]
        if not batch:
            break
        rounds.append(batch)
    return rounds


def c_file(candidate: Candidate) -> str:
    return candidate.probe.file
