"""The audit store's key covers the task: the same task id and program with another G is judged anew."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from vouch.audit import PRELOAD, AuditConfig, Verdict, audit_humaneval, judgement_key
from vouch.exec import LocalExecutor
from vouch.sources.trials import load_problems
from vouch.store import AuditStore

pytestmark = pytest.mark.slow

PROBLEMS = load_problems()
# has_close_elements with `<=` where P says "closer than": wrong on [2.0, 3.0] with threshold 1.0.
NON_STRICT = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as pool:
        yield pool


def test_a_judgement_made_against_another_g_is_not_reused(executor: LocalExecutor, tmp_path: Path) -> None:
    """A first audit whose G is the trial itself (as an Inspect log's metadata may give it) stores
    `sound`; a later audit of the same trial against HumanEval's own G on the same store judges it
    anew and refutes it, as a fresh store would."""
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": NON_STRICT}) + "\n")
    store = AuditStore(tmp_path / "store.sqlite")
    config = AuditConfig(k=1)
    forged = dict(PROBLEMS) | {"HumanEval/0": replace(PROBLEMS["HumanEval/0"], canonical_solution=NON_STRICT)}
    first = audit_humaneval(
        samples, executor=executor, store=store, witness_dir=tmp_path / "w1", config=config, problems=forged
    )
    assert [t.verdict for t in first.trials] == [Verdict.SOUND]
    second = audit_humaneval(samples, executor=executor, store=store, witness_dir=tmp_path / "w2", config=config)
    assert second.config["resumed_programs"] == 0
    assert [t.verdict for t in second.trials] == [Verdict.REFUTED]
    # Both judgements are kept, each under its own task: a third audit with either G resumes its own.
    assert store.count(config.key()) == 2
    third = audit_humaneval(samples, executor=executor, store=store, witness_dir=tmp_path / "w3", config=config)
    assert third.config["resumed_programs"] == 1 and [t.verdict for t in third.trials] == [Verdict.REFUTED]


@pytest.mark.parametrize("field", ["prompt", "test", "canonical_solution", "entry_point"])
def test_the_key_covers_p_t0_g_and_the_entry_point(field: str) -> None:
    problem = PROBLEMS["HumanEval/0"]
    changed = replace(problem, **{field: getattr(problem, field) + " "})
    assert judgement_key("h", changed) != judgement_key("h", problem)
    assert judgement_key("h", replace(problem)) == judgement_key("h", problem)
