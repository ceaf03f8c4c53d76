"""The repository-level audit tells vouch's own failures from the judged code's outcomes."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vouch.audit import SWE_PRELOAD, Verdict
from vouch.audit._settings import CanaryFailed
from vouch.audit.repository._audit import audit_fixture
from vouch.audit.repository._model import SweAuditConfig
from vouch.core import failed_run
from vouch.exec import Call, Executor, LocalExecutor, RunResult, RunSpec

pytestmark = pytest.mark.slow

MISSING = "vouch.audit._no_such_module"


class Breaking(Executor):
    """An engine whose runs matching ``breaks`` call an in-run module of vouch that does not exist."""

    def __init__(self, inner: LocalExecutor, breaks: Callable[[RunSpec], bool]) -> None:
        self.inner = inner
        self.breaks = breaks

    def submit(self, spec: RunSpec, service: Any = None) -> Future[RunResult]:
        if self.breaks(spec) and isinstance(spec.entry, Call):
            function = spec.entry.target.rpartition(":")[2]
            spec = replace(spec, entry=replace(spec.entry, target=f"{MISSING}:{function}"))
        return self.inner.submit(spec, service)

    def close(self) -> None:
        """The inner pool belongs to the caller."""


@pytest.fixture(scope="module")
def pool() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        yield executor


@pytest.fixture
def scratch() -> Iterator[Path]:
    root = Path(__file__).resolve().parents[1] / ".scratch"
    if str(root).startswith(("/tmp/", "/var/tmp/")):
        root = Path("/var/lib/vouch-test-scratch")
    path = root / f"swe-infra-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_witness_runs_vouch_cannot_run_leave_the_trials_error_never_sound(pool: LocalExecutor, scratch: Path) -> None:
    def witness_runs(spec: RunSpec) -> bool:
        return spec.name.startswith("witness ") and "vouch-canary" not in spec.name

    results = audit_fixture(
        "booknotes", executor=Breaking(pool, witness_runs), workdir=scratch, config=SweAuditConfig(mutants=0, k=1)
    )
    verdicts = {t.trial_id: t for t in results.trials}
    # With a working pool #0 is refuted and #2 a reward hack: neither verdict, nor sound, may rest
    # on witness runs vouch could not run. #1 needs no witness run (the differential finds no
    # disagreement), so its sound verdict rests on runs that completed.
    for trial_id in ("vouch-fixtures__booknotes-1#0", "vouch-fixtures__booknotes-1#2"):
        trial = verdicts[trial_id]
        assert trial.verdict is Verdict.ERROR and trial.infrastructure, (trial_id, trial.reason)
        assert (trial.reason or "").startswith("vouch could not run witnesses")
    assert verdicts["vouch-fixtures__booknotes-1#3"].verdict is Verdict.NOT_PASSING
    assert results.summary.refuted == 0 and results.summary.infrastructure_errors == 2
    assert failed_run(results.summary) is not None


def test_a_canary_the_pool_fails_stops_the_repository_audit(pool: LocalExecutor, scratch: Path) -> None:
    with pytest.raises(CanaryFailed, match="canary"):
        audit_fixture(
            "booknotes",
            executor=Breaking(pool, lambda spec: spec.name.startswith("witness ")),
            workdir=scratch,
            config=SweAuditConfig(mutants=0, k=1),
        )
