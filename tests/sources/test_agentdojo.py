"""The AgentDojo task source on a handful of banking and slack tasks (offline, no model)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vouch.core import canonical_candidate, content_hash, load_cases, load_task_spec, write_task
from vouch.errors import UsageError
from vouch.sources.agentdojo import _source as ad
from vouch.sources.agentdojo._build import build as build_agentdojo
from vouch.sources.agentdojo._world import FROZEN_NOW, user_task_of

PICKED = [
    "banking/user_task_0",  # pay a bill read from a file
    "banking/user_task_1",  # answer-only: total spending
    "banking/user_task_15",  # three writes
    "slack/user_task_5",  # look-ups, then one message
    "slack/user_task_11",  # checked by utility_from_traces
]

# Negatives that AgentDojo's own checks accept: they look only at part of the state.
# Deciding between label and reference verifier is V4V's job; the builder keeps both.
KNOWN_LAX = {
    ("banking", "user_task_0"): {"attack-unrequested_write", "error-repeat_write"},
    ("banking", "user_task_1"): {"attack-unrequested_write"},
    ("banking", "user_task_15"): {
        "attack-unrequested_write",
        "error-repeat_write",
        "error-swap_tool",
        "error-alter_text",
    },
    ("slack", "user_task_5"): {"error-alter_text"},
    ("slack", "user_task_11"): {"attack-unrequested_write"},
}


def _build(seed: int = 7) -> ad.BuildOutput:
    return build_agentdojo(Path("unused"), seed=seed, options={"user_tasks": PICKED})


@pytest.fixture(scope="module")
def built() -> ad.BuildOutput:
    return _build()


def _verifier(text: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(text, "verifier.py", "exec"), namespace)
    return namespace["verify"]


def _key(task: Any) -> tuple[str, str]:
    """(suite, user task) of a built task."""
    return task.spec.source.subset.split("/")[0], task.spec.source.original_id


def test_builds_a_state_and_a_tool_call_task_per_user_task(built: ad.BuildOutput) -> None:
    assert built.skipped == []
    ids = [t.spec.id for t in built.tasks]
    names = [p.replace("/", "-") for p in PICKED]  # PICKED is in build order: suite, then number
    assert ids == [f"agentdojo-{name}-{kind}" for name in names for kind in ("state", "toolcall")]
    for state, tool_call in zip(built.tasks[::2], built.tasks[1::2], strict=True):
        assert state.spec.kind == "state" and tool_call.spec.kind == "tool_call"
        assert state.spec.replay == "vouch.sources.agentdojo._source:replay"
        assert state.spec.public_tools == ["run_public", "reset"]
        assert state.spec.replay_args == {
            "suite": state.spec.source.subset.split("/")[0],
            "version": "v1.2.2",
            "user_task": state.spec.source.original_id,
        }
        assert tool_call.spec.replay is None
        assert state.cases == tool_call.cases
        suite, user_task = _key(state)
        assert state.instruction == user_task_of(suite, "v1.2.2", user_task).PROMPT.strip()
        tools = json.loads(state.environment["tools.json"])
        assert {"name", "description", "parameters"} <= set(tools[0])
        assert json.loads(state.reference["gold.json"]) == next(c.candidate for c in state.cases if c.id == "gold")


def test_gold_replays_to_a_state_where_utility_holds(built: ad.BuildOutput) -> None:
    for task in built.tasks[::2]:
        suite_name, user_task = _key(task)
        gold = json.loads(task.reference["gold.json"])
        run = ad.replay(gold["calls"], suite=suite_name, version="v1.2.2", user_task=user_task)
        assert all(r["ok"] for r in run["results"]), run["results"]
        assert run["post_state"] != run["pre_state"] or (suite_name, user_task) == ("banking", "user_task_1")
        suite = ad.load_suite(suite_name, "v1.2.2")
        pre = ad.restore_environment(suite, run["pre_state"])
        post = ad.restore_environment(suite, run["post_state"])
        agentdojo_task = suite.user_tasks[user_task]
        traces = ad.function_calls(gold["calls"])
        holds = agentdojo_task.utility_from_traces(gold["final_answer"], pre, post, traces)
        if holds is None:
            holds = agentdojo_task.utility(gold["final_answer"], pre, post)
        assert holds, task.spec.id


def test_every_category_is_built_and_minima_hold(built: ad.BuildOutput) -> None:
    subcategories: Counter[tuple[str, str]] = Counter()
    for task in built.tasks:
        by_category = Counter(c.category for c in task.cases)
        positives = by_category["gold"] + by_category["variant"]
        negatives = by_category["error"] + by_category["attack"]
        assert by_category["gold"] == 1
        assert positives >= ad.MIN_POSITIVES and by_category["variant"] >= ad.MIN_VARIANTS, task.spec.id
        assert negatives >= ad.MIN_NEGATIVES and by_category["attack"] >= ad.MIN_ATTACKS, task.spec.id
        subcategories.update((c.category, c.subcategory) for c in task.cases)
    for needed in [("variant", "cosmetic"), ("variant", "alternative"), ("attack", "hack"), ("attack", "process")]:
        assert subcategories[needed] > 0, needed
    errors = {sub for category, sub in subcategories if category == "error"}
    assert {"missing_step", "wrong_recipient", "off_by_one_amount", "wrong_tool", "wrong_answer"} <= errors


def test_cases_are_well_formed_and_twin_free(built: ad.BuildOutput) -> None:
    for task in built.tasks:
        ids = [c.id for c in task.cases]
        assert len(ids) == len(set(ids))
        canon = [canonical_candidate("tool_call", c.candidate) for c in task.cases]
        assert len(canon) == len(set(canon)), task.spec.id
        for case in task.cases:
            assert case.provenance.content_hash == content_hash(case.candidate)
            assert case.rationale and "\n" not in case.rationale
            assert (case.provenance.derived_from is None) == (
                case.category == "gold" or case.provenance.construction == "claim_without_action"
            )
            assert set(case.candidate) == {"calls", "final_answer"}


def test_reference_verifier_accepts_positives_and_rejects_negatives(built: ad.BuildOutput) -> None:
    for state_task, call_task in zip(built.tasks[::2], built.tasks[1::2], strict=True):
        key = _key(state_task)
        verify_state = _verifier(state_task.reference["verifier.py"])
        verify_calls = _verifier(call_task.reference["verifier.py"])
        tools = json.loads(call_task.environment["tools.json"])
        for case in state_task.cases:
            run = ad.replay(case.candidate["calls"], **state_task.spec.replay_args)
            env = SimpleNamespace(pre_state=run["pre_state"], post_state=run["post_state"], tools=tools)
            decision = verify_state(case.candidate, env)
            assert type(decision) is bool
            assert decision == verify_calls(case.candidate, SimpleNamespace(tools=tools)), case.id
            if case.label == "positive":
                assert decision, (state_task.spec.id, case.id)
            elif case.id not in KNOWN_LAX.get(key, set()):
                assert not decision, (state_task.spec.id, case.id)
            else:
                assert decision, f"{state_task.spec.id} {case.id}: no longer lax, update KNOWN_LAX"


def test_same_seed_same_output_and_written_files_load_back(built: ad.BuildOutput, tmp_path: Path) -> None:
    again = _build()
    dump = [t.model_dump(mode="json") for t in built.tasks]
    assert json.dumps(dump, sort_keys=True) == json.dumps(
        [t.model_dump(mode="json") for t in again.tasks], sort_keys=True
    )
    task = built.tasks[0]
    digest = write_task(tmp_path, task)
    assert digest == write_task(tmp_path / "again", again.tasks[0])
    assert load_task_spec(tmp_path / task.spec.id) == task.spec
    assert {c.id: c for c in load_cases(tmp_path / task.spec.id)} == {c.id: c for c in task.cases}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"suite_version": "v9"}, "v1, v1.1, v1.1.1, v1.1.2, v1.2, v1.2.1, v1.2.2"),
        ({"suites": ["shopping"]}, "banking, slack, travel, workspace"),
        ({"suite": "banking"}, "suite_version, suites, user_tasks"),
        ({"user_tasks": ["banking/user_task_99"]}, "banking/user_task_0"),
    ],
)
def test_bad_options_list_the_valid_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace(".", r"\.")):
        build_agentdojo(Path("unused"), seed=0, options=options)


def test_replay_reports_failures_and_pins_the_clock() -> None:
    calls = [
        {"function": "no_such_tool", "args": {}},
        {"function": "send_money", "args": {"recipient": "X", "amount": "lots", "subject": "s", "date": "2022-01-01"}},
        {
            "function": "send_email",
            "args": {"recipients": ["janeLong@google.com"], "subject": "Hi", "body": "Hello"},
        },
    ]
    run = ad.replay(calls, suite="travel", version="v1.2.2", user_task="user_task_0")
    assert [r["ok"] for r in run["results"]] == [False, False, True]
    assert run["results"][0]["error"].startswith("ToolNotFoundError")
    sent = run["results"][2]["value"]
    assert sent["timestamp"] == FROZEN_NOW.isoformat()
    emails = run["post_state"]["inbox"]["emails"]
    assert emails[sent["id_"]]["timestamp"] == FROZEN_NOW.isoformat()
    # The rebuilt environment keeps the new e-mail (AgentDojo's validators would drop it).
    restored = ad.restore_environment(ad.load_suite("travel", "v1.2.2"), run["post_state"])
    assert restored.model_dump(mode="json") == run["post_state"]
