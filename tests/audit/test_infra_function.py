"""The function-level audit tells vouch's own failures from the judged code's outcomes.

A pool whose runs cannot import vouch's own modules (as when vouch is installed where runs do not
see it) judges nothing: the canary stops the command with one line, and a pool that breaks after
the canary leaves every trial it touched ``error`` (vouch's own), never ``sound``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vouch.audit import PRELOAD, AuditConfig, Verdict, audit_humaneval
from vouch.audit._settings import CanaryFailed
from vouch.audit.function._audit import judgement_key
from vouch.audit.function._witness import judge
from vouch.core import RunRecord, failed_run
from vouch.exec import Call, Executor, LocalExecutor, RunResult, RunSpec, vouch_failure
from vouch.sources.trials import load_problems
from vouch.store import AuditStore

pytestmark = pytest.mark.slow

PROBLEMS = load_problems()
NON_STRICT = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)
MISSING = "vouch.audit._no_such_module"


class Breaking(Executor):
    """An engine whose runs matching ``breaks`` call an in-run module of vouch that does not
    exist: each such run raises ``ModuleNotFoundError: No module named 'vouch.audit...'``."""

    def __init__(self, inner: LocalExecutor, breaks: Callable[[RunSpec], bool]) -> None:
        self.inner = inner
        self.breaks = breaks

    def _broken(self, spec: RunSpec) -> RunSpec:
        if not self.breaks(spec) or not isinstance(spec.entry, Call):
            return spec
        function = spec.entry.target.rpartition(":")[2]
        return replace(spec, entry=replace(spec.entry, target=f"{MISSING}:{function}"))

    def submit(self, spec: RunSpec, service: Any = None) -> Future[RunResult]:
        return self.inner.submit(self._broken(spec), service)

    def close(self) -> None:
        """The inner pool belongs to the caller."""


def _witness_runs(spec: RunSpec) -> bool:
    return isinstance(spec.entry, Call) and spec.entry.target.endswith(":run_witness") and "canary" not in spec.name


@pytest.fixture(scope="module")
def pool() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as executor:
        yield executor


def _samples(tmp_path: Path) -> Path:
    path = tmp_path / "samples.jsonl"
    rows = [("HumanEval/0", NON_STRICT), ("HumanEval/0", PROBLEMS["HumanEval/0"].canonical_solution)]
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    return path


def test_a_vouch_import_error_in_a_run_is_vouchs_failure(pool: LocalExecutor) -> None:
    spec = RunSpec(Call(f"{MISSING}:run_witness", ("x.py",)), name="broken")
    (result,) = pool.run_batch([spec])
    assert vouch_failure(result) is not None and "No module named" in (vouch_failure(result) or "")
    (own,) = pool.run_batch([RunSpec(Call("solution.py:f"), files={"solution.py": "import vouch_nope\n"})])
    assert own.exception is not None and vouch_failure(own) is None  # the judged code's own import


def test_validation_runs_vouch_cannot_run_leave_the_trials_error_never_sound(
    pool: LocalExecutor, tmp_path: Path, visible_tmp: Path
) -> None:
    store = AuditStore(tmp_path / "store.sqlite")
    config = AuditConfig(k=1, pool_limit=400, pool_candidates=1600, near_limit=0, ghost_rounds=0)
    results = audit_humaneval(
        _samples(tmp_path),
        executor=Breaking(pool, _witness_runs),
        store=store,
        witness_dir=visible_tmp / "w",
        problems=PROBLEMS,
        config=config,
    )
    wrong = results.trials[0]
    assert wrong.benchmark_pass and wrong.verdict is Verdict.ERROR and wrong.infrastructure
    assert "vouch could not run validation" in (wrong.reason or "")
    assert results.summary.infrastructure_errors >= 1 and results.summary.refuted == 0
    assert failed_run(results.summary) is not None
    # Nothing vouch could not decide is stored: a re-run with a working pool judges it. The
    # lookup is the run's own (its configuration, and the key it stores a program under), and
    # the other trial, which the breakage did not touch, is there under the same lookup.
    right = results.trials[1]
    assert right.verdict is Verdict.SOUND and not right.infrastructure
    keys = [("HumanEval/0", judgement_key(t.program_hash or "", PROBLEMS["HumanEval/0"])) for t in (wrong, right)]
    assert set(store.get_many(config.key(), keys)) == {keys[1]}
    store.close()


def test_a_canary_the_pool_fails_stops_the_audit_before_any_verdict(pool: LocalExecutor, tmp_path: Path) -> None:
    with pytest.raises(CanaryFailed, match="canary"):
        audit_humaneval(
            _samples(tmp_path),
            executor=Breaking(pool, lambda spec: spec.entry.target.endswith(":run_witness")),  # type: ignore[union-attr]
            problems=PROBLEMS,
        )


def test_a_witness_that_passes_on_g_and_does_not_complete_in_the_trial_leaves_it_undecided() -> None:
    reference = [RunRecord(world="reference", outcome="pass") for _ in range(3)]
    stopped = [RunRecord(world="model", outcome="timeout", message="wall-clock timeout") for _ in range(3)]
    killed = [RunRecord(world="model", outcome="error", exception="RunError", message="killed by SIGKILL")] * 3
    for model in (stopped, killed):
        validation = judge(reference, model, None)
        assert not validation.valid and not validation.complete
    decided = judge(reference, [RunRecord(world="model", outcome="pass")] * 3, None)
    assert not decided.valid and decided.complete
