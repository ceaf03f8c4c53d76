"""Decisions shared between twin tasks: verifiers that differ only in their docstring and never
read env decide a case once for every task that holds it (AgentDojo's state and tool_call twins)."""

from __future__ import annotations

import pytest

from vouch.bench import (
    PRELOAD,
    decide_stored,
    decide_stored_verifiers,
    load_tasks,
    run_verifiers,
)
from vouch.bench._share import share_key, verifier_identity
from vouch.exec import LocalExecutor
from vouch.sources import build_source
from vouch.store import Store

BODY = "import json\n\ndef verify(candidate, env):\n    return bool(json.dumps(candidate))\n"


def test_the_docstring_comments_and_layout_do_not_change_the_identity():
    plain = verifier_identity(BODY)
    assert plain is not None
    assert verifier_identity('"""The state twin."""\n' + BODY) == plain
    assert verifier_identity('"""The tool_call twin."""\n# a comment\n' + BODY.replace("\n\n", "\n\n\n")) == plain
    assert verifier_identity(BODY.replace("bool(", "not (")) not in (None, plain)


@pytest.mark.parametrize(
    "source",
    [
        "def verify(candidate, env):\n    return env.post_state is not None\n",
        "def verify(candidate, env):\n    return len(__doc__ or '') > 3\n",
        "import inspect\ndef verify(candidate, env):\n    return bool(inspect.stack())\n",
        "import sys\ndef verify(candidate, env):\n    return 'env' in sys._getframe(0).f_locals\n",
        "def verify(candidate, env):\n    return 'kind' in open(__file__).read()\n",
        # code kept in a string and executed is read like the module
        "CHECK = 'import inspect\\nok = bool(inspect.stack())\\n'\n"
        "def verify(candidate, env):\n    ns = {}\n    exec(CHECK, ns)\n    return ns['ok']\n",
        "def verify(*args):\n    return True\n",
        "def verify(candidate, env):\n    return vars().get('env') is None\n",
        "def verify(candidate, env:\n",
    ],
)
def test_a_verifier_that_could_tell_its_task_apart_shares_nothing(source):
    assert verifier_identity(source) is None


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    root = tmp_path_factory.mktemp("twins")
    build_source("agentdojo", root, options={"user_tasks": ["banking/user_task_3", "slack/user_task_5"]})
    tasks = load_tasks(root)
    assert sorted(t.spec.kind for t in tasks) == ["state", "state", "tool_call", "tool_call"]
    return tasks


@pytest.fixture(scope="module")
def executor():
    preload = [*PRELOAD, "vouch.sources.agentdojo._source", "vouch.sources.agentdojo._world:warm"]
    with LocalExecutor(preload=preload) as pool:
        yield pool


def _references(tasks):
    return {t.id: (t.root / "reference" / "verifier.py").read_text() for t in tasks}


def test_agentdojo_twins_are_decided_once_with_the_same_decisions(tmp_path, twins, executor):
    references = _references(twins)
    state = [t for t in twins if t.spec.kind == "state"]
    for task in state:
        twin = next(t for t in twins if t.id == task.id.replace("-state", "-toolcall"))
        assert references[task.id] != references[twin.id]  # their docstrings differ
        assert [c.candidate for c in task.cases] == [c.candidate for c in twin.cases]
        assert share_key(task, references[task.id], task.cases[0].candidate) == share_key(
            twin, references[twin.id], twin.cases[0].candidate
        )
    alone_store = Store(tmp_path / "alone.sqlite")
    alone, ran_alone = run_verifiers(executor, alone_store, twins, references)
    shared_store = Store(tmp_path / "shared.sqlite")
    shared, ran_shared = run_verifiers(executor, shared_store, twins, references, share=True)
    assert ran_alone == sum(len(t.cases) for t in twins)
    assert ran_shared == sum(len(t.cases) for t in state)
    assert [(r.task.id, r.case_id, r.decision, r.reason) for r in shared] == [
        (r.task.id, r.case_id, r.decision, r.reason) for r in alone
    ]
    # Every task's own row is stored; the shared rows are not counted as decisions.
    assert shared_store.count() == alone_store.count()
    again, ran_again = run_verifiers(executor, shared_store, twins, references, share=True)
    assert ran_again == 0
    assert [r.decision for r in again] == [r.decision for r in shared]


def test_a_twin_whose_verifier_reads_env_is_decided_on_its_own(tmp_path, twins, executor):
    references = _references(twins)
    toolcall = next(t for t in twins if t.spec.kind == "tool_call")
    state = next(t for t in twins if t.id == toolcall.id.replace("-toolcall", "-state"))
    # The same check, and a read of env that changes nothing: sharing needs the verifier to
    # leave env alone, whatever it does with it.
    references[toolcall.id] = references[toolcall.id].replace(
        "def verify(candidate: dict[str, Any], env: Any) -> bool:\n",
        "def verify(candidate: dict[str, Any], env: Any) -> bool:\n    del env\n",
    )
    assert verifier_identity(references[toolcall.id]) is None
    items = [(t, c, references[t.id]) for t in (state, toolcall) for c in t.cases]
    decided, ran = decide_stored(executor, Store(tmp_path / "s.sqlite"), items, share=True)
    assert ran == len(items)
    half = len(state.cases)
    assert [d.decision for d in decided[:half]] == [d.decision for d in decided[half:]]


def test_c6_entries_of_twins_in_one_batch_decide_once(tmp_path, twins, executor):
    # C6's case-by-case runs: the twin's entry waits for the first's decisions in the store.
    references = _references(twins)
    state = next(t for t in twins if t.spec.kind == "state")
    toolcall = next(t for t in twins if t.id == state.id.replace("-state", "-toolcall"))
    mutant = references[state.id].replace("return True\n", "return False\n")
    batch = [
        (task, case, [references[task.id], mutant])
        for case_index in range(3)
        for task in (state, toolcall)
        for case in [task.cases[case_index]]
    ]
    store = Store(tmp_path / "c6v.sqlite")
    rows, ran = decide_stored_verifiers(executor, store, batch, share=True)
    assert ran == 6  # two verifiers on three cases of the state twin
    assert [[d.decision for d in row] for row in rows[0::2]] == [[d.decision for d in row] for row in rows[1::2]]
    assert {row[1].decision for row in rows} <= {"FAIL", "INVALID"}
