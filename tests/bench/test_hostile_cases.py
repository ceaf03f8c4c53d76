"""Verifiers that reach for other cases, and vouch's own failures, in scoring decisions.

A multi-case run decides many cases of one task with one verifier. A verifier must see only the
case it is deciding: asking the run's service for another case's candidate, or walking its
process's frames and objects, finds nothing of another case. And when vouch itself fails (its
pool, its harness), the decision is ERROR, never a FAIL or INVALID the verifier is blamed for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vouch.bench import PRELOAD, Decision, Task, decide_cases, decide_stored
from vouch.bench import _decide as decide_module
from vouch.bench._canary import PoolBroken, check_pool
from vouch.bench._session import Session
from vouch.core import Case, Provenance, SourceInfo, TaskSpec, content_hash
from vouch.errors import EXIT_INFRASTRUCTURE, InfrastructureError
from vouch.exec import LocalExecutor
from vouch.store import Store

OPERATORS = ["+", "-", "*", "//"]


@pytest.fixture(scope="module")
def executor():
    with LocalExecutor(preload=list(PRELOAD)) as pool:
        yield pool


def _case(index: int, operator: str) -> Case:
    candidate = {"source": f"def add(a, b):\n    return a {operator} b  # case {index}\n"}
    return Case(
        id=f"c{index}",
        label="positive" if operator == "+" else "negative",
        category="gold" if operator == "+" else "error",
        subcategory="gold" if operator == "+" else "wrong_value",
        candidate=candidate,
        provenance=Provenance(construction="test", content_hash=content_hash(candidate)),
        rationale="test case",
    )


@pytest.fixture(scope="module")
def task() -> Task:
    spec = TaskSpec(
        id="add", kind="code", source=SourceInfo(benchmark="test", version="0", original_id="add"), entry_point="add"
    )
    cases = [_case(i, op) for i, op in enumerate(OPERATORS)]
    return Task(root=Path("/nonexistent/add"), spec=spec, tools=[], public_tests=None, cases=cases)


def _decide(executor, task: Task, verifier: str):
    return decide_cases(executor, [(task, case, verifier) for case in task.cases])


# Asks the run's service for every case's answer, in every shape a request could name a case
# in, and says whether anything but its own candidate's answer came back.
CROSS_CASE = """
from vouch.exec._service import request

def verify(candidate, env):
    own = env.call("add", [7, 2])["value"]
    seen = set()
    call = {"op": "call", "function": "add", "args": [7, 2], "timeout": 3.0}
    for case in range(4):
        for req in ({**call, "case": case}, ["case", {**call, "case": case}], ["case", case, call]):
            try:
                answer = request(req)
            except Exception:
                continue
            if isinstance(answer, dict) and "value" in answer:
                seen.add(answer["value"])
        env._case = case
        seen.add(env.call("add", [7, 2])["value"])
    for other in ({"op": "candidate"}, ["case", {"op": "candidate"}]):
        try:
            got = request(other)
        except Exception:
            continue
        if got != candidate:
            return False
    return seen <= {own}
"""


def test_a_verifier_asking_for_another_case_gets_its_own_case_or_an_error(executor, task):
    results = _decide(executor, task, CROSS_CASE)
    assert [r.decision for r in results] == [Decision.PASS] * len(OPERATORS), results
    assert all(r.note is None for r in results)


# Walks every frame of its process and every object the collector knows, looking for a
# candidate other than its own.
FRAME_PEEK = """
import gc, sys

def _sources(value, found, depth=0):
    if depth > 4:
        return
    if isinstance(value, str) and value.startswith("def add(a, b):") and "return a" in value:
        found.add(value)
    elif isinstance(value, dict):
        for v in list(value.values()):
            _sources(v, found, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in list(value):
            _sources(v, found, depth + 1)

def verify(candidate, env):
    found = set()
    frame = sys._getframe()
    while frame is not None:
        _sources(dict(frame.f_locals), found)
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, (dict, list, tuple)):
            _sources(obj, found)
    return found <= {candidate["source"]}
"""


def test_a_verifier_walking_frames_and_objects_finds_no_other_case(executor, task):
    results = _decide(executor, task, FRAME_PEEK)
    assert [r.decision for r in results] == [Decision.PASS] * len(OPERATORS), results


HONEST = "def verify(candidate, env):\n    return env.call('add', [7, 2])['value'] == 9\n"


def test_the_honest_verifier_decides_each_case_by_its_own_candidate(executor, task):
    results = _decide(executor, task, HONEST)
    assert [r.decision for r in results] == [Decision.PASS, Decision.FAIL, Decision.FAIL, Decision.FAIL]


def _broken_session_start(self: Session) -> None:
    raise InfrastructureError("the pool is gone")


@pytest.mark.parametrize("multi_case", [True, False], ids=["multi-case", "alone"])
def test_a_candidate_session_broken_on_the_pools_side_is_an_error_not_a_fail(executor, task, monkeypatch, multi_case):
    monkeypatch.setattr(Session, "_start", _broken_session_start)
    items = [(task, case, HONEST) for case in task.cases]
    results = decide_cases(executor, items, multi_case=multi_case)
    assert [r.decision for r in results] == [Decision.ERROR] * len(OPERATORS)
    assert all("could not start" in (r.reason or "") for r in results)


def test_vouchs_own_import_error_in_the_run_is_an_error(executor, task, monkeypatch):
    real_call = decide_module.Call

    def missing_harness(target: str, *args, **kwargs):
        return real_call(target.replace("vouch.bench._runenv:", "vouch.bench._no_such_module:"), *args, **kwargs)

    monkeypatch.setattr(decide_module, "Call", missing_harness)
    results = decide_cases(executor, [(task, case, HONEST) for case in task.cases], multi_case=False)
    assert [r.decision for r in results] == [Decision.ERROR] * len(OPERATORS)
    assert all("before the verifier's code ran" in (r.reason or "") for r in results)


def test_a_verifiers_own_import_error_stays_invalid(executor, task):
    results = decide_cases(executor, [(task, case, "import no_such_module_here\n") for case in task.cases])
    assert {r.decision for r in results} == {Decision.INVALID}


def test_error_decisions_are_not_stored_and_are_made_again(executor, task, monkeypatch, tmp_path):
    store = Store(tmp_path / "store.sqlite")
    items = [(task, case, HONEST) for case in task.cases]
    with monkeypatch.context() as patch:
        patch.setattr(Session, "_start", _broken_session_start)
        first, ran = decide_stored(executor, store, items)
    assert {d.decision for d in first} == {"ERROR"} and ran == len(items)
    again, ran = decide_stored(executor, store, items)
    assert ran == len(items)
    assert [d.decision for d in again] == ["PASS", "FAIL", "FAIL", "FAIL"]
    store.close()


def test_the_canary_passes_on_a_working_pool_and_stops_a_broken_one(executor, monkeypatch):
    check_pool(executor)
    monkeypatch.setattr(Session, "_start", _broken_session_start)
    with pytest.raises(PoolBroken, match="known-answer check") as raised:
        check_pool(executor)
    assert raised.value.exit_code == EXIT_INFRASTRUCTURE
    assert "\n" not in str(raised.value)
