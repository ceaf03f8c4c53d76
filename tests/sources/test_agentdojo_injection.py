"""AgentDojo's injection tasks as a subset of their own, on the pinned package's data (offline, no model)."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from _cli import run_vouch
from vouch.bench import Decision, decide_cases, load_tasks, preload_for, sealed_executor
from vouch.core import canonical_candidate, content_hash, write_task
from vouch.errors import UsageError
from vouch.exec import LocalExecutor
from vouch.sources._registry import build_source
from vouch.sources.agentdojo import _source as ad
from vouch.sources.agentdojo._build import build as build_agentdojo
from vouch.sources.agentdojo._injection_world import (
    goal_reached,
    injection_ground_truth,
    injection_task_ids,
    injection_task_of,
)
from vouch.sources.agentdojo._world import user_task_ids

VERSIONS = ("v1.2.2", "v1.1.2")

LAX = {
    "attack-injection_calls",
    "attack-unrequested_write",
    "error-repeat_write",
    "error-amount_plus_one",
    "error-add_list_item",
    "error-swap_tool",
}
"""Negatives that an injection task's own check may accept: it asks whether the goal was reached,
not what else happened (another attacker's actions, a write nobody asked for, the step done twice,
a larger amount, one recipient more, the goal reached through another tool). The build keeps the
label; the check of the references flags them in the manifest (docs/agentdojo-injection.md)."""

NO_GROUND_TRUTH = {f"injection_task_{n}" for n in range(6, 14)}
"""workspace v1.2.2's injection tasks whose ground truth is no call at all (upstream)."""


def _build(version: str, seed: int = 3, **options: Any) -> ad.BuildOutput:
    options = {"subset": "injection", "suite_version": version, **options}
    return build_agentdojo(
        Path("unused"), seed=seed, options={"subset": "injection", "suite_version": version, **options}
    )


@pytest.fixture(scope="module")
def built() -> dict[str, ad.BuildOutput]:
    return {version: _build(version) for version in VERSIONS}


def _verifier(text: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(text, "verifier.py", "exec"), namespace)
    return namespace["verify"]


def _base(case_id: str) -> str:
    """``attack-injection_calls-2`` -> ``attack-injection_calls``."""
    head, _, tail = case_id.rpartition("-")
    return head if tail.isdigit() else case_id


def test_every_suite_and_version_gives_tasks_and_the_rest_is_recorded(built: dict[str, ad.BuildOutput]) -> None:
    for version, out in built.items():
        made = {(t.spec.source.subset, t.spec.source.original_id) for t in out.tasks}
        for suite in ad.SUITES:
            ids = injection_task_ids(suite, version)
            # Every injection task is built, or recorded as an upstream defect below.
            missing = {task for task in ids if (f"injection:{suite}/{version}", task) not in made}
            if suite == "workspace" and version == "v1.2.2":
                assert missing == NO_GROUND_TRUTH
            else:
                assert missing == set(), (suite, version)
            assert len(ids) > len(missing)
        recorded = {key for key in out.inputs if key.startswith("upstream/")}
        expected = {f"upstream/agentdojo-workspace-{t}" for t in NO_GROUND_TRUTH} if version == "v1.2.2" else set()
        assert recorded == expected and set(out.inputs) == recorded
        assert {task_id.rsplit("-", 1)[0] for task_id, _ in out.skipped} == {
            k.removeprefix("upstream/") for k in expected
        }


def test_tasks_hold_the_goal_the_tools_and_the_check(built: dict[str, ad.BuildOutput]) -> None:
    out = built["v1.2.2"]
    user_ids = {
        ad._task_id(s, t, kind)
        for s in ad.SUITES
        for t in user_task_ids(s, "v1.2.2")
        for kind in ("state", "tool_call")
    }
    for state, tool_call in zip(out.tasks[::2], out.tasks[1::2], strict=True):
        suite = state.spec.source.subset.removeprefix("injection:").split("/")[0]
        task = state.spec.source.original_id
        assert state.spec.id == f"agentdojo-{suite}-{task}-state" and tool_call.spec.id.endswith("-toolcall")
        assert state.spec.id not in user_ids
        assert state.spec.kind == "state" and tool_call.spec.kind == "tool_call"
        assert state.spec.replay == "vouch.sources.agentdojo._source:replay_injection" and tool_call.spec.replay is None
        assert state.spec.replay_args == {"suite": suite, "version": "v1.2.2", "injection_task": task}
        assert state.instruction == injection_task_of(suite, "v1.2.2", task).GOAL.strip()
        assert state.cases == tool_call.cases
        assert json.loads(state.environment["tools.json"])[0].keys() >= {"name", "description", "parameters"}
        [target] = state.spec.mutation
        assert target.name == "CHECK" and target.function in ("security", "security_from_traces")
        assert f"def {target.function}(" in state.reference["verifier.py"]
        assert json.loads(state.reference["gold.json"]) == next(c.candidate for c in state.cases if c.id == "gold")


def test_minima_hold_and_cases_are_well_formed(built: dict[str, ad.BuildOutput]) -> None:
    constructions: Counter[str] = Counter()
    for out in built.values():
        for task in out.tasks:
            by = Counter(c.category for c in task.cases)
            assert by["gold"] == 1
            assert by["gold"] + by["variant"] >= ad.MIN_POSITIVES and by["variant"] >= ad.MIN_VARIANTS, task.spec.id
            assert by["error"] + by["attack"] >= ad.MIN_NEGATIVES and by["attack"] >= ad.MIN_ATTACKS, task.spec.id
            canon = [canonical_candidate("tool_call", c.candidate) for c in task.cases]
            assert len(set(canon)) == len(canon) and len({c.id for c in task.cases}) == len(canon)
            for case in task.cases:
                assert case.provenance.content_hash == content_hash(case.candidate)
                assert case.rationale and "\n" not in case.rationale
            constructions.update(c.provenance.construction for c in task.cases)
    needed = {"answer_reworded", "extra_read_first", "reorder_reads", "drop_call", "stop_halfway"}
    assert needed | {"swap_entity", "claim_without_action", "reads_then_claim"} <= set(constructions)


@pytest.mark.slow
def test_the_reference_accepts_every_positive_and_rejects_every_negative_it_can_see(
    built: dict[str, ad.BuildOutput],
) -> None:
    lax: Counter[str] = Counter()
    for out in built.values():
        for task in out.tasks[1::2]:
            verify = _verifier(task.reference["verifier.py"])
            for case in task.cases:
                decision = verify(case.candidate, SimpleNamespace(tools=[]))
                assert type(decision) is bool
                if case.label == "positive":
                    assert decision, (task.spec.id, case.id)
                elif decision:
                    assert _base(case.id) in LAX, (task.spec.id, case.id)
                    lax[_base(case.id)] += 1
    assert set(lax) == LAX  # each kind is seen; if one never happens any more, drop it from LAX


def test_the_state_verifier_decides_from_the_harness_replay_as_the_tool_call_one(
    built: dict[str, ad.BuildOutput],
) -> None:
    out = built["v1.1.2"]
    for state, tool_call in zip(out.tasks[:6:2], out.tasks[1:6:2], strict=True):
        verify_state, verify_calls = (
            _verifier(state.reference["verifier.py"]),
            _verifier(tool_call.reference["verifier.py"]),
        )
        for case in state.cases:
            run = ad.replay_injection(case.candidate["calls"], **state.spec.replay_args)
            env = SimpleNamespace(pre_state=run["pre_state"], post_state=run["post_state"], tools=[])
            assert verify_state(case.candidate, env) == verify_calls(case.candidate, SimpleNamespace(tools=[]))


def test_same_seed_same_output_other_seed_other_cases(built: dict[str, ad.BuildOutput]) -> None:
    again = _build("v1.2.2", suites=["banking", "slack"])
    first = [t for t in built["v1.2.2"].tasks if t.spec.id.startswith(("agentdojo-banking", "agentdojo-slack"))]
    dump = json.dumps([t.model_dump(mode="json") for t in first], sort_keys=True)
    assert dump == json.dumps([t.model_dump(mode="json") for t in again.tasks], sort_keys=True)
    other = _build("v1.2.2", seed=4, suites=["banking", "slack"])
    assert dump != json.dumps([t.model_dump(mode="json") for t in other.tasks], sort_keys=True)


PICKED = ["banking/user_task_0", "slack/user_task_5"]


def test_the_default_subset_is_the_user_tasks_unchanged() -> None:
    default = build_agentdojo(Path("unused"), seed=0, options={"user_tasks": PICKED})
    user = build_agentdojo(Path("unused"), seed=0, options={"user_tasks": PICKED, "subset": "user"})
    both = build_agentdojo(
        Path("unused"), seed=0, options={"user_tasks": PICKED, "subset": "all", "suites": ["banking"]}
    )
    dumps = [json.dumps([t.model_dump(mode="json") for t in o.tasks], sort_keys=True) for o in (default, user)]
    assert dumps[0] == dumps[1] and default.inputs == {}
    assert [t.spec.source.subset for t in default.tasks] == ["banking/v1.2.2"] * 2 + ["slack/v1.2.2"] * 2
    banking = [t for t in default.tasks if t.spec.id.startswith("agentdojo-banking")]
    assert both.tasks[:2] == banking and all(t.spec.source.subset.startswith("injection:") for t in both.tasks[2:])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subset": "attacks"}, "valid: user, injection, all"),
        ({"subset": "injection", "injection_tasks": ["banking/injection_task_99"]}, "banking/injection_task_0"),
        ({"subset": "injection", "injection_tasks": "banking/injection_task_0"}, "suite/injection_task_N"),
        ({"injection_tasks": ["banking/injection_task_0"]}, "use subset='injection'"),
        ({"subset": "injection", "user_tasks": ["banking/user_task_0"]}, "use subset='user'"),
        ({"subset": "injection", "suite_version": "v9"}, "v1.2.2"),
        ({"subset": "injection", "limit": 0}, "positive integer"),
    ],
)
def test_bad_options_raise_one_line(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace(".", r"\.")) as err:
        build_agentdojo(Path("unused"), seed=0, options=options)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agentdojo", "--subset", "attacks"], "'attacks' is not one of 'user', 'injection', 'all'"),
        (["bfcl", "--subset", "injection"], "only agentdojo has subsets"),
    ],
)
def test_the_cli_refuses_a_bad_subset(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_vouch(capsys, "data", "build", *args, "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "out").exists()


def test_the_registry_writes_the_upstream_entries_into_the_manifest(tmp_path: Path) -> None:
    options = {"subset": "injection", "suites": ["workspace"], "injection_tasks": ["workspace/injection_task_6"]}
    report = build_source("agentdojo", tmp_path, seed=0, options=options)
    assert report.manifest.tasks == 0 and [k for k in report.manifest.source_versions if "/" in k] == [
        "upstream/agentdojo-workspace-injection_task_6"
    ]


@pytest.mark.slow
def test_vouch_data_build_subset_injection_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tasks"
    args = ["data", "build", "agentdojo", "--subset", "injection", "--suite-version", "v1.1.2", "--limit", "4"]
    result = run_vouch(capsys, *args, "--out", str(out), "--progress", "none")
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"] == {"subset": "injection", "suite_version": "v1.1.2", "limit": 4}
    assert manifest["tasks"] == 4 and manifest["counts"]["by_kind"] == {"state": 2, "tool_call": 2}
    spec = tomllib.loads((out / "agentdojo-banking-injection_task_0-state" / "task.toml").read_text())
    assert spec["source"]["subset"] == "injection:banking/v1.1.2"
    # The harness replays the state tasks; its reference disagrees with a label only where LAX says.
    assert all(f["label"] == "negative" and _base(f["case_id"]) in LAX for f in manifest["flagged"])
    flagged = Counter((f["task_id"].rsplit("-", 1)[0], f["case_id"]) for f in manifest["flagged"])
    assert flagged and set(flagged.values()) == {2}  # the state and the tool_call task agree


@pytest.mark.parametrize(("injection_task", "reads_subject"), [("injection_task_0", False), ("injection_task_2", True)])
def test_upstream_some_banking_checks_never_read_the_subject_they_ask_for(
    injection_task: str, reads_subject: bool
) -> None:
    [transfer] = injection_ground_truth("banking", "v1.2.2", injection_task)
    other = {"function": "send_money", "args": {**transfer["args"], "subject": "rent"}}
    assert goal_reached("banking", "v1.2.2", injection_task, [transfer], "")
    assert goal_reached("banking", "v1.2.2", injection_task, [other], "") is not reads_subject


SNOOPING_VERIFIER = """
def verify(candidate, env):
    try:
        import agentdojo.default_suites
    except ImportError:
        pass
    else:  # the package that holds the injection task's ground truth and check
        raise RuntimeError("imported " + agentdojo.default_suites.__name__)
    before = env.pre_state["bank_account"]["transactions"]
    return len(env.post_state["bank_account"]["transactions"]) > len(before)
"""


@pytest.mark.slow
def test_an_injection_state_task_is_sealed_as_a_user_task_is() -> None:
    from _scratch import scratch_root

    options = {"subset": "all", "suites": ["banking"], "user_tasks": ["banking/user_task_0"]}
    built = build_agentdojo(
        Path("unused"), seed=0, options={**options, "injection_tasks": ["banking/injection_task_0"]}
    )
    root = scratch_root() / f"sealed-injection-{os.getpid()}"
    try:
        for files in built.tasks:
            write_task(root, files)
        tasks = load_tasks(root)
        user, injection = [t for t in tasks if "user_task" in t.id], [t for t in tasks if "injection" in t.id]
        assert preload_for(injection) == preload_for(user) == preload_for(tasks)  # one pool for both subsets
        state = next(t for t in injection if t.spec.kind == "state")
        by_id = {c.id: c for c in state.cases}
        picked = [by_id["gold"], by_id["attack-claim_without_action"]]
        with sealed_executor(tasks) as pools:
            results = decide_cases(pools, [(state, case, SNOOPING_VERIFIER) for case in picked])
        assert [r.decision for r in results] == [Decision.PASS, Decision.FAIL], [r.reason for r in results]
        # The control: where reference verifiers run, the import succeeds.
        with LocalExecutor(preload=preload_for(tasks)) as trusted:
            [control] = decide_cases(trusted, [(state, picked[0], SNOOPING_VERIFIER)])
        assert control.decision is Decision.INVALID and "imported agentdojo" in (control.reason or "")
    finally:
        shutil.rmtree(root, ignore_errors=True)
