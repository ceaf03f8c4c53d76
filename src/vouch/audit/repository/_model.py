"""The repository form's records: its settings, what one instance's trials share, a trial passing
T0, and what a witness source's search gets and is (``RepoSearchRun``, ``RepoSearch``; what it
gives, ``Found``, is the one record of both forms, ``vouch.audit._form``).

A leaf of the repository form: every stage imports its types from here, and this module imports
no stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vouch.audit._agent_calls import WitnessAgent
from vouch.audit._form import Found
from vouch.audit._settings import AuditSettings
from vouch.audit.repository._witness import Candidate, Probe
from vouch.core import Evidence, T0Result, TaskReport
from vouch.exec import RunResult
from vouch.swebench import Runner, SweInstance, SweTrial, WorldEnv
from vouch.worlds import FileChange, World

__all__ = ["Instance", "PassingTrial", "RegressionSuite", "RepoSearch", "RepoSearchRun", "SweAuditConfig"]


@dataclass(frozen=True)
class SweAuditConfig(AuditSettings):
    """Settings of one SWE audit run (recorded in the results' ``config``): the shared settings
    (witness source, k, repeats, seed, mode, rounds, the auditing model) and the repository form's."""

    witness_files: Path | None = None
    """For ``files``: a directory with ``<instance_id>/test_*.py``."""
    repo_root: Path | None = None
    """Where an instance's ``repo`` that is a bare name lives (``<repo_root>/<repo>``)."""
    mutants: int = 8
    """Mutants of the trial's changed lines run under T0."""
    timeout_s: float = 120.0
    """Wall-clock limit of one run (a T0 suite in a world)."""
    witness_dir: Path | None = None
    """Where validated witnesses are written for replay (``<dir>/<instance_id>/<n>/``); None: not written
    (the agent source writes them, with its traces, under ``.vouch/swe-witnesses``)."""
    regression_files: int = 8
    """The repository's own test files beyond T0 that the regression stage runs (nearest the
    changed modules by the import graph first); 0 turns the stage off."""
    gold_mutants: int = 8
    """Mutants of the gold patch's added lines the regression stage runs under T0 and under the
    related tests (what T0 misses of G, and what the repository's tests add); 0: none."""

    def to_dict(self) -> dict[str, Any]:
        """The settings a per-trial judgement depends on; mode and rounds are recorded beside them
        (and key the store only in lightweight mode, so per-trial keys stay as they were)."""
        return {
            "witness_source": self.witness_source,
            "witness_files": str(self.witness_files) if self.witness_files else None,
            "repo_root": str(self.repo_root) if self.repo_root else None,
            "k": self.k,
            "repeats": self.repeats,
            "mutants": self.mutants,
            "seed": self.seed,
            "timeout_s": self.timeout_s,
            "witness_dir": str(self.witness_dir) if self.witness_dir else None,
            "regression_files": self.regression_files,
            "gold_mutants": self.gold_mutants,
            "agent_model": self.agent_model,
            "agent_config": self.agent_config,
        }


@dataclass
class RegressionSuite:
    """The repository's own tests beyond T0 that reach the changed code, as R[G] and R ran them
    (``repository._regression``)."""

    files: list[str]
    """The related test files run, nearest the changed modules first."""
    kept: list[str] = field(default_factory=list)
    """Ids passing in R[G] and in R: what a trial must still pass."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Tests not kept, counted by why."""
    incomplete: list[str] = field(default_factory=list)
    """Runs of the related files that did not complete, with why."""
    uncollected: dict[str, str] = field(default_factory=dict)
    """Related files pytest could not collect in R[G], with the error (an import the environment
    lacks): none of their tests is kept."""
    replaced: int = 0
    """The next related files run in place of those (once; at most as many)."""
    probes: int = 0
    """Probes the suite's calls into the changed modules added to the differential."""
    gold_mutants: int = 0
    """Mutants of the gold patch's added lines run under T0 in R[G]."""
    gold_survivors: int = 0
    """Of them, those T0 does not kill."""
    gold_killed: int = 0
    """Of those, the ones a kept related test kills."""
    gold_missed: list[str] = field(default_factory=list)
    """The mutants T0 lets through, as ``path:line edit``: what T0 does not check of G."""
    killers: list[str] = field(default_factory=list)
    """The kept tests that kill a mutant of G that T0 lets through."""
    gold_probed: int = 0
    """Of the mutants T0 lets through, the ones on which a probe (T0's calls, the suite's, their
    variations) answers otherwise than G."""
    probe_killers: list[Candidate] = field(default_factory=list)
    """Those probes, one a mutant: G's answer expected, the mutant's as the actual one, and the
    mutant's edit in ``notes``."""
    census: str = ""
    """One line on the stage for each trial's ``evidence.steps``."""


@dataclass
class Instance:
    """What one instance's trials share."""

    spec: SweInstance
    source: str
    reference: World | None = None
    null: World | None = None
    report: TaskReport | None = None
    t0_reference: T0Result | None = None
    t0_null: T0Result | None = None
    probes: list[tuple[Probe, dict[str, Any]]] = field(default_factory=list)
    """Inputs on which R[G] returned, with its result."""
    asked: dict[str, tuple[Probe, dict[str, Any]]] = field(default_factory=dict)
    """Per offline witness (by its text), the probe it asks and R[G]'s outcome there: the A.2 vote
    asks each voter that probe as the differential asks it too (``_ambiguity.withhold_ambiguous``)."""
    env: WorldEnv | None = None
    """The instance's environment (real repositories); None: the pool's own interpreter."""
    env_error: str | None = None
    """Why the instance has no environment, when one was asked for."""
    t0_excluded: list[str] = field(default_factory=list)
    """PASS_TO_PASS ids failing in both R[G] and R here (network, paths): left out of T0."""
    recorded_literals: list[str] = field(default_factory=list)
    calls_skipped: dict[str, int] = field(default_factory=dict)
    """Per target, T0's calls the recorder could not rebuild (so never probed): the reach's limit."""
    regression: RegressionSuite | None = None
    """The regression stage's related tests (None: the stage did not run)."""
    infra: str | None = None
    """Why vouch could not finish a run of the instance's own (T0 in R[G] or R, recording T0's
    calls, R[G] on the probes): its trials passing T0 are then error, never sound."""


@dataclass
class PassingTrial:
    """A trial whose world passes T0: what the rest of its audit starts from."""

    trial: SweTrial
    world: World
    changes: list[FileChange]
    """The files the trial changes, debris left out."""
    t0: list[str]
    run: RunResult
    """T0's run in R[s] (its coverage of ``changes`` feeds the ghost branches)."""
    evidence: Evidence
    """Worlds, T0, checklist and detector flags so far."""
    program: str
    """The patch's hash."""


@dataclass
class RepoSearchRun:
    """What a source's repository-form search gets: one passing trial, its world and evidence."""

    inst: Instance
    trial: SweTrial
    world: World
    evidence: Evidence
    runner: Runner
    config: SweAuditConfig
    agent: WitnessAgent | None


class RepoSearch(Protocol):
    def __call__(self, run: RepoSearchRun) -> Found:
        """What the search found for ``run.trial``: its witnesses, each validated
        (``_runs._validate``; only valid ones refute), and how the search ended."""
        ...
