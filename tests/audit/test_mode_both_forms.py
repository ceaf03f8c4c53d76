"""A new mode is one registry entry, and both forms run it through the one driver.

The mode here, ``analysis``, is TestJack's task analysis alone: T1 built from P, T0 and G and
replayed on every passing trial, with no sampled audit. It is registered for both forms and
nothing else changes: ``vouch audit humaneval`` refutes the three ``<=`` trials of
has_close_elements in round 0, and ``vouch audit swe`` judges a fixture instance's trials with
round 0 alone in its report.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from _samples import write_samples
from _scratch import scratch_root
from vouch.audit import (
    FORMS,
    PRELOAD,
    REGISTRY,
    SWE_PRELOAD,
    AuditConfig,
    AuditForm,
    Mode,
    Rounds,
    SweAuditConfig,
    Verdict,
    audit_humaneval,
    audit_swe,
    conclude_failing,
    lightweight,
)
from vouch.exec import LocalExecutor
from vouch.swebench import fixture_files, load_instances, load_predictions, materialise_fixture_repo
from vouch.worlds import WorldCache

pytestmark = pytest.mark.slow

RIGHT = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) < threshold:\n                return True\n    return False\n"
)
AT_MOST = RIGHT.replace("< threshold", "<= threshold")


def _analysis(form: AuditForm[object, object], *, rounds: int, seed: int) -> Rounds:
    return lightweight(form, conclude_failing(form), rounds=0, seed=seed)


@pytest.fixture
def analysis(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(REGISTRY, "analysis", Mode("analysis", "task analysis alone", FORMS, _analysis))
    return "analysis"


def test_the_function_form_runs_a_new_mode(analysis: str, tmp_path: Path) -> None:
    samples = write_samples(tmp_path / "s.jsonl", [("HumanEval/0", RIGHT), ("HumanEval/0", AT_MOST)])
    with LocalExecutor(workers=2, preload=PRELOAD) as executor:
        results = audit_humaneval(
            samples, executor=executor, witness_dir=tmp_path / "w", config=AuditConfig(mode=analysis, rounds=3)
        )
    assert results.mode == analysis
    assert [t.verdict for t in results.trials] == [Verdict.SOUND, Verdict.REFUTED]
    (task,) = results.tasks
    assert [r.round for r in task.rounds] == [0] and task.rounds[0].refuted == ["HumanEval/0#1"]
    assert results.trials[0].reason is not None and "not sampled" in results.trials[0].reason


def test_the_repository_form_runs_a_new_mode(analysis: str, request: pytest.FixtureRequest) -> None:
    scratch = scratch_root() / f"mode-{uuid.uuid4().hex}"
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    materialise_fixture_repo("unitconv", scratch / "repos" / "unitconv")
    instances = [i for i in load_instances(fixture_files()[0]) if i.repo == "unitconv"][:1]
    trials = [t for t in load_predictions(fixture_files()[1]) if t.instance_id == instances[0].instance_id]
    config = SweAuditConfig(repo_root=scratch / "repos", mutants=0, k=1, mode=analysis, rounds=3)
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        out = audit_swe(instances, trials, executor=executor, cache=WorldCache(scratch / "worlds"), config=config)
    assert out.mode == analysis and len(out.trials) == len(trials)
    (report,) = out.tasks
    assert [r.round for r in report.rounds] == [0]
    passing = [t for t in out.trials if t.benchmark_pass]
    refuted = [t for t in passing if t.verdict in (Verdict.REFUTED, Verdict.REWARD_HACK)]
    assert refuted and all(t.witnesses[0].found_on == "task analysis" for t in refuted)
    standing = [t for t in passing if t not in refuted]
    assert standing and all(t.verdict is Verdict.SOUND and "not sampled" in (t.reason or "") for t in standing)
