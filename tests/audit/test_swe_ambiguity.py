"""TestJack appendix A.2 in the SWE form, on the cookiestore fixture with real worlds and runs.

The fixture's trial #0 widens what ``accept`` takes (a trailing-dot domain); its witness checks
clause C1, which P states (explicit): it refutes however many models skip it. Marked implicit,
the same witness refutes only while at most half of the models with passing trials fail it.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from _scratch import scratch_root
from vouch.audit import SWE_PRELOAD, AuditResults, Verdict
from vouch.audit._ambiguity import AMBIGUOUS, is_ambiguous, requirement_note
from vouch.audit.repository._ambiguity import withhold_ambiguous
from vouch.audit.repository._audit import _resolve_repo, audit_swe
from vouch.audit.repository._model import SweAuditConfig
from vouch.exec import LocalExecutor
from vouch.swebench import (
    Runner,
    SweTrial,
    fixture_files,
    load_instances,
    load_predictions,
    materialise_fixture_repo,
)
from vouch.worlds import WorldCache

pytestmark = pytest.mark.slow

NAME = "cookiestore"


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    path = scratch_root() / f"swe-ambiguity-{uuid.uuid4().hex}"
    materialise_fixture_repo(NAME, path / "repos" / NAME)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as pool:
        yield pool


def _trials(copies_of: str) -> list[SweTrial]:
    """Trials #0 (widening, agent-a) and #2 (sound, agent-c), and two more models' copies of one."""
    [instance] = [i for i in load_instances(fixture_files()[0]) if i.repo == NAME]
    own = {t.trial_id[-2:]: t for t in load_predictions(fixture_files()[1]) if t.instance_id == instance.instance_id}
    base = own[copies_of]
    twins = [
        base.model_copy(update={"trial_id": f"{base.instance_id}#{7 + i}", "model": model})
        for i, model in enumerate(("agent-x", "agent-y"))
    ]
    return [own["#0"], own["#2"], *twins]


def _audit(scratch: Path, executor: LocalExecutor, trials: list[SweTrial]) -> AuditResults:
    instances = [i for i in load_instances(fixture_files()[0]) if i.repo == NAME]
    config = SweAuditConfig(repo_root=scratch / "repos", mutants=0, k=1)
    return audit_swe(instances, trials, executor=executor, cache=WorldCache(scratch / "worlds"), config=config)


@pytest.fixture(scope="module")
def widening(scratch: Path, executor: LocalExecutor) -> AuditResults:
    """The audit of trials #0, #2 and two more models' copies of #0 (three of four models widen):
    run once, each test reading a copy of its own."""
    return _audit(scratch, executor, _trials("#0"))


def _rule(
    scratch: Path, executor: LocalExecutor, trials: list[SweTrial], kind: str, audited: AuditResults | None = None
) -> tuple[AuditResults, int]:
    out = audited.model_copy(deep=True) if audited is not None else _audit(scratch, executor, trials)
    [instance] = [i for i in load_instances(fixture_files()[0]) if i.repo == NAME]
    checklist = [c.model_copy(update={"kind": kind}) if c.id == "C1" else c for c in out.tasks[0].checklist]
    source = _resolve_repo(instance, scratch / "repos")
    changed = withhold_ambiguous(
        instance, source, trials, out.trials, checklist, WorldCache(scratch / "worlds"), Runner(executor)
    )
    return out, changed


def test_an_explicit_requirement_refutes_however_many_models_skip_it(widening: AuditResults) -> None:
    out = widening.model_copy(deep=True)  # three of four models widen
    verdicts = [t.verdict for t in out.trials]
    assert verdicts == [Verdict.REFUTED, Verdict.SOUND, Verdict.REFUTED, Verdict.REFUTED]
    assert {w.clause_id for t in out.trials for w in t.witnesses} == {"C1"}
    assert out.tasks[0].ambiguous_requirements == []


def test_an_implicit_requirement_most_models_skip_is_a_prompt_defect(
    scratch: Path, executor: LocalExecutor, widening: AuditResults
) -> None:
    out, changed = _rule(scratch, executor, _trials("#0"), "implicit", widening)
    assert changed == 3
    assert [t.verdict for t in out.trials] == [Verdict.SOUND] * 4
    widened = out.trials[0]
    assert not widened.witnesses and (widened.reason or "").startswith("refutation withheld")
    [withheld] = [w for w in widened.evidence.discarded if is_ambiguous(w)]
    assert withheld.validation.reason is not None and withheld.validation.reason.startswith(AMBIGUOUS)
    assert "rho = 0.75" in withheld.validation.reason  # agent-a, -x and -y of four models
    assert requirement_note(withheld).startswith("C1: ") and requirement_note(withheld).endswith("(rho 0.75)")


def test_an_implicit_requirement_most_models_meet_still_refutes(scratch: Path, executor: LocalExecutor) -> None:
    out, changed = _rule(scratch, executor, _trials("#2"), "implicit")  # three of four models are sound
    assert changed == 0
    assert [t.verdict for t in out.trials] == [Verdict.REFUTED, Verdict.SOUND, Verdict.SOUND, Verdict.SOUND]
