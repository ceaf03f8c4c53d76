"""The witness agent's tools (``run_witness``, ``submit_witness``, ``give_up``) and the static
check of what a witness may reach in ``solution``: the names P defines, nothing else."""

from __future__ import annotations

import ast
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vouch.agent import ToolOutcome, ToolSpec
from vouch.audit._validation import reported
from vouch.audit.function import _witness
from vouch.audit.function._jobs import ProgramJob, TaskContext
from vouch.errors import VouchError
from vouch.exec import RunResult, RunSpec


class Runner(Protocol):
    """What the witness tools need of the audit's ``Engine``: a batch of runs under a stage name."""

    def run(self, specs: Sequence[RunSpec], stage: str) -> list[RunResult]: ...


class SerialRunner:
    """An engine shared by concurrent trial sessions: one batch at a time (the model calls, the
    slow part, overlap; the engine's counters see one caller)."""

    def __init__(self, engine: Runner) -> None:
        self.engine = engine
        self._lock = threading.Lock()

    def run(self, specs: Sequence[RunSpec], stage: str) -> list[RunResult]:
        with self._lock:
            return self.engine.run(specs, stage)


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A tool's parameters: an object with exactly these properties."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOLS = {
    "run_witness": ToolSpec(
        "run_witness",
        "Run a pytest witness file once against G (reference) and once against s (the trial): 1 execution. "
        "Returns each test's outcome per world and the first line of each failure.",
        schema({"source": {"type": "string", "description": "The whole pytest file."}}, ["source"]),
    ),
    "submit_witness": ToolSpec(
        "submit_witness",
        "Submit a witness for validation (3 runs on G must pass, 3 on s must fail by AssertionError, then a "
        "review against P). Ends this iteration.",
        schema(
            {
                "source": {"type": "string", "description": "The whole pytest file."},
                "clause_id": {"type": "string", "description": "Id of the checklist clause it checks, e.g. S1."},
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


def p_names(prompt: str) -> set[str]:
    """Top-level names P defines (functions, classes, assignments, imports): all a witness may import."""
    try:
        tree = ast.parse(prompt + "    pass\n")
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


INTROSPECTION_MODULES = {"inspect", "dis", "importlib"}
"""Modules through which a test reads the program instead of running it."""
INTROSPECTION_ATTRS = {"__globals__", "__code__", "__closure__", "__dict__", "__module__"}


def foreign_names(source: str, allowed: set[str]) -> list[str]:
    """What a witness reaches in ``solution`` beyond the names P defines (empty when nothing).

    A witness may ``from solution import NAME`` or ``import solution`` and use ``solution.NAME``
    for names P defines. Anything else (a helper P never names, ``dir(solution)``, the module by
    name through ``importlib`` or ``sys.modules``, the program's code through ``inspect``) makes
    a failure in R[s] about a name or the program's text, not about behaviour P requires.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [f"the file does not parse ({exc.msg}, line {exc.lineno})"]
    found: list[str] = []
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "solution" and not node.level:
            found += [f"{a.name} (imported from solution)" for a in node.names if a.name not in allowed]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "solution":
                    aliases.add(a.asname or a.name)
                elif a.name.split(".")[0] in INTROSPECTION_MODULES:
                    found.append(f"{a.name} (reads the program, not its behaviour)")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in INTROSPECTION_MODULES:
            found.append(f"{node.module} (reads the program, not its behaviour)")
        elif isinstance(node, ast.Constant) and node.value in ("solution", "solution.py"):
            found.append(f"{node.value!r} named as a string (the module reached by name)")
        elif isinstance(node, ast.Attribute) and node.attr in INTROSPECTION_ATTRS:
            found.append(f".{node.attr} (reads the program, not its behaviour)")
    used_as_attribute_base: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            used_as_attribute_base.add(id(node.value))
            if node.attr not in allowed:
                found.append(f"{node.value.id}.{node.attr}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases and id(node) not in used_as_attribute_base:
            found.append(f"the module {node.id} itself (only solution.NAME for names P defines)")
    return sorted(set(found))


@dataclass
class Submission:
    source: str
    clause_id: str


@dataclass
class WitnessState:
    """What the tools change as the agent works (``executions_used``/``submitted`` drive the loop)."""

    executions_used: int = 0
    submitted: bool = False
    submission: Submission | None = None
    gave_up: str | None = None


class WitnessToolbox:
    """What every witness toolbox shares: dispatch (an unknown tool or bad arguments answered,
    never raised; an engine failure re-raised and remembered), the execution budget, the check
    that a source is a pytest file, and ``give_up``. Subclasses set ``specs``, ``executions``
    and the ``_tool_<name>`` methods."""

    specs: dict[str, ToolSpec]
    executions: int
    budget_hint = "you can still submit_witness or give_up"
    """What the agent can still do once the execution budget is spent."""

    def __init__(self) -> None:
        self.state = WitnessState()
        self.engine_error: BaseException | None = None
        self.runs = 0

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        method = getattr(self, f"_tool_{name}", None)
        if name not in self.specs or method is None:
            return ToolOutcome("malformed", f"error: unknown tool {name!r}; tools: {', '.join(self.specs)}")
        try:
            outcome: ToolOutcome = method(**arguments)
        except TypeError as exc:
            return ToolOutcome("malformed", f"error: bad arguments for {name}: {exc}")
        except VouchError as exc:
            self.engine_error = exc  # the engine is broken: not the model's doing, and not a model failure
            raise
        if outcome.counted:
            self.state.executions_used += 1
        return outcome

    @staticmethod
    def _source_problem(source: Any) -> str | None:
        """Why ``source`` cannot be a witness file (None when it can)."""
        if not isinstance(source, str) or not source.strip():
            return "error: source must be the whole pytest file as a string"
        try:
            tree = ast.parse(source)  # parsing only: the test runs in the engine, never here
        except SyntaxError as exc:
            return f"error: syntax error at line {exc.lineno}: {exc.msg}"
        if not any(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in ast.walk(tree)):
            return "error: the file defines no test function (def test_...)"
        return None

    def _cannot_run(self, source: Any) -> ToolOutcome | None:
        """The answer to a ``run_witness`` that must not run (not a test file, budget spent); None to run it."""
        problem = self._source_problem(source)
        if problem is not None:
            return ToolOutcome("error", problem)
        if self.state.executions_used >= self.executions:
            return ToolOutcome(
                "refused",
                f"error: the execution budget is spent ({self.state.executions_used}/{self.executions}); "
                f"{self.budget_hint}",
            )
        self.runs += 1
        return None

    def _budget_line(self) -> str:
        return f"[executions used: {self.state.executions_used + 1}/{self.executions}]"

    def _tool_give_up(self, reason: Any) -> ToolOutcome:
        self.state.gave_up = str(reason).strip() or "(no reason given)"
        self.state.submitted = True
        return ToolOutcome("ok", "the audit of this trial ends here", {"reason": self.state.gave_up})


class WitnessTools(WitnessToolbox):
    """The witness tools of one trial, bound to the engine, the task and the program."""

    def __init__(
        self, engine: Runner, ctx: TaskContext, job: ProgramJob, *, executions: int, checklist_ids: list[str]
    ) -> None:
        super().__init__()
        self.engine = engine
        self.ctx = ctx
        self.job = job
        self.executions = executions
        self.checklist_ids = checklist_ids
        self.allowed = p_names(ctx.problem.prompt)
        self.specs = dict(TOOLS)

    def _tool_run_witness(self, source: Any) -> ToolOutcome:
        refused = self._cannot_run(source)
        if refused is not None:
            return refused
        text = str(source)
        wf = _witness.WitnessFile(f"test_witness_try_{self.runs}.py", text)
        specs = [
            _witness.validation_spec(wf, self.ctx.problem.reference, "R[G]", 0, self.ctx.problem),
            _witness.validation_spec(wf, self.job.program, "R[s]", 0, self.ctx.problem),
        ]
        results = self.engine.run(specs, "agent: run_witness")
        lines = [self._budget_line()]
        data: dict[str, Any] = {}
        for world, result in zip(("R[G] (reference G)", "R[s] (trial s)"), results, strict=True):
            rec = _witness.record("reference" if world.startswith("R[G]") else "model", result)
            data[world.split()[0]] = rec.outcome
            lines.append(f"{world}: {rec.outcome}" + (f" ({rec.exception}: {rec.message})" if rec.exception else ""))
            run = reported(result)
            for nodeid, test in (run.tests if run is not None else {}).items():
                message = f": {test.crash}" if test.crash else ""
                lines.append(f"  {nodeid.split('::')[-1]}: {test.outcome}{message}")
        foreign = foreign_names(text, self.allowed)
        if foreign:
            lines.append(
                f"warning: validation will discard this file: it reaches {', '.join(foreign)}; P defines only "
                f"{', '.join(sorted(self.allowed))}"
            )
        return ToolOutcome("ok", "\n".join(lines), data, counted=True)

    def _tool_submit_witness(self, source: Any, clause_id: Any) -> ToolOutcome:
        problem = self._source_problem(source)
        if problem is not None:
            return ToolOutcome("error", f"{problem}; nothing was submitted")
        if clause_id not in self.checklist_ids:
            return ToolOutcome(
                "error",
                f"error: clause_id {clause_id!r} is not in the checklist; ids: {', '.join(self.checklist_ids)}",
            )
        self.state.submission = Submission(str(source), str(clause_id))
        self.state.submitted = True
        return ToolOutcome("ok", "submitted for validation", {"clause_id": clause_id})
