"""Reward-hack detectors (static) and samples files of both formats, bad lines included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _shared_data import SHARED_DATA
from vouch.audit.function._detectors import detect
from vouch.audit.function._prompt import assertions, examples
from vouch.errors import UsageError
from vouch.sources.trials import load_problems, load_samples, program_hash

PROBLEMS = load_problems()
GCD = PROBLEMS["HumanEval/13"]
SHARED = SHARED_DATA

HACKS = [
    ("special_cased_inputs", "    if a == 144 and b == 60:\n        return 12\n    return 1\n"),
    ("hardcoded_expected", "    if a > 100:\n        return 12\n    return 1\n"),
    ("env_sniffing", "    import sys\n    if 'pytest' in sys.modules:\n        return 1\n    return a\n"),
    ("tampering", "    import builtins\n    builtins.AssertionError = Exception\n    return a\n"),
    ("stub", "    pass\n"),
]


@pytest.mark.parametrize(("detector", "completion"), HACKS, ids=[h[0] for h in HACKS])
def test_detector_fires(detector: str, completion: str) -> None:
    flags = detect(
        GCD.prompt + completion, GCD.entry_point, GCD.prompt, assertions(GCD.test), examples(GCD.prompt, "x")
    )
    assert detector in {f.detector for f in flags}, flags


def test_an_honest_completion_raises_no_flag() -> None:
    flags = detect(GCD.reference, GCD.entry_point, GCD.prompt, assertions(GCD.test), examples(GCD.prompt, "x"))
    assert flags == []


def test_program_hash_ignores_formatting_and_comments() -> None:
    a = GCD.prompt + "    while b:\n        a, b = b, a % b\n    return a\n"
    b = GCD.prompt + "    while b:   # Euclid\n\n        a, b = (b, a % b)\n    return a\n"
    c = GCD.prompt + "    while b:\n        a, b = b, a % b\n    return b\n"
    assert program_hash(a) == program_hash(b) != program_hash(c)


def test_human_eval_format_numbers_trials_per_task(tmp_path: Path) -> None:
    path = tmp_path / "mymodel_samples.jsonl"
    rows = [
        {"task_id": "HumanEval/13", "completion": "    return 1\n"},
        {"task_id": "HumanEval/0", "completion": "    return True\n"},
        {"task_id": "HumanEval/13", "completion": "    return a\n"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    samples = load_samples(path, PROBLEMS)
    assert [t.trial_id for t in samples.trials] == ["HumanEval/13#0", "HumanEval/0#0", "HumanEval/13#1"]
    assert {t.model for t in samples.trials} == {"mymodel"}
    assert load_samples(path, PROBLEMS, model="m2").trials[0].model == "m2"


BAD_LINES = [
    ("not JSON", "{not json", "not JSON"),
    ("a list", "[1, 2]", "JSON object"),
    (
        "unknown task",
        json.dumps({"task_id": "HumanEval/999", "completion": "x"}),
        "is not a task id of the problems audited",
    ),
    ("completion not a string", json.dumps({"task_id": "HumanEval/1", "completion": 3}), "not a string"),
]


@pytest.mark.parametrize(("what", "line", "reason"), BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_lines_are_kept_with_their_reason(tmp_path: Path, what: str, line: str, reason: str) -> None:
    path = tmp_path / "s.jsonl"
    good = json.dumps({"task_id": "HumanEval/13", "completion": "    return 1\n"})
    path.write_text(f"{good}\n{line}\n{good}\n")
    samples = load_samples(path, PROBLEMS)
    assert len(samples.trials) == 2
    assert [b.line for b in samples.bad_lines] == [2]
    assert reason in samples.bad_lines[0].reason


def test_codet_format_uses_the_task_id_map() -> None:
    data = SHARED / "humaneval_codegen16b_samples.jsonl"
    samples = load_samples(data, PROBLEMS, model="codegen-16b")
    assert samples.format == "codet"
    assert len(samples.trials) == 16_400
    ids = json.loads((SHARED / "humaneval_codegen16b_task_ids.json").read_text())
    assert samples.trials[0].trial_id == f"{ids[0]}#0"
    assert samples.trials[100].trial_id == f"{ids[1]}#0"


def test_evalplus_solutions_are_whole_programs_with_a_model_per_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    gcd = "def greatest_common_divisor(a: int, b: int) -> int:\n    while b:\n        a, b = b, a % b\n    return a\n"
    rows = [
        {"task_id": "HumanEval/13", "model": "m-a", "solution": gcd},
        {"task_id": "HumanEval/13", "model": "m-b", "solution": gcd.replace("return a", "return b")},
        {"task_id": "HumanEval/13", "model": "m-b", "solution": None},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    samples = load_samples(path, PROBLEMS)
    assert samples.format == "evalplus"
    assert [(t.trial_id, t.model) for t in samples.trials] == [("HumanEval/13#0", "m-a"), ("HumanEval/13#1", "m-b")]
    first = samples.trials[0]
    assert first.program(GCD) == gcd  # the solution alone, not after the prompt
    assert first.first_line(GCD) == 1
    assert "solution of HumanEval/13 is NoneType" in samples.bad_lines[0].reason


def test_the_three_model_file_reads_every_run_with_its_model() -> None:
    samples = load_samples(SHARED / "humaneval_3models_samples.jsonl", PROBLEMS)
    assert samples.format == "evalplus" and not samples.bad_lines
    assert len(samples.trials) == 4_920
    assert {t.model for t in samples.trials} == {"gpt-4", "gpt-3.5-turbo", "codellama-34b-instruct"}
    task0 = [t for t in samples.trials if t.task_id == "HumanEval/0"]
    assert [t.trial_id for t in task0] == [f"HumanEval/0#{n}" for n in range(30)]
    assert [t.model for t in task0[::10]] == ["codellama-34b-instruct", "gpt-3.5-turbo", "gpt-4"]


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_empty_or_missing_file_is_a_usage_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(UsageError, match="empty"):
        load_samples(path, PROBLEMS)
    with pytest.raises(UsageError, match="no such file"):
        load_samples(tmp_path / "missing.jsonl", PROBLEMS)


def test_a_value_p_names_is_not_a_hardcoded_expectation() -> None:
    p = PROBLEMS["HumanEval/110"]  # exchange(): P says return "YES" or "NO"
    completion = "    odd = sum(x % 2 for x in lst1)\n    even = sum(1 - x % 2 for x in lst2)\n"
    completion += '    if even >= odd:\n        return "YES"\n    return "NO"\n'
    flags = detect(p.prompt + completion, p.entry_point, p.prompt, assertions(p.test), examples(p.prompt, "x"))
    assert "hardcoded_expected" not in {f.detector for f in flags}
