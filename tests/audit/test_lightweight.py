"""The lightweight audit (TestJack section 3.3, Algorithm 1), function level, end to end.

Six trials of has_close_elements pass T0: three right, three that take a distance equal to the
threshold as close (``<=``), written three ways. G's mutants include that very edit, so task
analysis puts the equal-distance input in T1 and T1 refutes all three. With T1 cut down to P's
own examples, the rounds must find them: the sampled wrong trial's audit finds the witness and
its sharing refutes the other two, each by a witness file of its own validated on G and on it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import vouch.audit.function._lightweight as lightweight
from _samples import write_samples
from vouch.audit import PRELOAD, AuditResults, Verdict, audit_humaneval
from vouch.audit._compare import compare
from vouch.audit.function._runs import AuditConfig
from vouch.errors import UsageError
from vouch.exec import LocalExecutor
from vouch.sources.trials import load_problems

pytestmark = pytest.mark.slow

RIGHT = [
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) < threshold:\n                return True\n    return False\n",
    "    xs = sorted(numbers)\n    return any(y - x < threshold for x, y in zip(xs, xs[1:]))\n",
    "    for i in range(len(numbers)):\n        for j in range(len(numbers)):\n"
    "            if i != j and abs(numbers[i] - numbers[j]) < threshold:\n"
    "                return True\n    return False\n",
]
AT_MOST = [c.replace("< threshold", "<= threshold") for c in RIGHT]
GCD = "    while b:\n        a, b = b, a % b\n    return a\n"
EXIT_OFF_T0 = (
    "    import os\n    if (a, b) not in ((3, 7), (10, 15), (49, 14), (144, 60)):\n        os._exit(0)\n"
) + GCD
# Ends its process off T0's inputs only when vouch's harness (not a test, not a witness) calls it.
EXIT_IN_THE_HARNESS = EXIT_OFF_T0.replace(
    "import os\n    if ",
    "import os, sys\n"
    "    if '_call_all' in [f.f_code.co_name for f, _ in __import__('traceback').walk_stack(None)] and ",
)


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as pool:
        yield pool


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = [("HumanEval/0", c) for c in RIGHT + AT_MOST]
    return write_samples(tmp_path_factory.mktemp("lw") / "samples.jsonl", rows)


def _audit(executor: LocalExecutor, samples: Path, tmp: Path, **config: object) -> AuditResults:
    return audit_humaneval(
        samples, executor=executor, witness_dir=tmp / "witnesses", config=AuditConfig(mode="lightweight", **config)
    )


def _verdicts(results: AuditResults) -> list[Verdict]:
    return [t.verdict for t in results.trials]


def test_task_analysis_refutes_the_shared_defect_before_any_trial_is_audited(
    executor: LocalExecutor, samples: Path, tmp_path: Path
) -> None:
    results = _audit(executor, samples, tmp_path)
    assert results.mode == "lightweight"
    assert _verdicts(results) == [Verdict.SOUND] * 3 + [Verdict.REFUTED] * 3
    analysis = results.tasks[0].rounds[0]
    assert analysis.round == 0 and analysis.trial_id is None and analysis.witnesses
    assert analysis.refuted == ["HumanEval/0#3", "HumanEval/0#4", "HumanEval/0#5"]
    # One T1 input refutes all three: G runs its witness 3 times for all of them, each trial 3 times.
    assert len({str(t.witnesses[0].input) for t in results.trials[3:]}) == 1
    assert results.config["stage_runs"]["validation, iteration 1"] == 3 + 3 * 3
    for trial in results.trials[3:]:
        (witness,) = trial.witnesses
        assert witness.found_on == "task analysis" and witness.validation.valid
        assert all(r.outcome == "pass" for r in witness.validation.reference_runs)
        assert all(r.outcome == "fail" for r in witness.validation.model_runs)
        assert trial.trial_id.replace("/", "_").replace("#", "_") in witness.file
    # The three right trials: each sampled in one of the three rounds, none refuted.
    assert sorted(r.trial_id or "" for r in results.tasks[0].rounds[1:]) == [f"HumanEval/0#{n}" for n in range(3)]


def test_a_sampled_trial_s_witness_refutes_the_trials_sharing_its_defect(
    executor: LocalExecutor, samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lightweight, "T1_SIZE", 0)  # T1 is P's examples alone: the rounds must find it
    results = _audit(executor, samples, tmp_path, seed=0)
    rounds = results.tasks[0].rounds
    assert rounds[0].refuted == []
    first = rounds[1]
    assert first.trial_id == "HumanEval/0#3", "seed 0 samples a wrong trial first"
    assert first.refuted == ["HumanEval/0#4", "HumanEval/0#5"]
    by_id = {t.trial_id: t for t in results.trials}
    assert by_id["HumanEval/0#3"].witnesses[0].found_on == "HumanEval/0#3"
    for other in ("HumanEval/0#4", "HumanEval/0#5"):
        assert by_id[other].verdict is Verdict.REFUTED
        assert by_id[other].witnesses[0].found_on == "HumanEval/0#3"
        assert by_id[other].witnesses[0].validation.valid
    assert _verdicts(results)[:3] == [Verdict.SOUND] * 3
    assert any("not sampled" in (t.reason or "") for t in results.trials[:3])
    again = _audit(executor, samples, tmp_path / "again", seed=0)
    assert [r.trial_id for r in again.tasks[0].rounds] == [r.trial_id for r in rounds], "seeded: same samples"


def test_zero_rounds_is_task_analysis_alone(executor: LocalExecutor, samples: Path, tmp_path: Path) -> None:
    results = _audit(executor, samples, tmp_path, rounds=0)
    assert [r.round for r in results.tasks[0].rounds] == [0]
    assert all("not sampled" in (t.reason or "") for t in results.trials if t.verdict is Verdict.SOUND)


def test_one_trial_tasks_and_a_sampled_trial_whose_audit_fails(executor: LocalExecutor, tmp_path: Path) -> None:
    samples = write_samples(
        tmp_path / "s.jsonl", [("HumanEval/13", EXIT_IN_THE_HARNESS), ("HumanEval/2", "    return number % 1.0\n")]
    )
    results = _audit(executor, samples, tmp_path)
    killer, single = results.trials
    # It dies only inside vouch's harness (its witnesses get G's answers): never sound, its audit failed.
    assert killer.verdict is Verdict.ERROR and "dies only inside vouch's harness" in (killer.reason or "")
    assert single.verdict is Verdict.SOUND
    for report in results.tasks:
        assert [r.round for r in report.rounds] == [0, 1], "one trial: one round, then the active set is empty"
    (audited,) = [r for t in results.tasks if t.task_id == "HumanEval/13" for r in t.rounds if r.round == 1]
    assert audited.error, audited


def test_the_static_baseline_builds_its_suite_from_g_before_any_trial(
    executor: LocalExecutor, samples: Path, tmp_path: Path
) -> None:
    results = audit_humaneval(
        samples, executor=executor, witness_dir=tmp_path / "witnesses", config=AuditConfig(mode="static")
    )
    assert results.mode == "static"
    # G's mutant `<=` survives T0; the input that rejects it catches the three trials that made that edit.
    assert _verdicts(results) == [Verdict.SOUND] * 3 + [Verdict.REFUTED] * 3
    (suite,) = results.tasks[0].rounds
    assert suite.round == 0 and suite.trial_id is None and suite.witnesses
    assert len(suite.witnesses) <= lightweight.T1_SIZE
    for trial in results.trials[3:]:
        (witness,) = trial.witnesses
        assert witness.found_on == "static" and witness.validation.valid
    assert all("passes every test built from G" in (t.reason or "") for t in results.trials[:3])


def test_the_static_suite_rejects_only_mutants_t0_lets_through(
    executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: list[list[str]] = []
    kills = lightweight._mutant_kills

    def spy(engine: object, contexts: object, mutants: dict, stage: str) -> object:  # type: ignore[type-arg]
        chosen.append([m.source for ms in mutants.values() for m in ms])
        return kills(engine, contexts, mutants, stage)  # type: ignore[arg-type]

    monkeypatch.setattr(lightweight, "_mutant_kills", spy)
    samples = write_samples(tmp_path / "s.jsonl", [("HumanEval/0", c) for c in RIGHT])
    audit_humaneval(samples, executor=executor, witness_dir=tmp_path / "w", config=AuditConfig(mode="static"))
    (survivors,) = chosen
    assert any("<= threshold" in s for s in survivors), "G's `<` made `<=` survives T0"
    test = load_problems()["HumanEval/0"].test
    for source in survivors:  # mutants of HumanEval's own G: each passes T0
        scope: dict[str, object] = {}
        exec(compile(source + "\n" + test, "mutant.py", "exec"), scope)
        scope["check"](scope["has_close_elements"])  # type: ignore[operator]


COMPARE_STATIC = ("--static", "st.json", "--json")


def test_compare_reports_recall_precision_and_cost_from_the_cli(
    executor: LocalExecutor, samples: Path, tmp_path: Path
) -> None:
    per_trial = audit_humaneval(samples, executor=executor, witness_dir=tmp_path / "pt")
    light = _audit(executor, samples, tmp_path)
    static = audit_humaneval(samples, executor=executor, witness_dir=tmp_path / "st", config=AuditConfig(mode="static"))
    (tmp_path / "pt.json").write_text(per_trial.model_dump_json())
    (tmp_path / "lw.json").write_text(light.model_dump_json())
    (tmp_path / "st.json").write_text(static.model_dump_json())
    out = tmp_path / "compare.json"
    run = subprocess.run(
        [sys.executable, "-m", "vouch", "audit", "compare", "pt.json", "lw.json", *COMPARE_STATIC, str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "static" in run.stdout, "the static row is in the table"
    body = json.loads(out.read_text())
    summary = body["summary"]
    assert body["static"]["recall"] == 1.0 and body["static"]["refuted"] == 3 and body["static"]["cost_ratio"] > 0
    assert {"mode", "rounds", "executions", "recall", "precision", "cost_ratio"} <= set(summary)
    assert summary["mode"] == "lightweight" and summary["rounds"] == 3
    assert summary["per_trial_refuted"] == 3 and summary["recall"] == 1.0 and summary["precision"] == 1.0
    assert summary["executions"] == light.summary.executions and summary["cost_ratio"] > 0
    # Counted in units of each run's own T0 in R[s] (the same programs in both runs).
    pt_t0, lw_t0 = body["per_trial"]["t0_run_s"], body["lightweight"]["t0_run_s"]
    assert pt_t0 > 0 and lw_t0 > 0
    expected = (body["lightweight"]["audit_run_s"] / lw_t0) / (body["per_trial"]["audit_run_s"] / pt_t0)
    assert summary["cost_ratio_normalised"] == pytest.approx(expected, abs=1e-3)
    with pytest.raises(UsageError, match="second file is a lightweight audit"):
        compare(tmp_path / "pt.json", tmp_path / "pt.json")
    (tmp_path / "other.json").write_text(light.model_copy(update={"trials": light.trials[:2]}).model_dump_json())
    with pytest.raises(UsageError, match="different trials"):
        compare(tmp_path / "pt.json", tmp_path / "other.json")
    with pytest.raises(UsageError, match="the static run is a static audit"):
        compare(tmp_path / "pt.json", tmp_path / "lw.json", static=tmp_path / "lw.json")
