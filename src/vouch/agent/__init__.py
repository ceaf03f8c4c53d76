"""Verifier generation: LLM providers, the agent's tools and budgets, harness configs, traces
and their analysis (VerifierBench sections 2.1, 3.3, 4 and appendix E)."""

from __future__ import annotations

from vouch.agent._analysis import TaskAnalysis, analyze, summarize
from vouch.agent._config import ALL_TOOLS, CONFIGS, EXECUTION_TOOLS, HarnessConfig, load_config
from vouch.agent._generate import TaskRun, generate, generate_task, hidden_paths, results_object, write_results
from vouch.agent._loop import AgentResult, AgentTools, LoopResult, budgets_for, run_agent, run_loop
from vouch.agent._prices import DEFAULT_PRICES, Price, PriceTable, load_prices
from vouch.agent._provider import (
    PROVIDERS,
    Message,
    ModelReply,
    Provider,
    ProviderError,
    RetryPolicy,
    ToolCallRequest,
    ToolSpec,
    Usage,
    get_provider,
)
from vouch.agent._tools import Toolbox, ToolOutcome, tool_specs
from vouch.agent._trace import TraceWriter, read_trace
from vouch.agent._workspace import Workspace

__all__ = [
    "ALL_TOOLS",
    "CONFIGS",
    "DEFAULT_PRICES",
    "EXECUTION_TOOLS",
    "PROVIDERS",
    "AgentResult",
    "AgentTools",
    "HarnessConfig",
    "LoopResult",
    "Message",
    "ModelReply",
    "Price",
    "PriceTable",
    "Provider",
    "ProviderError",
    "RetryPolicy",
    "TaskAnalysis",
    "TaskRun",
    "ToolCallRequest",
    "ToolOutcome",
    "ToolSpec",
    "Toolbox",
    "TraceWriter",
    "Usage",
    "Workspace",
    "analyze",
    "budgets_for",
    "generate",
    "generate_task",
    "get_provider",
    "hidden_paths",
    "load_config",
    "load_prices",
    "read_trace",
    "results_object",
    "run_agent",
    "run_loop",
    "summarize",
    "tool_specs",
    "write_results",
]
