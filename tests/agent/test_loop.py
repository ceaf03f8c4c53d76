"""The agent loop in process: the Anthropic provider end to end, the wall-clock budget, and an
endpoint that fails for good (the task is left unfinished, to be run again)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from loopback import KEY, AnthropicServer, OpenAIServer, Turn, call, turn_index

from vouch.agent import CONFIGS, RetryPolicy, TraceWriter, analyze, generate_task, get_provider, load_prices, run_agent
from vouch.bench import PRELOAD, load_task
from vouch.core import Budgets, Case, Provenance, SourceInfo, TaskFiles, TaskSpec, content_hash, write_task
from vouch.exec import LocalExecutor

GOOD = "def add(a, b):\n    return a + b\n"
VERIFIER = "def verify(candidate, env):\n    return env.call('add', [2, 3])['value'] == 5\n"


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("loop-tasks")
    candidate = {"source": GOOD}
    write_task(
        root,
        TaskFiles(
            spec=TaskSpec(
                id="code-add",
                kind="code",
                source=SourceInfo(benchmark="test", version="0", original_id="add"),
                entry_point="add",
            ),
            instruction="Write add(a, b).",
            environment={"prompt.py": 'def add(a, b):\n    """>>> add(2, 3)\n    5\n    """\n'},
            reference={"verifier.py": VERIFIER},
            cases=[
                Case(
                    id="gold",
                    label="positive",
                    category="gold",
                    subcategory="gold",
                    candidate=candidate,
                    provenance=Provenance(construction="test", content_hash=content_hash(candidate)),
                    rationale="the gold",
                )
            ],
        ),
    )
    return load_task(root / "code-add")


@pytest.fixture(scope="module")
def executor():
    with LocalExecutor(preload=[*PRELOAD, "vouch.agent._runside"]) as pool:
        yield pool


def test_anthropic_agent_writes_tests_and_submits(task, executor, tmp_path: Path) -> None:
    turns = [
        Turn(text="I will write it.", calls=[("write_verifier", {"source": VERIFIER})]),
        Turn(
            calls=[
                ("self_test", {"candidate": {"source": GOOD}, "expect": "valid"}),
                ("self_test", {"candidate": {"source": "def add(a, b):\n    return 0\n"}, "expect": "invalid"}),
            ]
        ),
        call("submit"),
    ]
    with AnthropicServer(lambda body: turns[turn_index(body)]) as server:
        provider = get_provider("anthropic/claude-sonnet-4-test", base_url=server.url, api_key=KEY)
        trace = TraceWriter(tmp_path / "trace.jsonl")
        result = run_agent(task, provider, CONFIGS["default"], executor, trace, hidden=(), prices=load_prices())
        trace.close()
    assert result.submitted and result.verifier == VERIFIER and result.reason == "submitted"
    analysis = analyze(trace.events)
    assert (analysis.positive_self_test_passes, analysis.negative_self_test_fails) == (1, 1)
    assert analysis.cost_usd == pytest.approx(3 * (100 * 3.0 + 20 * 15.0) / 1e6)  # the default price table
    last = server.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in last[4]["content"]] == ["tool_result", "tool_result"]


def test_the_wall_clock_budget_ends_the_run(task, executor, tmp_path: Path) -> None:
    ticks = itertools.count(0, 100)  # every look at the clock: 100 s later
    config = CONFIGS["default"].model_copy(update={"budgets": Budgets(wall_s=1000)})
    with OpenAIServer(lambda body: call("read_file", {"path": "instruction.md"})) as server:
        provider = get_provider("openai/m", base_url=server.url, api_key=KEY)
        trace = TraceWriter(tmp_path / "trace.jsonl")
        result = run_agent(
            task, provider, config, executor, trace, hidden=(), prices=load_prices(), clock=lambda: next(ticks)
        )
    analysis = analyze(trace.events)
    assert result.reason == "wall" and analysis.exhausted == ["wall"] and analysis.exhausted_before_verifier
    assert 1 <= analysis.turns < 10


def test_an_endpoint_that_fails_for_good_leaves_the_task_unfinished(task, executor, tmp_path: Path) -> None:
    with OpenAIServer(lambda body: Turn(status=503)) as server:
        provider = get_provider(
            "openai/m", base_url=server.url, api_key=KEY, retry=RetryPolicy(max_retries=1, base_s=0)
        )
        provider.sleep = lambda _s: None
        run = generate_task(task, provider, CONFIGS["default"], executor, tmp_path, hidden=(), prices=load_prices())
    assert run.status == "unfinished" and run.analysis.end_reason == "provider_error"
    assert "gave up after 2 attempts" in (run.analysis.error or "")
    assert not (tmp_path / "code-add" / "done.json").exists()
    assert (tmp_path / "code-add" / "trace.jsonl").exists()
