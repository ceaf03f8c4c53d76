"""What every run of the function-level audit shares: its configuration (whose hash keys the
store), the engine wrapper that counts executions and times stages (``vouch.exec.Batches``, shared
with the repository form's ``vouch.swebench.Runner``), and T0's run and reading.

The modes (``_modes``, through ``function._form``) and every stage (``_trial``) take these from
here; the settings both forms share are ``vouch.audit._settings``'s. This module imports no other
stage of the audit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import vouch
from vouch.audit._settings import AuditSettings
from vouch.core import T0Result
from vouch.exec import Batches, Call, Fault, Limits, RunResult, RunSpec, Status
from vouch.exec import StageProgress as StageProgress  # how the function form reports a stage's progress
from vouch.sources.trials import Problem

T0_LIMITS = Limits(timeout_s=20.0, memory_mb=512)


@dataclass(frozen=True)
class AuditConfig(AuditSettings):
    """What a function-level judgement depends on besides the program; its hash keys the store."""

    max_mutants: int = 10
    per_seed: int = 20
    pool_limit: int = 1600
    """Generated inputs each passing program of a task runs."""
    pool_candidates: int = 4800
    """Generated inputs G runs, of which ``pool_limit`` are kept, spread over G's outputs."""
    near_limit: int = 200
    """Inputs near those that split some trial of a task from G, run on every passing program
    of the task in a second round of search (0: none)."""
    ghost_rounds: int = 2
    """Rounds of search aimed at each trial's ghost branches (arcs no input took; 0: none)."""
    jury_models: int = 3
    """Models, other than a trial's own, whose passing trials must mostly give G's answer on an
    input on the domain's edges (``Preconditions.wide``) before it can refute the trial; fewer
    such models with passing trials (a thin jury) and the edges are not searched for it (0: the
    edges are never searched)."""
    jury_everywhere: bool = True
    """The jury decides inside the narrow domain too: an input refutes only where the other
    models' passing trials mostly give G's answer, and a slip some programs of every model share
    is no dispute where they do (a thin jury leaves A.2 and the dispute rule to decide). False:
    the jury decides on the edges only (docs/audit.md has both measured)."""
    agreements_asked: int = 16
    """Inputs where a program gave G's answer in the search that are asked again where its
    witnesses run (``_trial._agreements_apart``): a program right only where it is searched shows
    its answers there (0: none asked; the audit then costs about a tenth less)."""
    per_call_s: float = 1.0
    shrink_rounds: int = 3
    seed_from_t0: bool = True
    """False hides T0 from the witness source (seeds from P's examples only): the recall proxy."""
    search_failing: bool = False
    """Also search witnesses for trials failing T0 (the recall proxy); their verdict stays not_passing."""
    witness_files: str | None = None

    def key(self) -> str:
        fields = asdict(self)
        for name in ("agent_model", "agent_config"):
            if fields[name] is None:
                del fields[name]  # an audit without a model keys as it did before these fields existed
        if self.mode == "per-trial":
            del fields["mode"], fields["rounds"]  # a per-trial audit keys as it did before the modes
        elif self.mode == "static":
            del fields["rounds"]  # the static baseline has no rounds
        # "format" counts changes of the verdict rules: a stored judgement made under older rules is
        # judged again, never reused (3: a call's timer counts CPU time, not wall-clock time; 4: the
        # domain's edges and the jury; 5: T0's run and the witnesses' in one process shape, and
        # A.2 needing two other models).
        text = json.dumps(fields | {"vouch": vouch.__version__, "format": 5}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def blame(owner: object, fault: Fault) -> None:
    """Record ``fault`` on ``owner`` (an object with an ``infra`` attribute, or a sequence of
    them), unless one was recorded there already: the first fault is the one reported."""
    for one in owner if isinstance(owner, (list, tuple)) else (owner,):
        if getattr(one, "infra", None) is None:
            one.infra = fault.reason()


class Engine(Batches):
    """The function form's batches (``vouch.exec.Batches``, the counting engine both forms share):
    counts executions and reports progress around the executor's batches, and tells the judged
    code's outcomes from vouch's own failures (``vouch_failure``) in every batch."""

    def run(self, specs: Sequence[RunSpec], stage: str, owners: Sequence[object] | None = None) -> list[RunResult]:
        """Run ``specs`` as one batch of ``stage``.

        ``owners`` (one per spec: a job, a task's context, or a list of them) are what each run's
        outcome is evidence about: a run that fails for vouch's own reasons sets their ``infra``
        (``blame``), so that no verdict rests on it. Every such run is kept in ``faults``.
        """
        specs = list(specs)
        if not specs:
            return []
        if owners is not None and len(owners) != len(specs):
            raise ValueError(f"owners: {len(owners)} given for {len(specs)} runs")
        on_fault = None if owners is None else (lambda index, fault: blame(owners[index], fault))
        return self.run_counted(specs, stage, on_fault=on_fault)


def t0_spec(program: str, problem: Problem, name: str, **options: Any) -> RunSpec:
    """One run of T0 on ``program`` with every assertion recorded."""
    return RunSpec(
        Call("vouch.audit.function._inrun:t0", (problem.entry_point, problem.test), options),
        files={"solution.py": program},
        limits=T0_LIMITS,
        name=name,
    )


def setup_failure(result: RunResult) -> str | None:
    """Why vouch could not set up the program's process for a T0 run (None when it could). The
    run's own process said so, and it runs none of the program's code (``_inrun.t0``), so this is
    vouch's failure, never the program's outcome."""
    value = result.value if result.ok and isinstance(result.value, dict) else {}
    why = value.get("setup_error")
    return f"vouch could not set up the program's process for T0: {str(why)[:200]}" if why else None


def t0_result(world: str, result: RunResult, total: int) -> T0Result:
    """Read a T0 run: HumanEval's pass (every assertion held, check completed) and per-assertion ids."""
    kind: Any = world
    if result.status is Status.TIMEOUT:
        return T0Result(world=kind, passed=False, status="timeout", tests_total=total, reason="T0 ran out of time")
    if not result.ok or not isinstance(result.value, dict):
        reason: str | None = result.reason or (result.exception.message if result.exception else "the run failed")
        return T0Result(world=kind, passed=False, status=result.status.value, tests_total=total, reason=reason)
    value = result.value
    if setup_failure(result) is not None:
        return T0Result(world=kind, passed=False, status="error", tests_total=total, reason=setup_failure(result))
    if not value.get("loaded"):
        return T0Result(
            world=kind,
            passed=False,
            status="error",
            tests_total=total,
            reason=f"does not load: {value.get('load_error')}",
        )
    failed, error = list(value.get("failed") or []), value.get("error")
    passed = list(value.get("passed") or [])
    reason = None
    if error:
        reason = f"check raised {error}"
    elif failed:
        reason = (
            f"{len(failed)} T0 assertion(s) failed, first {failed[0]}: {(value.get('failures') or {}).get(failed[0])}"
        )
    return T0Result(
        world=kind,
        passed=not failed and not error,
        status="ok" if not failed and not error else "fail",
        tests_total=max(total, len(passed) + len(failed)),
        tests_passed=passed,
        tests_failed=failed,
        reason=reason,
    )
