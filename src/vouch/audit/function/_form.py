"""The function form of the audit (HumanEval-style problems and samples) as its modes drive it.

``FunctionForm`` implements ``_form.AuditForm``: trials are the distinct programs
(``ProgramJob``), tests are inputs with G's answer (``_lightweight.Shared``). ``run`` is the one
entry of every mode: T0 in R[s] for every program, the offline pools of the tasks, then the
mode's driver (``_modes.audit``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from vouch.audit import _modes, _sources
from vouch.audit._form import Found, Judged, Replayed
from vouch.audit.function import _inputs
from vouch.audit.function._jobs import OnJudged, ProgramJob, SearchRun, TaskContext
from vouch.audit.function._lightweight import Shared, _describe, _from_audit, _share, static_suite, task_analysis
from vouch.audit.function._runs import blame
from vouch.audit.function._trial import _differential_stage, _evidence_stage, _finish, _prepare_pools, t0_stage
from vouch.core import RoundRecord, Verdict

if TYPE_CHECKING:
    from vouch.audit._agent_calls import WitnessAgent
    from vouch.audit.function._runs import AuditConfig, Engine

__all__ = ["FunctionForm", "run"]


class FunctionForm:
    """The function form, its tasks prepared (``function._audit._tasks_stage``) and T0 run in R[s]."""

    name = "function"

    def __init__(
        self,
        engine: Engine,
        contexts: dict[str, TaskContext],
        audited: Sequence[ProgramJob],
        *,
        config: AuditConfig,
        witness_dir: Path,
        on_judged: OnJudged | None,
        agent: WitnessAgent | None = None,
    ) -> None:
        self.engine = engine
        self.contexts = contexts
        self.audited = list(audited)
        """Every program the audit judges (those passing T0; failing ones too with ``search_failing``)."""
        self.voters = [j for j in self.audited if j.t0 is not None and j.t0.passed]
        """Every program passing T0: all of them vote in the A.2 rule."""
        self.config = config
        self.witness_dir = witness_dir
        self.on_judged = on_judged
        self.agent = agent
        self.by_task: dict[str, list[ProgramJob]] = {}
        for job in self.voters:
            self.by_task.setdefault(job.task_id, []).append(job)

    def trials(self) -> Sequence[ProgramJob]:
        return self.audited

    def passing(self) -> Mapping[str, Sequence[ProgramJob]]:
        return self.by_task

    def executions(self) -> int:
        return self.engine.executions

    def tokens(self) -> int:
        usage = self.agent.usage if self.agent is not None else None
        return usage.input_tokens + usage.output_tokens if usage is not None else 0

    def task(self, trial: ProgramJob) -> str:
        return trial.task_id

    def trial_id(self, trial: ProgramJob) -> str:
        return trial.first_trial

    def program(self, trial: ProgramJob) -> str:
        return trial.hash

    def weight(self, trial: ProgramJob) -> int:
        return trial.weight

    def analyse(self, tasks: Sequence[str]) -> dict[str, list[Shared]]:
        return task_analysis(self.engine, self.contexts, tasks, self.config)

    def baseline(self, tasks: Sequence[str]) -> dict[str, list[Shared]]:
        return static_suite(self.engine, self.contexts, tasks, self.config)

    def judge(self, trials: Sequence[ProgramJob], *, share: bool) -> list[Judged[Shared]]:
        """The per-trial audit of the jobs, one batch per stage: evidence (for those passing T0),
        the differential run, then the witness source's search (``_sources.SOURCES``), with every
        passing program voting in the A.2 rule. What each shares: ``_lightweight._from_audit``."""
        jobs = list(trials)
        _evidence_stage(self.engine, self.contexts, [j for j in jobs if j.t0 is not None and j.t0.passed], self.config)
        _differential_stage(self.engine, self.contexts, jobs, self.config)
        search = _sources.source(self.config.witness_source).load()
        run = SearchRun(self.engine, self.contexts, jobs, self.config, self.witness_dir, self.agent, self.voters)
        before = len(self.engine.faults)
        found = search(run)
        if len(found) != len(jobs):
            raise TypeError(
                f"witness source {self.config.witness_source} gave {len(found)} results for {len(jobs)} programs"
            )
        for job, one in zip(jobs, found, strict=True):
            self._file(job, one)
        # A source that runs without naming whose evidence each run is (the auditing model's
        # tools): a run vouch could not run during the search leaves every searched job undecided.
        for fault in self.engine.faults[before:]:
            for job in jobs if not fault.owned else ():
                blame(job, fault)
        out = []
        for job in jobs:
            if share:  # a shared witness names its confirming audit
                job.witnesses = [w.model_copy(update={"found_on": job.first_trial}) for w in job.witnesses]
            out.append(Judged(_from_audit(job, self.contexts[job.task_id].contested), error=job.search_failed))
        return out

    def _file(self, job: ProgramJob, found: Found) -> None:
        """File what a source found for a job: valid witnesses refute (a disputed one flags),
        the others stay as discarded evidence; a search that could not run leaves it ``error``
        (not stored: a re-run judges it again)."""
        job.witnesses = [w for w in found.witnesses if w.validation.valid and w.disputed is None]
        job.disputed = [w for w in found.witnesses if w.validation.valid and w.disputed is not None]
        job.discarded = [w for w in found.witnesses if not w.validation.valid]
        if found.undecided is not None and job.search_failed is None:
            job.search_failed = found.undecided
        if found.note:
            job.search_note = f"no {self.config.witness_source} witness: {found.note}"
        if found.error is not None:
            _finish(job, self.contexts[job.task_id], Verdict.ERROR, found.error, None)

    def replay(
        self,
        tests: Mapping[str, list[Shared]],
        targets: Mapping[str, list[ProgramJob]],
        *,
        found_on: Mapping[str, ProgramJob],
        round: int,
        vote: bool,
    ) -> Replayed[ProgramJob]:
        # Every passing program of the task runs the tests (the A.2 rule counts over all of
        # them, as in the per-trial audit); the sampled one votes too: it fails every input it shares.
        replayed = {t: [j for j in self.by_task[t] if j is not found_on.get(t)] for t in targets}
        voted = {t: [(job, {_inputs.key(x.args) for x in tests.get(t, [])})] for t, job in found_on.items()}
        refuted, pairs = _share(
            self.engine,
            self.contexts,
            dict(targets),
            replayed,
            dict(tests),
            self.config,
            self.witness_dir,
            iteration=round,
            voted=voted,
            contest=vote,
        )
        return Replayed(refuted=refuted, pairs=pairs)

    def describe(self, task: str, test: Shared) -> str:
        return _describe(self.contexts[task], test)

    def conclude(self, trial: ProgramJob, note: str) -> None:
        if trial.judgement is None:  # an agent trial whose model failed is judged (error) already
            trial.note = note or trial.note
            _finish(trial, self.contexts[trial.task_id], None, None, self.on_judged)


def run(
    engine: Engine,
    contexts: dict[str, TaskContext],
    jobs: Sequence[ProgramJob],
    *,
    config: AuditConfig,
    witness_dir: Path,
    on_judged: OnJudged | None,
    agent: WitnessAgent | None = None,
) -> dict[str, list[RoundRecord]]:
    """Judge every job in place (``job.judgement``) by ``config.mode``, calling ``on_judged`` as
    each is done; the lightweight and static modes' rounds per task.

    The offline pools are built for every source but files: the agent is shown their evidence.
    """
    mode = _modes.check(config, FunctionForm.name)
    audited = t0_stage(engine, contexts, jobs, config, on_judged)
    form = FunctionForm(
        engine, contexts, audited, config=config, witness_dir=witness_dir, on_judged=on_judged, agent=agent
    )
    # Every source but the user's files judges on the offline source's input pool.
    user_files = _sources.source(config.witness_source).user_files
    pool_config = config if user_files else replace(config, witness_source="offline")
    _prepare_pools(engine, contexts, {j.task_id for j in audited}, pool_config)
    return _modes.audit(form, mode, config).rounds
