"""Multi-case runs: the cases of one task for one verifier decided in one sandboxed run, each
still its own decision, with the same decisions as one run per case.

On real tasks (HumanEval code tasks, whose verifiers call the candidate through env.call;
BFCL tool-call tasks; AgentDojo state tasks, whose states are replayed in the run) the two ways
give the same decision and reason on every case. Verifiers that crash, hang, exhaust memory or
change shared state on one case cost that case (and, for shared state, the cases after it) a
run of its own, and the result says so; state a verifier keeps where the run does not look
shows up as an order effect, which V4V's C2 checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vouch.bench import PRELOAD, Decision, decide_cases, load_task, load_tasks
from vouch.bench import _decide as decide_module
from vouch.bench._decide import decide_until_differs, decide_verifiers
from vouch.core import Case, Provenance, SourceInfo, TaskFiles, TaskSpec, content_hash, write_task
from vouch.exec import Limits, LocalExecutor
from vouch.sources import build_source
from vouch.v4v import _checks

AGENTDOJO_TASKS = ["banking/user_task_3", "slack/user_task_5", "workspace/user_task_0"]


@pytest.fixture(scope="module")
def executor():
    preload = [*PRELOAD, "vouch.sources.agentdojo._source", "vouch.sources.agentdojo._world:warm"]
    with LocalExecutor(preload=preload) as pool:
        yield pool


def _reference_items(tasks_dir: Path) -> list:
    tasks = load_tasks(tasks_dir)
    return [(t, c, (t.root / "reference" / "verifier.py").read_text()) for t in tasks for c in t.cases]


@pytest.mark.slow
def test_real_tasks_decide_the_same_in_one_run_per_task(tmp_path, executor):
    build_source("humaneval", tmp_path / "he", options={"limit": 3}, executor=executor)
    build_source("bfcl", tmp_path / "bf", options={"limit": 4})
    build_source("agentdojo", tmp_path / "ad", options={"user_tasks": AGENTDOJO_TASKS})
    items = _reference_items(tmp_path)
    kinds = {t.spec.kind for t, _, _ in items}
    assert kinds == {"code", "tool_call", "state"}
    together = decide_cases(executor, items)
    alone = decide_cases(executor, items, multi_case=False)
    assert [(r.decision, r.reason) for r in together] == [(r.decision, r.reason) for r in alone]
    assert all(r.note is None for r in together)
    # Reference verifiers accept the gold and reject some negative of every task.
    assert {r.decision for r in together} >= {Decision.PASS, Decision.FAIL}


def _made(case_id: str, label: str, category: str, subcategory: str, candidate: dict) -> Case:
    provenance = Provenance(construction="test", content_hash=content_hash(candidate))
    return Case(
        id=case_id,
        label=label,
        category=category,
        subcategory=subcategory,
        candidate=candidate,
        provenance=provenance,
        rationale="test case",
    )


def _case(case_id: str, value: int) -> Case:
    candidate = {"calls": [{"function": "f", "args": {"x": value}}]}
    if case_id == "c0":
        return _made(case_id, "positive", "gold", "gold", candidate)
    if value >= 0:
        return _made(case_id, "positive", "variant", "cosmetic", candidate)
    return _made(case_id, "negative", "error", "wrong_value", candidate)


VALUES = [1, 2, -3, 4, -5, 6]
CHECK = "    return candidate['calls'][0]['args']['x'] >= 0\n"


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = tmp_path_factory.mktemp("multi")
    files = TaskFiles(
        spec=TaskSpec(id="tool-x", kind="tool_call", source=SourceInfo(benchmark="test", version="0", original_id="x")),
        instruction="Call f with a non-negative x.",
        environment={"tools.json": '[{"name": "f", "parameters": {"type": "object"}}]'},
        reference={"verifier.py": "def verify(candidate, env):\n" + CHECK},
        cases=[_case(f"c{i}", v) for i, v in enumerate(VALUES)],
    )
    write_task(root, files)
    return load_task(root / "tool-x")


def _decide_all(executor, task, verifier: str, multi_case: bool = True):
    return decide_cases(executor, [(task, c, verifier) for c in task.cases], multi_case=multi_case)


def _expected():
    return [Decision.PASS if v >= 0 else Decision.FAIL for v in VALUES]


def test_each_case_is_its_own_decision(executor, task):
    results = _decide_all(executor, task, "def verify(candidate, env):\n" + CHECK)
    assert [r.decision for r in results] == _expected()
    assert all(r.note is None for r in results)


def test_a_case_that_crashes_the_run_costs_only_itself(executor, task):
    # os._exit ends the case's own process: that case is decided again alone (INVALID), and the
    # run goes on with the next case.
    verifier = (
        "import os\n"
        "def verify(candidate, env):\n"
        "    if candidate['calls'][0]['args']['x'] == 4:\n"
        "        os._exit(3)\n" + CHECK
    )
    results = _decide_all(executor, task, verifier)
    decisions = [r.decision for r in results]
    assert decisions[3] is Decision.INVALID
    assert "exit code 3" in (results[3].reason or "")
    assert decisions[:3] + decisions[4:] == _expected()[:3] + _expected()[4:]
    assert "ended without a decision (exit code 3)" in (results[3].note or "")
    assert [r.note is None for r in results] == [True, True, True, False, True, True]


def test_a_case_that_hangs_is_invalid_alone_and_the_rest_run_again(executor, task, monkeypatch):
    monkeypatch.setattr(decide_module, "VERIFIER_LIMITS", Limits(timeout_s=1.5, memory_mb=1024))
    verifier = (
        "import time\n"
        "def verify(candidate, env):\n"
        "    if candidate['calls'][0]['args']['x'] == 2:\n"
        "        while True:\n"
        "            try:\n"
        "                time.sleep(0.05)\n"
        "            except Exception:\n"
        "                pass\n" + CHECK
    )
    results = _decide_all(executor, task, verifier)
    assert results[0].decision is Decision.PASS and results[0].note is None
    assert results[1].decision is Decision.INVALID
    assert "timeout" in (results[1].reason or "")
    assert [r.decision for r in results[2:]] == _expected()[2:]
    assert "took over 1.5 s" in (results[1].note or "")
    assert all(r.note is None for r in results[2:])


def test_a_case_that_exhausts_memory_is_invalid_alone(executor, task):
    verifier = (
        "def verify(candidate, env):\n"
        "    if candidate['calls'][0]['args']['x'] == -3:\n"
        "        hog = [bytearray(2**20) for _ in range(100000)]\n" + CHECK
    )
    results = _decide_all(executor, task, verifier)
    assert results[2].decision is Decision.INVALID
    assert "memory" in (results[2].reason or "")
    assert [r.decision for i, r in enumerate(results) if i != 2] == [d for i, d in enumerate(_expected()) if i != 2]
    assert results[2].note is not None and "ran out of memory" in results[2].note


def test_a_verifier_that_corrupts_its_process_reaches_no_later_case(executor, task):
    # Case 1 rebinds a builtin that later cases use: it does so in its own process, which ends
    # with the case, and the decisions are those of lone runs.
    verifier = (
        "import builtins\n"
        "def verify(candidate, env):\n"
        "    x = candidate['calls'][0]['args']['x']\n"
        "    ok = abs(x) == x\n"
        "    if x == 2:\n"
        "        builtins.abs = lambda v: 0\n"
        "    return ok\n"
    )
    together = _decide_all(executor, task, verifier)
    alone = _decide_all(executor, task, verifier, multi_case=False)
    assert [r.decision for r in together] == [r.decision for r in alone] == _expected()
    assert all(r.note is None for r in together)


def test_a_verifier_that_leaves_files_gets_fresh_runs_for_later_cases(executor, task):
    # Files outlive the case's process: from the case after the one that wrote, every case is
    # decided in a fresh run.
    verifier = (
        "import os\n"
        "def verify(candidate, env):\n"
        "    x = candidate['calls'][0]['args']['x']\n"
        "    if x == 2:\n"
        "        open('/dev/shm/seen', 'w').close()\n"
        "    return x >= 0 and not os.path.exists('/dev/shm/seen')\n"
    )
    together = _decide_all(executor, task, verifier)
    assert [r.decision for r in together[2:]] == _expected()[2:]
    assert [r.note is None for r in together] == [True, True, False, False, False, False]
    assert "files" in (together[2].note or "")


def test_module_globals_start_fresh_for_each_case(executor, task):
    # A verifier's own module is made anew for each case: a module-level counter cannot carry.
    verifier = "SEEN = []\ndef verify(candidate, env):\n    SEEN.append(1)\n    return len(SEEN) == 1\n"
    results = _decide_all(executor, task, verifier)
    assert [r.decision for r in results] == [Decision.PASS] * len(VALUES)


def test_state_kept_in_a_module_does_not_reach_the_next_case(executor, task):
    # A verifier that hides a flag in a module keeps it in its case's own process only: every
    # case is its first, in any order, and C2 (repeatability) finds nothing to flag.
    verifier = (
        "import collections\n"
        "def verify(candidate, env):\n"
        "    first = not hasattr(collections, '_vouch_seen')\n"
        "    collections._vouch_seen = True\n"
        "    return first\n"
    )
    forward = _decide_all(executor, task, verifier)
    items = [(task, c, verifier) for c in reversed(task.cases)]
    backward = list(reversed(decide_cases(executor, items)))
    runs = [
        {c.id: (r.decision.value, r.reason) for c, r in zip(task.cases, decided, strict=True)}
        for decided in (forward, backward)
    ]
    assert runs[0] == runs[1]
    assert all(decision == "PASS" for decision, _ in runs[0].values())
    assert _checks.repeatability(task, runs).passed


def test_c6_runs_stop_at_the_first_decision_other_than_the_expected(executor, task):
    # A mutant against the reference's decisions: its run stops after the first case it decides
    # otherwise, and the later cases stay undecided (None).
    expected = [d.value for d in _expected()]
    flipped = "def verify(candidate, env):\n    return candidate['calls'][0]['args']['x'] == -3 or " + CHECK[11:]
    items = [(task, c, flipped) for c in task.cases]
    results = decide_until_differs(executor, items, expected)
    assert [r.decision if r else None for r in results[:3]] == [Decision.PASS, Decision.PASS, Decision.PASS]
    assert results[3:] == [None, None, None]
    # A mutant that agrees everywhere is decided on every case.
    same = decide_until_differs(
        executor, [(task, c, "def verify(candidate, env):\n" + CHECK) for c in task.cases], expected
    )
    assert [r.decision if r else None for r in same] == _expected()


def test_a_verifier_cannot_move_its_run_to_another_case(executor, task):
    # The run's own process moves from case to case; what a verifier sends is always about its
    # own case: asking to move on is refused, and every case is decided.
    expected = [d.value for d in _expected()]
    verifier = (
        "from vouch.exec._service import request\n"
        "def verify(candidate, env):\n"
        "    try:\n"
        "        request({'op': 'next'})\n"
        "    except Exception:\n"
        "        pass\n" + CHECK
    )
    results = decide_until_differs(executor, [(task, c, verifier) for c in task.cases], expected)
    assert [r.decision if r else None for r in results] == _expected()
    assert all(r.note is None for r in results)


def test_each_task_names_the_pool_its_verifier_needs(task):
    # AgentDojo's tool_call twins have no replay entry, but their verifiers import AgentDojo:
    # they go to the AgentDojo-warmed pool, and other tasks to the plain one.
    from vouch.bench import Task, preload_for

    twin = Task(
        root=task.root,
        spec=task.spec.model_copy(update={"source": SourceInfo(benchmark="agentdojo", version="0", original_id="x")}),
        tools=[],
        public_tests=None,
        cases=[],
    )
    assert preload_for([task]) == list(PRELOAD)
    assert "vouch.sources.agentdojo._source" in preload_for([twin])
    assert preload_for([twin])[-1] == "vouch.sources.agentdojo._lean:restore"


STATEFUL = "seen = []\ndef f(x):\n    seen.append(x)\n    return len(seen)\n"


@pytest.fixture(scope="module")
def code_task(tmp_path_factory):
    root = tmp_path_factory.mktemp("code")
    gold = _made("gold", "positive", "gold", "gold", {"source": STATEFUL})
    files = TaskFiles(
        spec=TaskSpec(
            id="code-f",
            kind="code",
            source=SourceInfo(benchmark="test", version="0", original_id="f"),
            entry_point="f",
        ),
        instruction="Write f.",
        reference={"verifier.py": "def verify(candidate, env):\n    return True\n"},
        cases=[gold],
    )
    write_task(root, files)
    return load_task(root / "code-f")


def _calls(*args: int) -> str:
    calls = ", ".join(f"env.call('f', [{a}])['value']" for a in args)
    return f"def verify(candidate, env):\n    return [{calls}] == EXPECTED\n"


def test_shared_answers_spare_calls_and_give_every_decision_the_first_answer(executor, code_task):
    answers: dict = {}
    [first] = decide_cases(
        executor, [(code_task, code_task.cases[0], "EXPECTED = [1, 2]\n" + _calls(1, 2))], call_answers=answers
    )
    assert first.decision is Decision.PASS
    assert len(answers) == 2
    # The same first call is answered from what the first decision got; the second is new, so
    # the session starts, makes the first call again, then the new one: the candidate counts 2.
    [second] = decide_cases(
        executor, [(code_task, code_task.cases[0], "EXPECTED = [1, 2]\n" + _calls(1, 3))], call_answers=answers
    )
    assert second.decision is Decision.PASS
    assert len(answers) == 3
    # Without shared answers the same verifier decides the same.
    [alone] = decide_cases(executor, [(code_task, code_task.cases[0], "EXPECTED = [1, 2]\n" + _calls(1, 3))])
    assert alone.decision is Decision.PASS
    # A call made before gets its first answer whatever came before it: f(3) was the candidate's
    # second call, so it answers 2 here too, where a fresh candidate would answer 1. Without
    # shared answers it does answer 1.
    [third] = decide_cases(
        executor, [(code_task, code_task.cases[0], "EXPECTED = [2]\n" + _calls(3))], call_answers=answers
    )
    assert third.decision is Decision.PASS and len(answers) == 3
    [fresh] = decide_cases(executor, [(code_task, code_task.cases[0], "EXPECTED = [2]\n" + _calls(3))])
    assert fresh.decision is Decision.FAIL


def test_many_verifiers_on_one_case_decide_as_each_would_alone(executor, task):
    # V4V's C6 decides a task's mutants case by case: one run, each verifier its own decision.
    verifiers = [
        "def verify(candidate, env):\n" + CHECK,
        "def verify(candidate, env):\n    return not (" + CHECK.strip()[7:] + ")\n",
        "def verify(candidate, env):\n    return 1\n",
        "def verify(candidate, env):\n    raise KeyError('x')\n",
        "SEEN = []\ndef verify(candidate, env):\n    SEEN.append(1)\n    return len(SEEN) == 1\n",
    ]
    for case in task.cases[:3]:
        [together] = decide_verifiers(executor, [(task, case, verifiers)])
        alone = [decide_cases(executor, [(task, case, v)])[0] for v in verifiers]
        assert [(r.decision, r.reason) for r in together] == [(r.decision, r.reason) for r in alone]
        assert all(r.note is None for r in together)


def test_a_verifier_that_crashes_the_many_verifier_run_costs_only_itself(executor, task):
    verifiers = [
        "def verify(candidate, env):\n" + CHECK,
        "import os\ndef verify(candidate, env):\n    os._exit(3)\n",
        "def verify(candidate, env):\n    return False\n",
    ]
    [results] = decide_verifiers(executor, [(task, task.cases[0], verifiers)])
    # os._exit takes the whole run down: each verifier is decided again alone, and only the one
    # that crashes is INVALID.
    assert [r.decision for r in results] == [Decision.PASS, Decision.INVALID, Decision.FAIL]
    assert all("multi-case run ended" in (r.note or "") for r in results)
    # A verifier that rebinds a builtin: the verifiers after it run alone, and decide as alone.
    verifiers[1] = "import builtins\ndef verify(candidate, env):\n    builtins.abs = lambda v: -1\n    return True\n"
    verifiers.append("def verify(candidate, env):\n    return abs(-2) == 2\n")
    [results] = decide_verifiers(executor, [(task, task.cases[0], verifiers)])
    assert [r.decision for r in results] == [Decision.PASS, Decision.PASS, Decision.FAIL, Decision.PASS]
    assert "the builtins" in (results[2].note or "") and "the builtins" in (results[3].note or "")


@pytest.fixture
def started(monkeypatch):
    """The candidate sessions started while the test runs."""
    sessions = []
    original = decide_module.Session._start

    def counted(self):
        sessions.append(self)
        return original(self)

    monkeypatch.setattr(decide_module.Session, "_start", counted)
    return sessions


def test_one_candidate_session_answers_every_verifier_of_a_run(executor, code_task, started):
    verifiers = ["EXPECTED = [1]\n" + _calls(n) for n in (1, 2, 3, 4)]
    [results] = decide_verifiers(executor, [(code_task, code_task.cases[0], verifiers)])
    # One session for the four: the candidate counts its calls across them.
    assert len(started) == 1
    assert [r.decision for r in results] == [Decision.PASS, Decision.FAIL, Decision.FAIL, Decision.FAIL]
    started.clear()
    alone = [decide_cases(executor, [(code_task, code_task.cases[0], v)])[0] for v in verifiers]
    assert len(started) == 4
    assert [r.decision for r in alone] == [Decision.PASS] * 4


def test_a_many_verifier_run_takes_the_known_answers_along(executor, code_task, started):
    # The answers the pool already has for the candidate go into the run: calls made before need
    # no session (nor a round trip), and a verifier that alters them costs the later ones a run
    # of their own, where they get the pool's answers again.
    answers = decide_module.CallAnswers()
    [first] = decide_cases(
        executor, [(code_task, code_task.cases[0], "EXPECTED = [1, 2]\n" + _calls(1, 2))], call_answers=answers
    )
    assert first.decision is Decision.PASS and len(started) == 1
    verifiers = ["EXPECTED = [1, 2]\n" + _calls(1, 2), "EXPECTED = [2]\n" + _calls(2), "EXPECTED = [1]\n" + _calls(1)]
    [results] = decide_verifiers(executor, [(code_task, code_task.cases[0], verifiers)], call_answers=answers)
    assert [r.decision for r in results] == [Decision.PASS] * 3
    assert len(started) == 1, "every call was answered in the run"
    tamper = (
        "import vouch.bench._runenv as r\n"
        "def verify(candidate, env):\n"
        "    for key in list(r._ANSWERS):\n"
        "        r._ANSWERS[key] = r._ANSWERS[key].replace('1', '7')\n"
        "    return True\n"
    )
    [results] = decide_verifiers(
        executor, [(code_task, code_task.cases[0], [tamper, "EXPECTED = [1]\n" + _calls(1)])], call_answers=answers
    )
    assert [r.decision for r in results] == [Decision.PASS, Decision.PASS]
    assert "answers the run was given" in (results[1].note or "")
