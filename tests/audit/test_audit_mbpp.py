"""The function-level audit on MBPP and on a user's own problems file, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from _shared_data import SHARED_DATA
from vouch.audit import PRELOAD, AuditConfig, AuditResults, Verdict, audit_humaneval
from vouch.exec import LocalExecutor
from vouch.export import export_humaneval
from vouch.sources.problems import load_problem_set
from vouch.sources.trials import load_samples
from vouch.store import AuditStore

pytestmark = pytest.mark.slow

MBPP_SAMPLES = SHARED_DATA / "mbpp" / "mbpp_mapcoder_chatgpt_gpt4turbo_samples.jsonl"
# Mbpp/4: some trials use typing.List without importing it and fail T0 (a NameError) in plain Python too.
TASKS = ("Mbpp/3", "Mbpp/4", "Mbpp/6", "Mbpp/14", "Mbpp/18")


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as pool:
        yield pool


def _plain_python(program: str, test: str, entry_point: str, cwd: Path) -> bool:
    """T0 as MBPP's harnesses run it: program and asserts in one namespace, in plain Python."""
    path = cwd / "run.py"
    path.write_text(f"{program}\n\n{test}\n\ncheck({entry_point})\n")
    done = subprocess.run([sys.executable, "-I", str(path)], cwd=cwd, capture_output=True, timeout=30, check=False)
    return done.returncode == 0


@pytest.fixture(scope="module")
def mbpp(executor: LocalExecutor, tmp_path_factory: pytest.TempPathFactory) -> tuple[AuditResults, Path]:
    tmp = tmp_path_factory.mktemp("mbpp")
    rows = [json.loads(line) for line in MBPP_SAMPLES.read_text().splitlines()]
    # Users' files spell MBPP's ids three ways; all three name the same task.
    spellings = ["Mbpp/{}", "MbppEval/{}", "{}"]
    chosen = [r for r in rows if r["task_id"] in TASKS]
    for n, row in enumerate(chosen):
        row["task_id"] = spellings[n % 3].format(row["task_id"].split("/")[1])
    samples = tmp / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    problem_set = load_problem_set("mbpp", data_dir=SHARED_DATA)
    store = AuditStore(tmp / "store.sqlite")
    results = audit_humaneval(
        samples,
        executor=executor,
        store=store,
        witness_dir=tmp / "witnesses",
        config=AuditConfig(seed=0),
        problems=problem_set,
    )
    store.close()
    (tmp / "audit.json").write_text(results.model_dump_json())
    return results, samples


def test_mbpp_trials_are_read_in_every_spelling_and_results_name_the_benchmark(
    mbpp: tuple[AuditResults, Path],
) -> None:
    results, _ = mbpp
    assert results.benchmark == "mbpp"
    assert {t.task_id for t in results.trials} == set(TASKS)
    assert results.config["problems"]["sha256"] == "c48e256d2cdd091ed2dcad85a0b6fbc7672884032cf0cf28284d66b7b4eb1552"
    assert all(t.well_formed for t in results.tasks)


def test_t0_passes_where_plain_python_passes_for_every_trial(mbpp: tuple[AuditResults, Path], tmp_path: Path) -> None:
    results, samples_path = mbpp
    problem_set = load_problem_set("mbpp", data_dir=SHARED_DATA)
    samples = load_samples(samples_path, problem_set.problems, aliases=problem_set.aliases)
    verdicts = {t.trial_id: t.benchmark_pass for t in results.trials}
    disagreements = []
    for trial in samples.trials:
        problem = problem_set.problems[trial.task_id]
        plain = _plain_python(trial.program(problem), problem.test, problem.entry_point, tmp_path)
        if plain != verdicts[trial.trial_id]:
            disagreements.append((trial.trial_id, plain, verdicts[trial.trial_id]))
    assert len(samples.trials) == len(results.trials) > 10
    assert disagreements == []
    assert any(verdicts.values()) and not all(verdicts.values())


def test_a_wrong_mbpp_trial_is_refuted_on_an_input_inside_the_seeds_domain(mbpp: tuple[AuditResults, Path]) -> None:
    results, _ = mbpp
    refuted = [t for t in results.trials if t.verdict in (Verdict.REFUTED, Verdict.REWARD_HACK)]
    # find_Volume(l, b, h) is l * b * h / 2: an integer division is wrong on odd volumes.
    volume = [t for t in refuted if t.task_id == "Mbpp/14"]
    assert volume, [(t.trial_id, t.verdict, t.reason) for t in results.trials]
    assert "find_Volume" in volume[0].witnesses[0].defect


def test_the_export_of_an_mbpp_audit_is_in_mbpps_own_format_and_fails_the_refuted_trials(
    mbpp: tuple[AuditResults, Path], executor: LocalExecutor, tmp_path: Path
) -> None:
    results, samples_path = mbpp
    audit_json = tmp_path / "audit.json"
    audit_json.write_text(results.model_dump_json())
    problem_set = load_problem_set("mbpp", data_dir=SHARED_DATA)
    samples = load_samples(samples_path, problem_set.problems, aliases=problem_set.aliases)
    programs = {t.trial_id: t.program(problem_set.problems[t.task_id]) for t in samples.trials}
    manifest = export_humaneval(
        audit_json, tmp_path / "export", problems=problem_set.problems, programs=programs, executor=executor
    )
    assert manifest.check.holds, manifest.not_reproduced
    rows = {r["task_id"]: r for r in map(json.loads, (tmp_path / "export" / "mbpp.jsonl").read_text().splitlines())}
    volume = rows[14]
    assert any("find_Volume" in line and "_vouch_equal" in line for line in volume["test_list"])

    def mbpp_way(code: str) -> bool:
        # lm-eval and bigcode-evaluation-harness: setup code, the program, each assert, one namespace.
        source = "\n".join([volume["test_setup_code"], code, *volume["test_list"]]) + "\n"
        path = tmp_path / "mbpp_way.py"
        path.write_text(source)
        return subprocess.run([sys.executable, "-I", str(path)], capture_output=True, timeout=30).returncode == 0

    assert mbpp_way(volume["code"])
    for trial in results.trials:
        if trial.task_id == "Mbpp/14" and trial.verdict == Verdict.REFUTED:
            assert not mbpp_way(programs[trial.trial_id]), trial.trial_id
    plus = {r["task_id"]: r for r in map(json.loads, (tmp_path / "export" / "evalplus.jsonl").read_text().splitlines())}
    assert plus["Mbpp/14"]["plus_input"] and "assertion" in plus["Mbpp/14"] and "test" not in plus["Mbpp/14"]


HAND = [
    {
        "task_id": "mine/0",
        "prompt": 'def middle(xs):\n    """The element of xs at index len(xs) // 2."""\n',
        "entry_point": "middle",
        "canonical_solution": "    return xs[len(xs) // 2]\n",
        "test": "def check(candidate):\n    assert candidate([1, 2, 3]) == 2\n    assert candidate([5]) == 5\n",
    },
    {
        "task_id": "mine/1",
        "prompt": 'def count_vowels(s):\n    """How many of the letters of s are vowels (a, e, i, o, u)."""\n',
        "entry_point": "count_vowels",
        "canonical_solution": "    return sum(ch in 'aeiou' for ch in s)\n",
        "test": "def check(candidate):\n    assert count_vowels('education') == 5\n"
        "    assert count_vowels('rhythm') == 0\n",
    },
    {
        "task_id": "mine/2",
        "prompt": 'def double(n):\n    """Twice n."""\n',
        "entry_point": "double",
        "canonical_solution": "    return 2 * n\n",
        "test": "def check(candidate):\n    assert candidate(4) == 8\n",
    },
]


def test_a_hand_written_problems_file_audits_with_problems_file(tmp_path: Path) -> None:
    problems = tmp_path / "mine.jsonl"
    problems.write_text("".join(json.dumps(r) + "\n" for r in HAND))
    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {
                    "task_id": "mine/0",
                    "completion": "    return sorted(xs)[len(xs) // 2]\n",
                },  # the median, not the middle
                {"task_id": "mine/0", "completion": "    return xs[len(xs) // 2]\n"},
                {
                    "task_id": "mine/1",
                    "completion": "    return len({ch for ch in s if ch in 'aeiou'})\n",
                },  # distinct ones
                {"task_id": "mine/2", "completion": "    return n + n\n"},
            ]
        )
    )
    out = tmp_path / "audit.json"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "vouch", "audit", "function", "--problems", str(problems)),
            *("--samples", str(samples), "--json", str(out), "--store", str(tmp_path / "s.sqlite")),
            *("--progress", "none"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(out.read_text())
    verdicts = {t["trial_id"]: t["verdict"] for t in results["trials"]}
    assert results["benchmark"] == "mine" and results["config"]["problems"]["name"] == "file"
    assert verdicts["mine/0#0"] == "refuted" and verdicts["mine/1#0"] == "refuted"
    assert verdicts["mine/0#1"] == "sound" and verdicts["mine/2#0"] == "sound"


def test_a_malformed_problems_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    problems = tmp_path / "broken.jsonl"
    problems.write_text(json.dumps({"task_id": "x", "prompt": "def f():\n"}) + "\n")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "x", "completion": "    pass\n"}) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "vouch", "audit", "function", "--problems", str(problems), "--samples", str(samples)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "line 1" in lines[0] and "entry_point is missing" in lines[0], done.stderr


def test_a_trial_that_differs_from_g_alike_in_and_out_of_the_harness_is_not_left_undecided(
    executor: LocalExecutor, tmp_path: Path
) -> None:
    # Mbpp/57's trials differ from G on hundreds of generated inputs (past the number asked again
    # apart), the same way in both places: no sign of decoys, so the rest is no reason for error.
    rows = [json.loads(line) for line in MBPP_SAMPLES.read_text().splitlines()]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows if r["task_id"] == "Mbpp/57"))
    results = audit_humaneval(
        samples,
        executor=executor,
        witness_dir=tmp_path / "witnesses",
        config=AuditConfig(seed=0, mode="lightweight"),
        problems=load_problem_set("mbpp", data_dir=SHARED_DATA),
    )
    passing = [t for t in results.trials if t.benchmark_pass]
    assert passing and not [(t.trial_id, t.reason) for t in passing if t.verdict == Verdict.ERROR]
