"""EvalPlus's samples directory and results file, and its labels beside vouch's verdicts.

The evalplus package is not installed here (it pulls in transformers, datasets and boto3, and
its tree-sitter pin conflicts with vouch's), so its files are written by ``evalplus_results``
below in the shape evalplus 0.3.1's own writers give them: ``evalplus.evaluate.evaluate`` (the
``{"date", "hash", "eval": {task_id: [{"task_id", "solution", "base_status", "plus_status",
"base_fail_tests", "plus_fail_tests"}]}}`` object, statuses ``pass``/``fail``/``timeout``, each
task's entries in completion order) and ``evalplus.data.write_directory`` (``<task_id with / as
_>/<n>.py``); the 0.2.0 layout as 0.2.0's ``evaluate`` wrote it (``nfiles``, ``base`` and
``plus`` lists of ``[status, details]``). The programs are real HumanEval/0 solutions: G, one
that takes ``<=`` for "closer than" (passes T0, refuted offline), and one that fails T0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vouch.core import TrialResult, Verdict
from vouch.errors import UsageError
from vouch.sources.trials._evalplus import comparison, label_trials, load_eval_results
from vouch.sources.trials._samples import load_problems, load_samples

PROBLEMS = load_problems()
TASK = "HumanEval/0"
PROMPT = PROBLEMS[TASK].prompt
RIGHT = PROMPT + PROBLEMS[TASK].canonical_solution
AT_THRESHOLD = PROMPT + (
    "    for i, a in enumerate(numbers):\n"
    "        for j, b in enumerate(numbers):\n"
    "            if i != j and abs(a - b) <= threshold:\n"
    "                return True\n"
    "    return False\n"
)
WRONG = PROMPT + "    return False\n"


def write_directory(root: Path, samples: list[tuple[str, str]]) -> Path:
    """evalplus.data.write_directory: one <task_id with / as _>/<n>.py per sample, n per task from 0."""
    counters: dict[str, int] = {}
    for task_id, solution in samples:
        folder = root / task_id.replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        n = counters.get(task_id, 0)
        (folder / f"{n}.py").write_text(solution)
        counters[task_id] = n + 1
    return root


def evalplus_results(path: Path, rows: list[tuple[str, str, str, str | None]]) -> Path:
    """evaluate()'s results object: per task, entries of (solution, base_status, plus_status)."""
    body: dict[str, Any] = {"date": "2026-12-02 03:00", "hash": "8d9b3c0bb4b1a2c3", "eval": {}}
    for task_id, solution, base, plus in rows:
        body["eval"].setdefault(task_id, []).append(
            {
                "task_id": task_id,
                "solution": solution,
                "base_status": base,
                "plus_status": plus,
                "base_fail_tests": [] if base == "pass" else [[[1.0, 2.0], 0.5]],
                "plus_fail_tests": [] if plus == "pass" else [[[2.0, 3.0], 1.0]],
            }
        )
    path.write_text(json.dumps(body))
    return path


def test_a_samples_directory_is_read_as_whole_programs(tmp_path: Path) -> None:
    root = write_directory(tmp_path / "samples", [(TASK, RIGHT), (TASK, AT_THRESHOLD), ("HumanEval/2", WRONG)])
    (root / "HumanEval_0" / "notes.txt").write_text("not a sample")
    (root / "HumanEval_0" / "best.py").write_text(RIGHT)
    (root / "Mbpp_2").mkdir()
    (root / "Mbpp_2" / "0.py").write_text("def f(): pass\n")
    samples = load_samples(root, PROBLEMS)
    assert samples.format == "evalplus-dir"
    assert [t.trial_id for t in samples.trials] == ["HumanEval/0#0", "HumanEval/0#1", "HumanEval/2#0"]
    assert all(t.solution for t in samples.trials)
    assert samples.trials[1].program(PROBLEMS[TASK]) == AT_THRESHOLD
    assert [b.reason for b in samples.bad_lines] == [
        "HumanEval_0/best.py: the name is not <n>.py",
        "Mbpp_2/0.py: 'Mbpp/2' is not a task id of the problems audited (--problems)",
    ]


def test_an_empty_samples_directory_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "HumanEval_0").mkdir()
    with pytest.raises(UsageError, match=r"no <task_id>/<n>\.py samples"):
        load_samples(tmp_path, PROBLEMS)


def test_labels_follow_the_solution_not_the_order(tmp_path: Path) -> None:
    samples = load_samples(
        write_directory(tmp_path / "s", [(TASK, RIGHT), (TASK, AT_THRESHOLD), (TASK, WRONG)]), PROBLEMS
    )
    # evalplus lists a directory in os.listdir order: its entries need not follow the file names.
    results = load_eval_results(
        evalplus_results(
            tmp_path / "eval_results.json",
            [(TASK, WRONG, "fail", "fail"), (TASK, RIGHT, "pass", "pass"), (TASK, AT_THRESHOLD, "pass", "fail")],
        )
    )
    programs = {t.trial_id: t.program(PROBLEMS[TASK]) for t in samples.trials}
    labelled = label_trials(samples.trials, programs, results)
    got = {k: (v.base_status, v.plus_status) for k, v in labelled.labels.items()}
    assert got == {
        "HumanEval/0#0": ("pass", "pass"),
        "HumanEval/0#1": ("pass", "fail"),
        "HumanEval/0#2": ("fail", "fail"),
    }
    assert labelled.unmatched_entries == [] and labelled.unlabelled_trials == []


def test_completion_lines_match_as_prompt_plus_completion(tmp_path: Path) -> None:
    lines = tmp_path / "samples.jsonl"
    completions = [RIGHT[len(PROMPT) :], AT_THRESHOLD[len(PROMPT) :], "    return None\n"]
    lines.write_text("".join(json.dumps({"task_id": TASK, "completion": c}) + "\n" for c in completions))
    samples = load_samples(lines, PROBLEMS)
    results = load_eval_results(
        evalplus_results(
            tmp_path / "samples_eval_results.json",
            [(TASK, RIGHT, "pass", "pass"), (TASK, AT_THRESHOLD, "pass", "fail"), (TASK, "other text", "fail", None)],
        )
    )
    programs = {t.trial_id: t.program(PROBLEMS[TASK]) for t in samples.trials}
    labelled = label_trials(samples.trials, programs, results)
    assert sorted(labelled.labels) == ["HumanEval/0#0", "HumanEval/0#1"]
    assert labelled.unmatched_entries == ["HumanEval/0[2]"]
    assert labelled.unlabelled_trials == ["HumanEval/0#2"]


def test_the_0_2_0_layout_is_read_by_position(tmp_path: Path) -> None:
    body = {
        "date": "2023-06-01 10:00",
        "hash": "x",
        "eval": {
            TASK: {"nfiles": 2, "base": [["success", []], ["failed", [1]]], "plus": [["timed out", []], ["failed", []]]}
        },
    }
    path = tmp_path / "eval_results.json"
    path.write_text(json.dumps(body))
    results = load_eval_results(path)
    assert results.layout == "0.2.0"
    lines = tmp_path / "s.jsonl"
    lines.write_text("".join(json.dumps({"task_id": TASK, "solution": s}) + "\n" for s in (RIGHT, WRONG)))
    samples = load_samples(lines, PROBLEMS)
    labelled = label_trials(samples.trials, {t.trial_id: t.completion for t in samples.trials}, results)
    assert [(v.base_status, v.plus_status) for v in labelled.labels.values()] == [("pass", "timeout"), ("fail", "fail")]


def _trial(trial_id: str, passing: bool, verdict: Verdict) -> TrialResult:
    return TrialResult(trial_id=trial_id, task_id=TASK, model="m", benchmark_pass=passing, verdict=verdict)


def test_comparison_names_what_each_side_alone_rejects(tmp_path: Path) -> None:
    results = load_eval_results(
        evalplus_results(
            tmp_path / "r.json",
            [
                (TASK, "a", "pass", "fail"),
                (TASK, "b", "pass", "pass"),
                (TASK, "c", "pass", "fail"),
                (TASK, "d", "pass", "pass"),
                (TASK, "e", "fail", "fail"),
            ],
        )
    )
    trials = [_trial(f"{TASK}#{n}", True, Verdict.SOUND) for n in range(5)]
    trials[1] = _trial(f"{TASK}#1", True, Verdict.REFUTED)
    trials[2] = _trial(f"{TASK}#2", True, Verdict.REWARD_HACK)
    programs = dict(zip([t.trial_id for t in trials], "abcde", strict=True))
    labelled = label_trials(trials, programs, results)
    rows = {r["trial_id"]: r for r in comparison(labelled.labels, trials)}
    assert [rows[f"{TASK}#{n}"]["finding"] for n in range(5)] == ["plus_only", "vouch_only", "both", None, None]
    # The base tests said fail where vouch's run of T0 passed: reported, not resolved either way.
    assert [rows[f"{TASK}#{n}"]["base_agrees"] for n in range(5)] == [True, True, True, True, False]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "not JSON"),
        ("[]", "no 'eval' object"),
        ('{"eval": {"HumanEval/0": 3}}', "a list of results was expected, got int"),
        ('{"eval": {"HumanEval/0": ["x"]}}', "eval['HumanEval/0'][0]: an object was expected"),
        ('{"eval": {"HumanEval/0": [{"base_status": "pass"}]}}', "'solution' is missing"),
        ('{"eval": {"HumanEval/0": [{"solution": "s"}]}}', "'base_status' is missing"),
        ('{"eval": {"HumanEval/0": [{"solution": "s", "base_status": "ok"}]}}', "status 'ok' is not one of"),
        ('{"eval": {"HumanEval/0": [{"solution": "s", "base_status": "pass", "plus_status": 1}]}}', "status 1"),
        ('{"eval": {"HumanEval/0": {"base": [7]}}}', "a [status, details] pair was expected"),
    ],
)
def test_malformed_results_are_one_line(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "eval_results.json"
    path.write_text(body)
    with pytest.raises(UsageError) as info:
        load_eval_results(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_missing_results_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        load_eval_results(tmp_path / "nope.json")


def _vouch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vouch", *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_cli_bad_results_file_exits_2_with_one_line(visible_tmp: Path) -> None:
    samples = write_directory(visible_tmp / "samples", [(TASK, RIGHT)])
    (visible_tmp / "bad.json").write_text('{"eval": {"HumanEval/0": [{"solution": 1}]}}')
    done = _vouch("audit", "humaneval", "--samples", str(samples), "--evalplus-results", "bad.json", cwd=visible_tmp)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "'solution' is missing or not a string" in done.stderr


@pytest.mark.slow
def test_cli_audits_a_samples_directory_beside_evalplus(visible_tmp: Path) -> None:
    samples = write_directory(visible_tmp / "samples", [(TASK, RIGHT), (TASK, AT_THRESHOLD), (TASK, WRONG)])
    # What evalplus says: HumanEval+ catches the <= trial (its plus inputs hold two numbers exactly
    # the threshold apart); the base tests fail the last one.
    results = evalplus_results(
        samples / "eval_results.json",
        [(TASK, RIGHT, "pass", "pass"), (TASK, AT_THRESHOLD, "pass", "fail"), (TASK, WRONG, "fail", "fail")],
    )
    out = visible_tmp / "audit.json"
    done = _vouch(
        "audit", "humaneval", "--samples", str(samples), "--evalplus-results", str(results), "--json", str(out),
        "--store", str(visible_tmp / "store.sqlite"), "--progress", "none",
        cwd=visible_tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    body = json.loads(out.read_text())
    assert body["config"]["samples"] == str(samples)
    verdicts = {t["trial_id"]: t["verdict"] for t in body["trials"]}
    assert verdicts == {"HumanEval/0#0": "sound", "HumanEval/0#1": "refuted", "HumanEval/0#2": "not_passing"}
    evalplus = body["config"]["evalplus"]
    assert evalplus["labelled"] == 3 and evalplus["base_disagreements"] == []
    assert evalplus["findings"] == {"plus_only": 0, "vouch_only": 0, "both": 1}
    assert "both reject 1" in done.stdout


def test_an_mbpp_samples_directory_is_read_against_mbpps_problems(tmp_path: Path) -> None:
    from _shared_data import SHARED_DATA
    from vouch.sources.problems import load_problem_set

    mbpp = load_problem_set("mbpp", data_dir=SHARED_DATA)
    root = tmp_path / "samples"
    for name, n in (("Mbpp_2", 0), ("Mbpp_2", 1), ("MbppEval_3", 0)):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / f"{n}.py").write_text("def f():\n    pass\n")
    samples = load_samples(root, mbpp.problems, aliases=mbpp.aliases)
    assert [t.trial_id for t in samples.trials] == ["Mbpp/2#0", "Mbpp/2#1", "Mbpp/3#0"]
    assert samples.bad_lines == []
