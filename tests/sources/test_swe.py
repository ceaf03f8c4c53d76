"""SWE-bench-format instances and predictions: the bundled fixtures load; bad lines are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vouch.errors import UsageError
from vouch.swebench import (
    FIXTURES,
    fixture_files,
    load_instances,
    load_predictions,
    materialise_fixture_repo,
)
from vouch.worlds import parse_patch

GOOD = {
    "instance_id": "x__y-1",
    "repo": "y",
    "base_commit": "abcdef0",
    "problem_statement": "Fix it.",
    "patch": "diff --git a/a.py b/a.py\n",
    "test_patch": "",
    "FAIL_TO_PASS": '["tests/test_a.py::test_a"]',
    "PASS_TO_PASS": [],
}


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_bundled_fixtures_load() -> None:
    instances_file, predictions_file = fixture_files()
    instances = load_instances(instances_file)
    assert sorted(i.repo for i in instances) == sorted(FIXTURES)
    trials = load_predictions(predictions_file, instances)
    assert len(trials) >= 3 * 3
    for inst in instances:
        own = [t for t in trials if t.instance_id == inst.instance_id]
        assert [t.trial_id for t in own] == [f"{inst.instance_id}#{n}" for n in range(len(own))]
        assert inst.fail_to_pass and inst.pass_to_pass
        # The gold patch is a real multi-line diff of the library, the tests come in their own patch.
        assert parse_patch(inst.patch) and all(not c.path.startswith("tests/") for c in parse_patch(inst.patch))
        assert all(c.path.startswith("tests/") for c in parse_patch(inst.test_patch))


def test_fixture_commit_is_deterministic_and_matches_instances(visible_tmp: Path) -> None:
    instances = {i.repo: i for i in load_instances(fixture_files()[0])}
    for name in FIXTURES:
        first = materialise_fixture_repo(name, visible_tmp / f"{name}-1")
        second = materialise_fixture_repo(name, visible_tmp / f"{name}-2")
        assert first == second == instances[name].base_commit
        files = [p for p in (visible_tmp / f"{name}-1").rglob("*.py")]
        assert len(files) >= 5, "a multi-file library with tests"
        lines = sum(len(p.read_text().splitlines()) for p in files)
        assert 150 <= lines <= 400
        assert not list((visible_tmp / f"{name}-1").rglob("*.py.txt"))


def test_fixture_builder_refuses_bad_input(visible_tmp: Path) -> None:
    with pytest.raises(UsageError, match="unknown"):
        materialise_fixture_repo("nope", visible_tmp / "x")
    (visible_tmp / "full").mkdir()
    (visible_tmp / "full" / "f").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        materialise_fixture_repo("unitconv", visible_tmp / "full")


def test_lists_may_be_json_strings_or_lists(tmp_path: Path) -> None:
    (inst,) = load_instances(_write(tmp_path / "i.jsonl", [GOOD]))
    assert inst.fail_to_pass == ["tests/test_a.py::test_a"]
    assert inst.pass_to_pass == []
    assert inst.t0 == ["tests/test_a.py::test_a"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", r"i\.jsonl:2: not JSON"),
        ("[1, 2]", r"i\.jsonl:2: a JSON object was expected, got list"),
        ({k: v for k, v in GOOD.items() if k != "base_commit"} | {"instance_id": "b"}, r":2: field 'base_commit'"),
        (GOOD | {"instance_id": "b", "FAIL_TO_PASS": "not json"}, r":2: field 'FAIL_TO_PASS'.*JSON-encoded"),
        (GOOD | {"instance_id": "b", "PASS_TO_PASS": 3}, r":2: field 'PASS_TO_PASS'"),
        (GOOD | {"instance_id": "b", "patch": ""}, r":2: field 'patch'"),
        (GOOD, r":2: field 'instance_id': 'x__y-1' repeats line 1"),
        (GOOD | {"instance_id": "b", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}, r":2: field 'FAIL_TO_PASS': T0 is empty"),
    ],
)
def test_bad_instance_lines(tmp_path: Path, row: object, message: str) -> None:
    path = _write(tmp_path / "i.jsonl", [GOOD, row])
    with pytest.raises(UsageError, match=message) as info:
        load_instances(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"instance_id": "x__y-1", "model_patch": ""}, r"p\.jsonl:2: field 'model_name_or_path'"),
        ({"instance_id": "x__y-1", "model_name_or_path": "m"}, r":2: field 'model_patch'"),
        ({"instance_id": "other", "model_name_or_path": "m", "model_patch": ""}, r":2: field 'instance_id'.*not in"),
        ({"instance_id": 3, "model_name_or_path": "m", "model_patch": ""}, r":2: field 'instance_id'"),
    ],
)
def test_bad_prediction_lines(tmp_path: Path, row: object, message: str) -> None:
    instances = load_instances(_write(tmp_path / "i.jsonl", [GOOD]))
    good = {"instance_id": "x__y-1", "model_name_or_path": "m", "model_patch": "diff"}
    path = _write(tmp_path / "p.jsonl", [good, row])
    with pytest.raises(UsageError, match=message) as info:
        load_predictions(path, instances)
    assert "\n" not in str(info.value)


def test_trial_ids_count_per_instance_and_null_patch(tmp_path: Path) -> None:
    rows = [
        {"instance_id": "a", "model_name_or_path": "m1", "model_patch": "p"},
        {"instance_id": "b", "model_name_or_path": "m1", "model_patch": None},
        {"instance_id": "a", "model_name_or_path": "m2", "model_patch": "q"},
    ]
    trials = load_predictions(_write(tmp_path / "p.jsonl", rows))
    assert [t.trial_id for t in trials] == ["a#0", "b#0", "a#1"]
    assert [t.model for t in trials] == ["m1", "m1", "m2"]
    assert trials[1].patch == ""


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        load_instances(tmp_path / "none.jsonl")
    with pytest.raises(UsageError, match="no instances"):
        load_instances(_write(tmp_path / "e.jsonl", []))
