"""Every input the audit makes is a value of P's types, never vouch's wire encoding of one.

T0's calls cross the sandbox as data (``vouch.exec.to_data``: a tuple travels as a tagged dict).
The pool is built from those calls, so a call that is not decoded back would be mutated as a
dict, and witnesses would pass ``{'__vouch__': 'tuple', ...}`` or ``{}`` where P's argument is a
tuple.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vouch.audit import PRELOAD, AuditConfig, Verdict, audit_humaneval
from vouch.audit.function._audit import recorded_inputs
from vouch.exec import LocalExecutor, to_data
from vouch.sources.trials import Problem

pytestmark = pytest.mark.slow

PROMPT = '''def rotate(pair):
    """Given a tuple of integers, return the tuple with its first element moved to the end.
    >>> rotate((1, 2, 3))
    (2, 3, 1)
    """
'''
TEST = """def check(candidate):
    assert candidate((1, 2, 3)) == (2, 3, 1)
    assert candidate((4, 5)) == (5, 4)
    assert candidate((7, 8, 9)) == (8, 9, 7)
"""
PROBLEM = Problem("Rot/0", PROMPT, "rotate", "    return tuple(pair[1:]) + tuple(pair[:1])\n", TEST)
RIGHT = "    return pair[1:] + pair[:1]\n"
WRONG = "    return tuple(sorted(pair[1:])) + pair[:1]\n"
TAG = "__vouch__"


def _holds_tag(value: Any) -> bool:
    if isinstance(value, dict):
        return TAG in value or any(_holds_tag(v) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return any(_holds_tag(v) for v in value)
    return False


@pytest.fixture(scope="module")
def pool() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as executor:
        yield executor


def test_recorded_calls_decode_to_the_values_t0_passed() -> None:
    rows = [to_data([(1, 2, 3)]), to_data([frozenset({1}), b"x"]), {TAG: "tuple"}, "not a row"]
    assert recorded_inputs(rows) == [[(1, 2, 3)], [frozenset({1}), b"x"]]
    assert recorded_inputs(None) == []


def test_a_witness_passes_a_tuple_where_p_takes_a_tuple(pool: LocalExecutor, tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "Rot/0", "completion": c}) + "\n" for c in (RIGHT, WRONG)))
    results = audit_humaneval(
        samples,
        executor=pool,
        witness_dir=tmp_path / "witnesses",
        config=AuditConfig(seed=0),
        problems={"Rot/0": PROBLEM},
    )
    verdicts = {t.trial_id: t for t in results.trials}
    assert verdicts["Rot/0#0"].verdict == Verdict.SOUND
    wrong = verdicts["Rot/0#1"]
    assert wrong.verdict == Verdict.REFUTED, wrong.reason
    files = list((tmp_path / "witnesses").rglob("*.py"))
    assert files, "no witness written"
    for path in files:
        text = path.read_text()
        assert TAG not in text and "{}" not in text, path
    assert any(w.validation.valid for w in wrong.witnesses)
    (task,) = results.tasks
    assert task.domain and all("tuple[" in line and "dict" not in line for line in task.domain), task.domain
    dumped = results.model_dump(mode="json")
    assert not _holds_tag(dumped["tasks"]), "a task report holds an encoded input"


def test_seeds_nested_past_the_cap_make_no_pool_and_say_so(pool: LocalExecutor, tmp_path: Path) -> None:
    nested = "[" * 150 + "1" + "]" * 150
    prompt = f'def f(x):\n    """Return x.\n    >>> f({nested})\n    {nested}\n    """\n'
    test = "def check(candidate):\n    assert candidate(1) == 1\n"
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "Deep/0", "completion": "    return x\n"}) + "\n")
    results = audit_humaneval(
        samples,
        executor=pool,
        witness_dir=tmp_path / "witnesses",
        config=AuditConfig(seed=0),
        problems={"Deep/0": Problem("Deep/0", prompt, "f", "    return x\n", test)},
    )
    (trial,) = results.trials
    assert trial.verdict == Verdict.SOUND
    assert "nest 151 deep" in (trial.reason or ""), trial.reason
