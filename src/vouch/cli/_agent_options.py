"""Command-line options shared by ``vouch audit humaneval`` and ``vouch audit swe``: the mode and
its rounds, the auditing model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from vouch.audit import MODES, REPOSITORY_MODES, SOURCES, WitnessAgent, witness_agent
from vouch.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])


def _mode_option(modes: tuple[str, ...], static: str) -> Callable[[F], F]:
    return click.option(
        "--mode",
        type=click.Choice(list(modes)),
        default="per-trial",
        show_default=True,
        help="per-trial: audit every passing trial; lightweight: TestJack's Algorithm 1 (task analysis, sampled "
        f"audits, shared witnesses){static}.",
    )


mode_option = _mode_option(MODES, "; static: the SWE-ABS-style baseline (tests built from G only)")
"""``--mode`` of ``vouch audit humaneval``."""
repo_mode_option = _mode_option(REPOSITORY_MODES, "")
"""``--mode`` of ``vouch audit swe`` (the repository form has no static baseline)."""


def rounds_option(unit: str) -> Callable[[F], F]:
    """``--rounds``: audit rounds per ``unit`` (task, instance) after task analysis."""
    return click.option(
        "--rounds",
        type=click.IntRange(min=0, max=100),
        default=3,
        show_default=True,
        help=f"Lightweight mode: audit rounds per {unit} after task analysis (0: task analysis alone).",
    )


agent_model_option = click.option(
    "--agent-model",
    default=None,
    help="The auditing model, PROVIDER/MODEL (--witness-source agent), e.g. openai/gpt-4o; "
    "OPENAI_BASE_URL points it at a local OpenAI-compatible server.",
)
agent_config_option = click.option(
    "--agent-config",
    default=None,
    help="Harness config of the auditing model: a built-in name or a .toml file (effort, budgets, timeouts).",
)


def auditing_agent(
    witness_source: str, agent_model: str | None, agent_config: str | None, *, concurrency: int = 1
) -> WitnessAgent | None:
    """The auditing model for ``--witness-source agent`` (checked to answer), else None.

    Raises:
        UsageError: agent without ``--agent-model``, or agent options with another source; no key.
        InfrastructureError: the endpoint cannot be reached. Both are one line, before any trial starts.
    """
    if not SOURCES[witness_source].model:
        if agent_model or agent_config:
            raise UsageError("--agent-model and --agent-config go with --witness-source agent")
        return None
    if not agent_model:
        raise UsageError(
            "--witness-source agent needs --agent-model PROVIDER/MODEL (the auditing model, e.g. openai/gpt-4o)"
        )
    agent = witness_agent(agent_model, agent_config, concurrency=concurrency)
    agent.provider.check()
    return agent
