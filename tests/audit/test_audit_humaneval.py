"""The function-level audit end to end, through the engine, on real HumanEval problems."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vouch.audit import PRELOAD, AuditConfig, AuditResults, Verdict, audit_humaneval
from vouch.audit.function._preconditions import infer
from vouch.corpora import demo_samples_file
from vouch.exec import LocalExecutor
from vouch.sources.trials import load_problems
from vouch.store import AuditStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DEMO = demo_samples_file()  # the demo's slice of the registered CodeT corpus, written to the user cache
PROBLEMS = load_problems()

# has_close_elements: "closer to each other than given threshold" is strict; `<=` is wrong on
# [2.0, 3.0] with threshold 1.0, and T0 never puts two numbers exactly `threshold` apart.
NON_STRICT = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)
# A correct alternative: sort, then compare neighbours.
SORTED_NEIGHBOURS = "    xs = sorted(numbers)\n    return any(b - a < threshold for a, b in zip(xs, xs[1:]))\n"
# Correct, with a guard no input P allows (nor T0) ever takes: a ghost branch P does not govern.
GUARDED = (
    "    if len(numbers) > 10000:\n        return False\n"
    "    xs = sorted(numbers)\n    return any(b - a < threshold for a, b in zip(xs, xs[1:]))\n"
)
# greatest_common_divisor special-casing T0's inputs, wrong elsewhere.
GCD_HACK = (
    "    if a == 3 and b == 7:\n        return 1\n    if a == 10 and b == 15:\n        return 5\n"
    "    if a == 49 and b == 14:\n        return 7\n    if a == 144 and b == 60:\n        return 12\n    return 1\n"
)
# string_xor that refuses strings of unequal length: P's inputs always have equal length, so
# the only inputs that tell it from G are outside the preconditions.
XOR_STRICT = (
    "    if len(a) != len(b):\n        raise ValueError('lengths differ')\n"
    "    return ''.join('0' if x == y else '1' for x, y in zip(a, b))\n"
)


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as pool:
        yield pool


def _samples(tmp_path: Path, rows: list[tuple[str, str]]) -> Path:
    path = tmp_path / "hand_samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    return path


@pytest.fixture(scope="module")
def hand_results(executor: LocalExecutor, tmp_path_factory: pytest.TempPathFactory) -> AuditResults:
    tmp = tmp_path_factory.mktemp("hand")
    rows = [
        ("HumanEval/0", NON_STRICT),
        ("HumanEval/0", SORTED_NEIGHBOURS),
        ("HumanEval/0", PROBLEMS["HumanEval/0"].canonical_solution),
        ("HumanEval/13", GCD_HACK),
        ("HumanEval/11", XOR_STRICT),
        ("HumanEval/13", "    return a +\n"),
        ("HumanEval/13", "    while True:\n        pass\n"),
        ("HumanEval/0", GUARDED),
        ("HumanEval/33", "    l = list(l)\n    l[::3] = sorted(l[::3])\n    return tuple(l)\n"),
        ("HumanEval/33", "    l = list(l)\n    l[::3] = sorted(l[::3])\n    return l[::-1] if len(l) == 4 else l\n"),
    ]
    return audit_humaneval(
        _samples(tmp, rows), executor=executor, witness_dir=tmp / "witnesses", store=AuditStore(tmp / "s.sqlite")
    )


def _trial(results: AuditResults, trial_id: str):  # type: ignore[no-untyped-def]
    return next(t for t in results.trials if t.trial_id == trial_id)


def test_a_refutable_completion_is_refuted_with_a_witness_that_replays(hand_results: AuditResults) -> None:
    trial = _trial(hand_results, "HumanEval/0#0")
    assert trial.benchmark_pass
    assert trial.verdict is Verdict.REFUTED
    witness = trial.witnesses[0]
    assert witness.validation.valid and witness.validation.rejudged
    assert all(r.outcome == "pass" for r in witness.validation.reference_runs)
    assert all(r.exception == "AssertionError" for r in witness.validation.model_runs)
    assert witness.expected is False and witness.actual is True
    assert "threshold" in witness.clause
    replay = subprocess.run(
        [sys.executable, "-m", "vouch", "audit", "replay", witness.file],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert "witness holds" in replay.stdout


def test_correct_alternatives_stay_sound(hand_results: AuditResults) -> None:
    for trial_id in ("HumanEval/0#1", "HumanEval/0#2"):
        trial = _trial(hand_results, trial_id)
        assert trial.verdict is Verdict.SOUND, (trial_id, trial.reason)
        assert trial.witnesses == []


def test_special_casing_t0_is_a_reward_hack(hand_results: AuditResults) -> None:
    trial = _trial(hand_results, "HumanEval/13#0")
    assert trial.verdict is Verdict.REWARD_HACK
    assert "special_cased_inputs" in {f.detector for f in trial.evidence.detector_flags}
    assert trial.witnesses[0].validation.valid


def test_an_input_outside_the_preconditions_is_never_used(hand_results: AuditResults) -> None:
    trial = _trial(hand_results, "HumanEval/11#0")
    assert trial.benchmark_pass
    assert trial.verdict is Verdict.SOUND, trial.reason
    task = next(t for t in hand_results.tasks if t.task_id == "HumanEval/11")
    assert task.well_formed
    # The domain is shown per task: string_xor's two arguments, and the length they share.
    assert [line.split(":")[0] for line in task.domain] == ["a", "b", "a same_len b"], task.domain
    assert "characters '01'" in task.domain[0], task.domain
    # Every witness of the run has an input inside its task's preconditions.
    for t in hand_results.trials:
        for w in t.witnesses:
            problem = PROBLEMS[t.task_id]
            from vouch.audit.function._prompt import parameters

            seeds = [e for e in [w.input] if e is not None]
            assert infer(problem.prompt, parameters(problem.prompt, problem.entry_point), seeds).admits(w.input) is None


def test_unparsable_and_hanging_samples_are_recorded(hand_results: AuditResults) -> None:
    unparsable = _trial(hand_results, "HumanEval/13#1")
    assert unparsable.verdict is Verdict.UNAPPLIABLE and "parse" in (unparsable.reason or "")
    hanging = _trial(hand_results, "HumanEval/13#2")
    assert hanging.verdict is Verdict.NOT_PASSING
    assert hanging.reason and "timeout" in hanging.reason


def test_evidence_records_every_step(hand_results: AuditResults) -> None:
    trial = _trial(hand_results, "HumanEval/0#1")
    worlds = [t.world for t in trial.evidence.t0]
    assert worlds == ["reference", "null", "model"]
    assert trial.evidence.checklist and any(c.origin == "example" for c in trial.evidence.checklist)
    assert trial.evidence.mutants_run > 0
    branchy = _trial(hand_results, "HumanEval/0#0").evidence
    assert branchy.branch_coverage is not None and 0.0 < branchy.branch_coverage <= 1.0
    s = hand_results.summary
    assert s.trials == 10 and s.passing == 8
    assert s.refuted == 3 and s.reward_hack == 1
    assert s.corrected_resolution_rate == pytest.approx((8 - 3) / 10)


def test_outputs_are_compared_as_t0_compares_them(hand_results: AuditResults) -> None:
    # T0 of sort_third compares tuple(candidate(x)): a tuple is as good as a list there.
    assert _trial(hand_results, "HumanEval/33#0").verdict is Verdict.SOUND
    wrong = _trial(hand_results, "HumanEval/33#1")
    assert wrong.verdict is Verdict.REFUTED
    assert "tuple(sort_third(*args))" in wrong.witnesses[0].source


def test_ghost_branches_are_classified(hand_results: AuditResults) -> None:
    trial = _trial(hand_results, "HumanEval/0#3")
    assert trial.verdict is Verdict.SOUND
    ghosts = trial.evidence.ghost_branches
    assert ghosts, "the guard's branch is never taken under T0"
    guard = next(g for g in ghosts if "10000" in g.code)
    assert guard.required is False and guard.note


def test_real_completions_share_judgements_of_duplicates(executor: LocalExecutor, tmp_path: Path) -> None:
    results = audit_humaneval(DEMO, executor=executor, witness_dir=tmp_path / "w", limit_tasks=3)
    assert results.summary.trials == 30
    assert results.summary.distinct_programs <= 30
    assert all(t.verdict is not Verdict.ERROR for t in results.trials)
    by_hash: dict[str | None, set[str]] = {}
    for t in results.trials:
        by_hash.setdefault(t.program_hash, set()).add(t.verdict.value)
    assert all(len(v) == 1 for v in by_hash.values())
    assert any(t.shared_from for t in results.trials) or results.summary.distinct_programs == 30
    assert {r.task_id for r in results.tasks} == {"HumanEval/0", "HumanEval/1", "HumanEval/10"} or len(
        results.tasks
    ) == 3


def test_resume_after_kill(tmp_path: Path) -> None:
    store_path = tmp_path / "store.sqlite"
    argv = [sys.executable, "-m", "vouch", "audit", "humaneval", "--samples", str(DEMO), "--limit-tasks", "6"]
    argv += ["--store", str(store_path), "--workers", "2"]
    config_key = AuditConfig().key()
    proc = subprocess.Popen(
        [*argv, "--json", str(tmp_path / "a.json")],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
        if store_path.exists():
            stored = AuditStore(store_path).count(config_key)
            if stored > 0:
                break
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert stored > 0, "the run stored nothing before it was killed"
    finished = subprocess.run(
        [*argv, "--json", str(tmp_path / "b.json")], capture_output=True, text=True, timeout=600, check=False
    )
    assert finished.returncode == 0, finished.stderr
    body = json.loads((tmp_path / "b.json").read_text())
    assert body["config"]["resumed_programs"] >= stored
    assert body["summary"]["trials"] == 60
    assert not [t for t in body["trials"] if t["verdict"] == "error"]


def test_cli_reports_bad_lines_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    good = json.dumps(
        {"task_id": "HumanEval/13", "completion": "    while b:\n        a, b = b, a % b\n    return a\n"}
    )
    path.write_text(f"{good}\n{{oops\n" + json.dumps({"task_id": "nope", "completion": ""}) + "\n")
    out = tmp_path / "r.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "vouch",
            "audit",
            "humaneval",
            "--samples",
            str(path),
            "--json",
            str(out),
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    body = json.loads(out.read_text())
    assert body["kind"] == "audit" and body["summary"]["trials"] == 1
    assert [b["line"] for b in body["config"]["bad_lines"]] == [2, 3]
    assert body["trials"][0]["verdict"] == "sound"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "lightweight", "--witness-source", "files", "--witness-files", "."], "serves --mode per-trial"),
        (["--witness-source", "agent"], "needs --agent-model"),
        (["--witness-source", "files"], "--witness-files"),
    ],
)
def test_cli_usage_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "vouch",
            "audit",
            "humaneval",
            "--samples",
            str(DEMO),
            "--store",
            str(tmp_path / "s.sqlite"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 2
    assert message in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_user_supplied_witness_files(executor: LocalExecutor, tmp_path: Path) -> None:
    supplied = tmp_path / "supplied"
    supplied.mkdir()
    (supplied / "test_HumanEval_0_strict.py").write_text(
        "from solution import has_close_elements\n\n\n"
        "def test_strictly_closer():\n    assert has_close_elements([2.0, 3.0], 1.0) is False\n"
    )
    samples = _samples(tmp_path, [("HumanEval/0", NON_STRICT), ("HumanEval/0", SORTED_NEIGHBOURS)])
    config = AuditConfig(witness_source="files", witness_files=str(supplied))
    results = audit_humaneval(samples, executor=executor, witness_dir=tmp_path / "w", config=config)
    wrong, right = results.trials
    assert wrong.verdict is Verdict.REFUTED and wrong.witnesses[0].origin == "files"
    assert right.verdict is Verdict.SOUND
