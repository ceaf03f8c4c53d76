"""The SWE witness agent's tools (``read_file``, ``run_witness``, ``submit_witness``,
``give_up``) and the static check of what a witness may import from the repository.

A witness reaches the repository as T0 does, by importing its modules; it may import only
names that exist in R[G] and that P or the gold patch names. A name only the trial's patch adds
(a helper, a constant) is refused: P never asked for it, so a test failing on it says nothing
about the behaviour P requires. Reading files is not running code: ``read_file`` reads a
world's tree in the judge's process, confined to that tree; every test runs through the engine.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from vouch.agent import ToolOutcome, ToolSpec
from vouch.audit._validation import reported
from vouch.audit.function._agent_tools import INTROSPECTION_ATTRS, INTROSPECTION_MODULES, WitnessToolbox, schema
from vouch.audit.repository._runs import _WITNESS_DIR, record_witness_run
from vouch.audit.repository._witness import test_file_name
from vouch.exec import RunResult
from vouch.swebench import Runner
from vouch.worlds import World, read_world_text

__all__ = ["SWE_TOOLS", "RepoNames", "SweSubmission", "SweWitnessTools", "foreign_repo_names"]

MAX_READ_CHARS = 20_000
"""Characters of a file ``read_file`` returns at once (``offset`` pages on)."""
MAX_LISTED = 200
_WORLDS = {"R[G]": "reference", "G": "reference", "reference": "reference", "R[s]": "trial", "s": "trial"}
_WORLDS |= {"trial": "trial"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


SWE_TOOLS = {
    "read_file": ToolSpec(
        "read_file",
        "Read a file of the repository in one world (read-only; no execution used): world 'R[G]' (gold patch "
        "applied) or 'R[s]' (the trial's patch applied), both with the test patch. A directory is listed. Paths "
        "are relative to the repository root.",
        schema(
            {
                "path": {"type": "string", "description": "Relative path, e.g. pkg/module.py ('' lists the root)."},
                "world": {"type": "string", "enum": ["R[G]", "R[s]"]},
                "offset": {"type": "integer", "description": "Character offset to read from (default 0)."},
            },
            ["path", "world"],
        ),
    ),
    "run_witness": ToolSpec(
        "run_witness",
        "Run a pytest witness file once in R[G] and once in R[s] (1 execution of the budget). Returns each "
        "world's outcome and each test's outcome with the first line of its failure.",
        schema({"source": {"type": "string", "description": "The whole pytest file."}}, ["source"]),
    ),
    "submit_witness": ToolSpec(
        "submit_witness",
        "Submit a witness for validation (3 runs in R[G] must pass, 3 in R[s] must fail by AssertionError, a "
        "check of the names it imports, then a review against P). Ends this iteration.",
        schema(
            {
                "source": {"type": "string", "description": "The whole pytest file."},
                "clause_id": {"type": "string", "description": "Id of the checklist clause it checks, e.g. C2."},
            },
            ["source", "clause_id"],
        ),
    ),
    "give_up": ToolSpec(
        "give_up",
        "End the audit of this trial: you hold it correct, or find no witness. Say why.",
        schema({"reason": {"type": "string"}}, ["reason"]),
    ),
}


# --- what a witness may import -------------------------------------------------------------


def _module_file(root: Path, dotted: str) -> Path | None:
    """The source file of module ``dotted`` under ``root`` (a package's ``__init__.py``), or None."""
    base = root.joinpath(*dotted.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _defined(root: Path, path: Path) -> set[str]:
    """Top-level names a module's source binds (functions, classes, assignments, imports)."""
    try:
        tree = ast.parse(read_world_text(root, path.relative_to(root).as_posix()))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


@dataclass(frozen=True)
class RepoNames:
    """What the static check compares a witness's imports with."""

    reference: Path
    """R[G]'s root: a name must exist here."""
    trial: Path
    """R[s]'s root: to say that a name only the trial adds is such a name."""
    named: frozenset[str]
    """Identifiers P or the gold patch contains: a name must be one of them."""

    @classmethod
    def of(cls, reference: World, trial: World, problem: str, gold_patch: str) -> RepoNames:
        return cls(reference.path, trial.path, frozenset(_IDENT.findall(problem) + _IDENT.findall(gold_patch)))

    def is_repo_module(self, dotted: str) -> bool:
        top = dotted.split(".")[0]
        return any(_module_file(root, top) is not None for root in (self.reference, self.trial))

    def check(self, module: str, name: str) -> str | None:
        """Why ``module.name`` may not be reached (None when it may): a submodule, or a top-level
        name of the module, that exists in R[G] and that P or the gold patch names."""
        sub = f"{module}.{name}"
        where = _module_file(self.reference, module)
        defined = where is not None and name in _defined(self.reference, where)
        in_reference = _module_file(self.reference, sub) is not None or defined
        if not in_reference:
            there = _module_file(self.trial, module)
            if _module_file(self.trial, sub) is not None or (there is not None and name in _defined(self.trial, there)):
                return f"{sub} (only the trial's patch adds it: P never asks for it)"
            return f"{sub} (R[G] does not define it)"
        if name not in self.named:
            return f"{sub} (neither P nor the gold patch names it)"
        return None


def foreign_repo_names(source: str, names: RepoNames) -> list[str]:
    """What a witness reaches in the repository beyond what it may (empty when nothing).

    ``from M import X`` and ``import M [as A]`` followed by ``A.X`` (or ``M.sub.X``) are checked
    for every module M of the repository: M must exist in R[G], and X (a submodule or a top-level
    name) must exist in R[G] and be named by P or the gold patch. Reading the program instead of
    running it (``inspect``, ``importlib``, ``__code__``...) is refused too; relative imports
    and star imports from the repository cannot be checked and are refused.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [f"the file does not parse ({exc.msg}, line {exc.lineno})"]
    found: list[str] = []
    aliases: dict[str, str] = {}  # local name -> the repository module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                found.append(f"a relative import (from {'.' * node.level}{module} import ...)")
            elif module.split(".")[0] in INTROSPECTION_MODULES:
                found.append(f"{module} (reads the program, not its behaviour)")
            elif names.is_repo_module(module):
                if _module_file(names.reference, module) is None:
                    found.append(f"module {module} (R[G] has no such module)")
                    continue
                for a in node.names:
                    if a.name == "*":
                        found.append(f"from {module} import * (import the names P or G names)")
                        continue
                    why = names.check(module, a.name)
                    if why is not None:
                        found.append(why)
                    elif _module_file(names.reference, f"{module}.{a.name}") is not None:
                        aliases[a.asname or a.name] = f"{module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in INTROSPECTION_MODULES:
                    found.append(f"{a.name} (reads the program, not its behaviour)")
                elif names.is_repo_module(a.name):
                    if _module_file(names.reference, a.name) is None:
                        found.append(f"module {a.name} (R[G] has no such module)")
                    elif a.asname is None:  # `import a.b` binds `a`
                        aliases[a.name.split(".")[0]] = a.name.split(".")[0]
                    else:
                        aliases[a.asname] = a.name
        elif isinstance(node, ast.Attribute) and node.attr in INTROSPECTION_ATTRS:
            found.append(f".{node.attr} (reads the program, not its behaviour)")
        elif isinstance(node, ast.Name) and node.id == "__import__":
            found.append("__import__ (a module reached by name)")
    found += _attribute_names(tree, aliases, names)
    return sorted(set(found))


def _attribute_names(tree: ast.AST, aliases: dict[str, str], names: RepoNames) -> list[str]:
    """``A.X`` (and ``A.sub.X``) for module aliases ``A``: each attribute checked in turn; ``A``
    used otherwise (``dir(A)``, ``getattr(A, ...)``) reaches the module itself, and a module's
    name as a string reaches it by name (``sys.modules[...]``)."""
    found: list[str] = []
    bases: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            bases.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases and id(node) not in bases:
            found.append(f"the module {aliases[node.id]} itself (only module.NAME for names P or G names)")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.fullmatch(r"[A-Za-z_][\w.]*", node.value)
            and names.is_repo_module(node.value)
            and any(_module_file(root, node.value) for root in (names.reference, names.trial))
        ):
            found.append(f"{node.value!r} named as a string (the module reached by name)")
        if not isinstance(node, ast.Attribute):
            continue
        chain: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in aliases:
            continue
        module = aliases[base.id]
        for part in chain:
            why = names.check(module, part)
            if why is not None:
                found.append(why)
                break
            if _module_file(names.reference, f"{module}.{part}") is None:
                break  # a name of the module: what follows is the value's attribute
            module = f"{module}.{part}"
    return found


# --- the toolbox ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SweSubmission:
    """A submitted witness and the clause it names (None: the agent named none)."""

    source: str
    clause_id: str | None


class SweWitnessTools(WitnessToolbox):
    """The tools of one SWE trial's session, bound to its two worlds and the engine."""

    budget_hint = "you can still read files, submit_witness or give_up"

    def __init__(
        self,
        runner: Runner,
        reference: World,
        trial: World,
        names: RepoNames,
        *,
        executions: int,
        checklist_ids: Sequence[str],
    ) -> None:
        super().__init__()
        self.runner = runner
        self.worlds = {"reference": reference, "trial": trial}
        self.names = names
        self.executions = executions
        self.checklist_ids = list(checklist_ids)
        self.specs = dict(SWE_TOOLS)
        self.submission: SweSubmission | None = None

    def _tool_read_file(self, path: Any, world: Any, offset: Any = 0) -> ToolOutcome:
        kind = _WORLDS.get(str(world))
        if kind is None:
            return ToolOutcome("error", f"error: world {world!r} is not R[G] or R[s]")
        text = str(path).strip()
        pure = PurePosixPath(text)
        if text.startswith(("/", "\\", "~")) or pure.is_absolute() or ".." in pure.parts or "\\" in text:
            return ToolOutcome("refused", f"error: {text!r}: give a path relative to the repository root, without ..")
        root = self.worlds[kind].path.resolve()
        target = (root / text).resolve() if text not in ("", ".") else root
        if target != root and root not in target.parents:
            return ToolOutcome("refused", f"error: {text!r} leads outside the repository")
        if ".git" in PurePosixPath(target.relative_to(root).as_posix()).parts:
            return ToolOutcome("refused", "error: .git is not part of the world")
        if target.is_dir():
            entries = sorted(
                f"{p.relative_to(root).as_posix()}{'/' if p.is_dir() else ''}"
                for p in target.iterdir()
                if p.name != ".git" and p.name != "__pycache__"
            )
            listing = "\n".join(entries[:MAX_LISTED]) + (
                f"\n... {len(entries) - MAX_LISTED} more" if len(entries) > MAX_LISTED else ""
            )
            return ToolOutcome("ok", listing or "(empty directory)", {"listed": len(entries)})
        try:
            content = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ToolOutcome("error", f"error: {text}: no such file in {world}")
        except (OSError, UnicodeDecodeError) as exc:
            return ToolOutcome("error", f"error: {text}: not a readable text file ({type(exc).__name__})")
        start = offset if isinstance(offset, int) and offset > 0 else 0
        chunk = content[start : start + MAX_READ_CHARS]
        rest = len(content) - start - len(chunk)
        more = f"\n[... {rest} more characters: read_file with offset={start + len(chunk)}]" if rest > 0 else ""
        return ToolOutcome("ok", chunk + more, {"chars": len(content)})

    def _tool_run_witness(self, source: Any) -> ToolOutcome:
        refused = self._cannot_run(source)
        if refused is not None:
            return refused
        name = test_file_name("try", f"{self.runs}\n{source}")
        worlds = [self.worlds["reference"], self.worlds["trial"]]
        [ref], [trial] = self.runner.witness_runs(worlds, {f"{_WITNESS_DIR}/{name}": str(source)}, 1, noconftest=True)
        lines = [self._budget_line()]
        data: dict[str, Any] = {}
        for label, kind, run in (("R[G] (gold patch)", "reference", ref), ("R[s] (the trial)", "model", trial)):
            rec = record_witness_run(kind, run, name)
            data[label.split()[0]] = rec.outcome
            detail = (
                f" ({rec.exception}: {rec.message})" if rec.exception else (f" ({rec.message})" if rec.message else "")
            )
            lines.append(f"{label}: {rec.outcome}{detail}")
            lines += _test_lines(run)
        foreign = foreign_repo_names(str(source), self.names)
        if foreign:
            lines.append(f"warning: validation will discard this file: it reaches {', '.join(foreign)}")
        return ToolOutcome("ok", "\n".join(lines), data, counted=True)

    def _tool_submit_witness(self, source: Any, clause_id: Any = None) -> ToolOutcome:
        problem = self._source_problem(source)
        if problem is not None:
            return ToolOutcome("error", f"{problem}; nothing was submitted")
        chosen = str(clause_id).strip() if clause_id is not None else ""
        if chosen and chosen not in self.checklist_ids:
            return ToolOutcome(
                "error",
                f"error: clause_id {chosen!r} is not in the checklist; ids: {', '.join(self.checklist_ids) or 'none'}",
            )
        self.submission = SweSubmission(str(source), chosen or None)
        self.state.submitted = True
        return ToolOutcome("ok", "submitted for validation", {"clause_id": chosen or None})


def _test_lines(run: RunResult) -> list[str]:
    """Each test's outcome in one run, with the first line of its failure."""
    record = reported(run)
    lines = []
    for nodeid, test in sorted((record.tests if record is not None else {}).items()):
        why = f": {test.exception}: {test.message}" if test.exception else ""
        lines.append(f"  {nodeid.split('::', 1)[-1]}: {test.outcome}{why}")
    return lines
