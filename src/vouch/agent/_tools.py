"""The agent's tools over one task's public materials, and their schemas.

Every tool returns a ``ToolOutcome`` (text for the model, structured data for the trace); none
raises on what the agent asked for. Everything the agent's code or candidates run goes through
the engine with the tasks root, the output root and the task's withheld directories hidden.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from vouch.agent._config import EXECUTION_TOOLS, HarnessConfig
from vouch.agent._provider import ToolSpec
from vouch.agent._workspace import HidingExecutor, Workspace
from vouch.bench import Decision, Task, decide_cases, public_tests, replay_calls
from vouch.core import Case, Provenance, content_hash, parse_candidate
from vouch.errors import VouchError
from vouch.exec import Call, Executor, Limits, RunSpec, Script

_OBJ = {"type": "object"}
_CALLS = {
    "type": "array",
    "description": 'Tool calls in order, each {"function": name, "args": {...}}.',
    "items": {"type": "object", "properties": {"function": {"type": "string"}, "args": {"type": "object"}}},
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def tool_specs(kind: str) -> dict[str, ToolSpec]:
    """Every tool a task of ``kind`` can offer, by name."""
    candidate = {
        "type": "object",
        "description": (
            '{"source": "<program text>"}' if kind == "code" else '{"calls": [...], "final_answer": "<text or null>"}'
        ),
    }
    specs = {
        "list_files": ToolSpec(
            "list_files",
            "List the task's public files (task.toml, instruction.md, environment/...).",
            _schema({"directory": {"type": "string", "description": "Only files under this directory."}}, []),
        ),
        "read_file": ToolSpec(
            "read_file",
            "Read one public file by the name list_files gives.",
            _schema(
                {"path": {"type": "string"}, "offset": {"type": "integer", "description": "First character."}}, ["path"]
            ),
        ),
        "run_python": ToolSpec(
            "run_python",
            "Run a Python program in a sandbox without network (1 execution). Its working directory holds "
            "task/ (the public files) and verifier.py (your current verifier). Returns status and output.",
            _schema({"code": {"type": "string"}}, ["code"]),
        ),
        "write_verifier": ToolSpec(
            "write_verifier",
            "Save the verifier: a Python file defining verify(candidate, env) -> bool. Replaces the previous one.",
            _schema({"source": {"type": "string"}}, ["source"]),
        ),
        "self_test": ToolSpec(
            "self_test",
            "Run your current verifier on a candidate you construct, the way it will be scored (1 execution). "
            "Say whether you hold the candidate valid or invalid.",
            _schema(
                {"candidate": candidate, "expect": {"type": "string", "enum": ["valid", "invalid"]}},
                ["candidate", "expect"],
            ),
        ),
        "challenge": ToolSpec(
            "challenge",
            "From a candidate you hold valid, derive permitted variants and violations from the public materials "
            "and run your current verifier on each (1 execution). Reports variants it rejects and violations it "
            "accepts.",
            _schema({"candidate": candidate}, ["candidate"]),
        ),
        "submit": ToolSpec("submit", "Fix the current verifier as your answer and stop.", _schema({}, [])),
    }
    if kind == "state":
        specs["run_public"] = ToolSpec(
            "run_public",
            "Call the environment's tools (1 execution): the calls are added to this session's calls so far, all "
            "are replayed on a fresh copy of the pre-state, and you get the post-state and each new call's result.",
            _schema({"calls": _CALLS}, ["calls"]),
        )
        specs["reset"] = ToolSpec(
            "reset", "Start the environment session again from the pre-state (no execution).", _schema({}, [])
        )
    elif kind == "code":
        specs["run_public"] = ToolSpec(
            "run_public",
            "Run a candidate program on the public examples or tests of the task (1 execution).",
            _schema(
                {"source": {"type": "string", "description": "The candidate's complete program text."}}, ["source"]
            ),
        )
    return specs


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool did: text for the model, data for the trace."""

    status: str
    """ok, error (the call ran or was checked and went wrong) or refused (budget spent)."""
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    counted: bool = False
    stop: bool = False
    """submit accepted: the loop ends after this call."""


def verifier_hash(source: str) -> str:
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest()


@dataclass
class AgentState:
    """What the tools change as the agent works."""

    executions_used: int = 0
    verifier: str | None = None
    submitted: bool = False
    session_calls: list[dict[str, Any]] = field(default_factory=list)
    self_tests: int = 0


class Toolbox:
    """The tools of one task, bound to its workspace, the engine and the hidden paths."""

    def __init__(
        self,
        task: Task,
        executor: Executor,
        config: HarnessConfig,
        *,
        executions: int,
        hidden: tuple[str, ...],
    ) -> None:
        self.task = task
        self.workspace = Workspace(task)
        self.executor: Executor = HidingExecutor(executor, hidden)  # replays and nested runs too
        self.config = config
        self.executions = executions
        self.hidden = hidden
        self.state = AgentState()
        available = tool_specs(task.spec.kind)
        self.specs = {name: available[name] for name in config.tools if name in available}

    # --- dispatch -------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        method = getattr(self, f"_tool_{name}", None)
        if name not in self.specs or method is None:
            return ToolOutcome("malformed", f"error: unknown tool {name!r}; tools: {', '.join(self.specs)}")
        if name in EXECUTION_TOOLS and self.state.executions_used >= self.executions:
            return ToolOutcome(
                "refused",
                f"error: the execution budget is spent ({self.state.executions_used}/{self.executions}); "
                "you can still write_verifier and submit",
            )
        try:
            outcome: ToolOutcome = method(**arguments)
        except TypeError as exc:
            return ToolOutcome("malformed", f"error: bad arguments for {name}: {exc}")
        except VouchError:
            raise  # the engine or the store is broken: not the model's doing
        except Exception as exc:  # noqa: BLE001 - whatever the model sent, it gets an answer, not a crash
            return ToolOutcome("error", f"error: {name} failed: {type(exc).__name__}: {exc}"[:1000])
        if outcome.counted:
            self.state.executions_used += 1
        return outcome

    def _budget_note(self) -> str:
        return f"[executions used: {self.state.executions_used + 1}/{self.executions}]"

    # --- files ----------------------------------------------------------------------------

    def _tool_list_files(self, directory: str = "") -> ToolOutcome:
        names = self.workspace.listing(str(directory))
        lines = [f"{n} ({self.workspace.files[n].size} bytes)" for n in names]
        return ToolOutcome("ok", "\n".join(lines) or "no public files there", {"files": names})

    def _tool_read_file(self, path: str, offset: int = 0) -> ToolOutcome:
        text = self.workspace.text(str(path))
        if text is None:
            return ToolOutcome(
                "error", f"error: {path!r} is not a public file of this task; list_files shows the ones there are"
            )
        offset = max(0, int(offset)) if isinstance(offset, int) else 0
        limit = self.config.max_result_chars
        chunk = text[offset : offset + limit]
        more = len(text) - offset - len(chunk)
        note = f"\n[... {more} more characters; read again with offset={offset + len(chunk)}]" if more > 0 else ""
        return ToolOutcome("ok", chunk + note, {"path": path, "chars": len(chunk)})

    # --- executions -----------------------------------------------------------------------

    def _tool_run_python(self, code: str) -> ToolOutcome:
        files: dict[str, str | bytes] = {**self.workspace.run_files(), "main.py": str(code)}
        if self.state.verifier is not None:
            files["verifier.py"] = self.state.verifier
        spec = RunSpec(
            entry=Script("main.py"),
            files=files,
            limits=Limits(timeout_s=self.config.run_timeout_s, memory_mb=1024),
            hidden=self.hidden,
            name=f"{self.task.id}:run_python",
        )
        result = self.executor.run(spec)
        text = (
            f"{self._budget_note()}\nstatus: {result.status.value}"
            + (f" ({result.reason})" if result.reason else "")
            + f"\nexit code: {result.exit_code}"
            + f"\n--- stdout ---\n{result.stdout_tail}\n--- stderr ---\n{result.stderr_tail}"
        )
        return ToolOutcome("ok", text, {"status": result.status.value, "exit_code": result.exit_code}, counted=True)

    def _tool_run_public(self, calls: Any = None, source: Any = None) -> ToolOutcome:
        kind = self.task.spec.kind
        if kind == "state":
            if not isinstance(calls, list) or not all(
                isinstance(c, dict) and isinstance(c.get("function"), str) for c in calls
            ):
                return ToolOutcome("error", 'error: calls must be a list of {"function": name, "args": {...}}')
            session = [
                *self.state.session_calls,
                *({"function": c["function"], "args": c.get("args") or {}} for c in calls),
            ]
            try:
                answer = replay_calls(self.executor, self.task, session, nested=False)
            except RuntimeError as exc:
                return ToolOutcome("error", f"{self._budget_note()}\nerror: {exc}", counted=True)
            self.state.session_calls = session
            results = answer.get("results", [])
            new = results[len(session) - len(calls) :] if isinstance(results, list) else results
            body = {"results": new, "post_state": answer.get("post_state"), "session_calls": len(session)}
            return ToolOutcome(
                "ok", f"{self._budget_note()}\n{json.dumps(body, default=str)}", {"calls": len(calls)}, counted=True
            )
        if kind == "code":
            if not isinstance(source, str):
                return ToolOutcome("error", "error: run_public takes the candidate's program text as source")
            if self.task.public_tests is not None:
                answer = public_tests(self.executor, self.task, {"source": source}, self.hidden)
            else:
                prompt = self.workspace.text("environment/prompt.py") or self.workspace.text("instruction.md") or ""
                spec = RunSpec(
                    entry=Call("vouch.agent._runside:run_examples", args=(source, prompt)),
                    limits=Limits(timeout_s=self.config.run_timeout_s, memory_mb=512),
                    hidden=self.hidden,
                    name=f"{self.task.id}:run_public",
                )
                result = self.executor.run(spec)
                if result.ok and isinstance(result.value, dict):
                    answer = result.value
                else:
                    answer = {"ok": False, "error": f"{result.status.value}: {result.reason}", "outcomes": []}
            return ToolOutcome(
                "ok",
                f"{self._budget_note()}\n{json.dumps(answer, default=str)}",
                {"ok": answer.get("ok")},
                counted=True,
            )
        return ToolOutcome("error", f"error: a {kind} task has no public environment to run")

    def _tool_reset(self) -> ToolOutcome:
        dropped = len(self.state.session_calls)
        self.state.session_calls = []
        return ToolOutcome("ok", f"the environment is back at its pre-state ({dropped} session calls dropped)")

    # --- the verifier ---------------------------------------------------------------------

    def _tool_write_verifier(self, source: str) -> ToolOutcome:
        if not isinstance(source, str) or not source.strip():
            return ToolOutcome("error", "error: source must be the verifier's program text")
        try:
            tree = ast.parse(source)  # parsing only: the verifier runs in the engine, never here
        except SyntaxError as exc:
            return ToolOutcome("error", f"error: syntax error at line {exc.lineno}: {exc.msg}; nothing was saved")
        has_verify = any(isinstance(n, ast.FunctionDef) and n.name == "verify" for n in tree.body)
        self.state.verifier = source
        warning = "" if has_verify else " (warning: no top-level def verify(candidate, env) found)"
        return ToolOutcome(
            "ok", f"saved verifier.py, {len(source)} characters{warning}", {"verifier_hash": verifier_hash(source)}
        )

    def _candidate_error(self, candidate: Any) -> str | None:
        try:
            parse_candidate(self.task.spec.kind, candidate)
        except Exception as exc:  # noqa: BLE001 - pydantic's error, shown to the model
            return f"error: the candidate does not fit a {self.task.spec.kind} task: {str(exc).splitlines()[0:3]}"
        return None

    def _tool_self_test(self, candidate: Any, expect: str) -> ToolOutcome:
        if self.state.verifier is None:
            return ToolOutcome("error", "error: write_verifier first; there is no verifier to test")
        if expect not in ("valid", "invalid"):
            return ToolOutcome("error", "error: expect must be 'valid' or 'invalid'")
        problem = self._candidate_error(candidate)
        if problem is not None:
            return ToolOutcome("error", problem)
        self.state.self_tests += 1
        case = Case(
            id=f"self-test-{self.state.self_tests}",
            label="positive" if expect == "valid" else "negative",
            category="gold" if expect == "valid" else "error",
            subcategory="gold" if expect == "valid" else "self_test",
            candidate=candidate,
            provenance=Provenance(construction="self_test", content_hash=content_hash(candidate)),
            rationale="written by the agent",
        )
        [result] = decide_cases(self.executor, [(self.task, case, self.state.verifier)], hide=self.hidden)
        wanted = Decision.PASS if expect == "valid" else Decision.FAIL
        verdict = "as you expected" if result.decision is wanted else f"you expected {wanted.value}"
        reason = f": {result.reason}" if result.reason else ""
        data = {
            "expect": expect,
            "decision": result.decision.value,
            "reason": result.reason,
            "verifier_hash": verifier_hash(self.state.verifier),
        }
        return ToolOutcome(
            "ok", f"{self._budget_note()}\n{result.decision.value}{reason} ({verdict})", data, counted=True
        )

    def _tool_challenge(self, candidate: Any) -> ToolOutcome:
        from vouch.agent._challenge import run_challenge

        if self.state.verifier is None:
            return ToolOutcome("error", "error: write_verifier first; there is no verifier to challenge")
        problem = self._candidate_error(candidate)
        if problem is not None:
            return ToolOutcome("error", problem)
        error, text, data = run_challenge(self.executor, self.task, self.state.verifier, candidate)
        if error is not None:
            return ToolOutcome("error", f"error: {error}")
        data["verifier_hash"] = verifier_hash(self.state.verifier)
        return ToolOutcome("ok", f"{self._budget_note()}\n{text}", data, counted=True)

    def _tool_submit(self) -> ToolOutcome:
        if self.state.verifier is None:
            return ToolOutcome("error", "error: write_verifier first; there is nothing to submit")
        self.state.submitted = True
        return ToolOutcome("ok", "submitted", {"verifier_hash": verifier_hash(self.state.verifier)}, stop=True)
