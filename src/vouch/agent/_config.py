"""Harness configurations: named, recorded settings (system prompt, tool set, reasoning effort,
budgets), so that harness A against B, or effort LOW against HIGH, is a config change.

Built-in names are in ``CONFIGS``; a user config is a TOML file whose fields are those of
``HarnessConfig`` and which may start from a built-in one with ``base = "NAME"``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from vouch.core import Budgets
from vouch.errors import UsageError

ALL_TOOLS = (
    "list_files",
    "read_file",
    "run_python",
    "run_public",
    "reset",
    "write_verifier",
    "self_test",
    "challenge",
    "submit",
)
EXECUTION_TOOLS = frozenset({"run_python", "run_public", "self_test", "challenge"})
"""Tools that each spend one execution of the budget."""
REQUIRED_TOOLS = frozenset({"write_verifier", "submit"})

SYSTEM_PROMPT = """\
You write an executable verifier for one task of an agent benchmark. A verifier is a Python file
defining `verify(candidate, env) -> bool`: True (PASS) when the candidate solves the task as the
instruction asks, False (FAIL) otherwise. Only a real bool counts; an exception is INVALID.

Candidates by task kind:
- tool_call: candidate = {"calls": [{"function": str, "args": {...}}, ...], "final_answer": str | None};
  env.tools holds the public tool schemas.
- state: the same payload; env.pre_state and env.post_state are JSON snapshots of the environment
  before and after the calls were replayed; env.run_public(calls) replays other calls on a fresh copy
  of the pre-state and returns {"pre_state", "post_state", "results"}.
- code: candidate = {"source": str}; env.call(function, args, timeout=3.0) runs the candidate in a
  separate sandbox and returns {"ok": bool, "value": ..., "error": str | None}.

Your verifier is scored on hidden cases: valid solutions it must accept (including permitted
variants: an omitted optional argument whose default serves, independent calls in another order, an
extra read-only call, an equivalent representation, a cosmetic code change) and errors and attacks it
must reject. Check what the task requires, nothing it does not require.

Work only with the tools. Inspect the public files, try the public environment, write the verifier
with write_verifier, test it with self_test on candidates you construct (both ones you hold valid and
ones you hold invalid), and call submit when you are done. run_python, run_public and self_test each
spend one execution of a limited budget: keep some for testing the final verifier.
"""

MINIMAL_PROMPT = """\
Write `verify(candidate, env) -> bool` in Python for the task below: True when the candidate solves
it, False otherwise. Save it with write_verifier and call submit.
"""


class HarnessConfig(BaseModel):
    """A harness configuration, recorded in every results file and trace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The configuration's name, as given to --config.")
    description: str = Field(default="", description="One line on what this configuration varies.")
    system_prompt: str = Field(default=SYSTEM_PROMPT, description="The system message the agent starts with.")
    tools: list[str] = Field(
        default_factory=lambda: [t for t in ALL_TOOLS if t != "challenge"],
        description="Tools offered (those a task's kind cannot use are left out for that task).",
    )
    effort: str | None = Field(
        default=None, description="Reasoning effort sent to the model (minimal/low/medium/high); null sends none."
    )
    budgets: Budgets | None = Field(
        default=None, description="Budgets for every task; null uses each task.toml's budgets (paper defaults)."
    )
    run_timeout_s: float = Field(default=30.0, gt=0, description="Wall-clock limit of one run_python run.")
    request_timeout_s: float = Field(default=600.0, gt=0, description="Timeout of one model request.")
    max_retries: int = Field(default=5, ge=0, description="Retries of a model request on 429, 5xx or a timeout.")
    max_result_chars: int = Field(default=12000, gt=0, description="A tool result longer than this is cut.")

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools: list[str]) -> list[str]:
        unknown = [t for t in tools if t not in ALL_TOOLS]
        if unknown:
            raise ValueError(f"unknown tools {unknown}; valid tools: {', '.join(ALL_TOOLS)}")
        missing = sorted(REQUIRED_TOOLS - set(tools))
        if missing:
            raise ValueError(f"tools must include {', '.join(missing)}")
        return tools

    @field_validator("effort")
    @classmethod
    def _known_effort(cls, effort: str | None) -> str | None:
        if effort is not None and effort not in ("minimal", "low", "medium", "high"):
            raise ValueError(f"effort {effort!r} is not one of minimal, low, medium, high")
        return effort


def _builtin() -> dict[str, HarnessConfig]:
    default = HarnessConfig(name="default", description="All tools but the challenger; no effort sent; task budgets.")
    return {
        "default": default,
        "minimal": HarnessConfig(
            name="minimal",
            description="A short prompt and no execution tools: read, write, submit.",
            system_prompt=MINIMAL_PROMPT,
            tools=["list_files", "read_file", "write_verifier", "submit"],
        ),
        "effort-low": default.model_copy(
            update={"name": "effort-low", "description": "default, effort low.", "effort": "low"}
        ),
        "effort-high": default.model_copy(
            update={"name": "effort-high", "description": "default, effort high.", "effort": "high"}
        ),
        "with-challenger": default.model_copy(
            update={
                "name": "with-challenger",
                "description": "default plus the challenge tool (variants and violations of a valid candidate).",
                "tools": [*default.tools[:-1], "challenge", "submit"],
                "system_prompt": SYSTEM_PROMPT
                + "\nThe challenge tool derives permitted variants and violations from a candidate you hold valid and\n"
                "runs your current verifier on them: use it to find checks the task does not justify.\n",
            }
        ),
    }


CONFIGS: dict[str, HarnessConfig] = _builtin()


def load_config(name_or_path: str) -> HarnessConfig:
    """A built-in configuration by name, or a TOML file (``base = "NAME"`` starts from a built-in).

    Raises:
        UsageError: an unknown name (the valid ones are listed), an unreadable file or a bad field.
    """
    if name_or_path in CONFIGS:
        return CONFIGS[name_or_path]
    path = Path(name_or_path)
    if not name_or_path.endswith(".toml") and not path.exists():
        raise UsageError(
            f"unknown harness config {name_or_path!r}; built-in configs: {', '.join(CONFIGS)} (or a .toml file)"
        )
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the harness config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    base_name = data.pop("base", "default")
    if base_name not in CONFIGS:
        raise UsageError(f"{path}: base {base_name!r} is not a built-in config; valid: {', '.join(CONFIGS)}")
    merged = CONFIGS[base_name].model_dump() | {"name": path.stem} | data
    try:
        return HarnessConfig.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UsageError(f"{path}: field {where}: {first['msg']}") from None
