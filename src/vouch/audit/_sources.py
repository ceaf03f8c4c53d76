"""The function-level witness sources: one registry, one protocol.

A witness source is a ``search`` function that takes the audited programs once their evidence
is in (T0, coverage, mutants, the differential run on the offline pool) and files witnesses
under each job (``job.witnesses`` / ``job.discarded``). Every name users see comes from here:
the CLI's ``--witness-source`` choices, ``Witness.origin``, and the errors that list them.

Adding a source is one module with its ``search`` and one line in ``SOURCES``::

    WitnessSource("mine", "what it does", "vouch.audit._mine:search"),

The search is named by its import path, so the registry imports none of them (and the agent's
dependencies load only when the agent source runs).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from vouch.errors import UsageError

if TYPE_CHECKING:
    from vouch.audit._agent_calls import WitnessAgent
    from vouch.audit._runs import AuditConfig, Engine
    from vouch.audit._trial import OnJudged, ProgramJob, TaskContext


@dataclass
class SearchRun:
    """What a source's search gets: the engine, the tasks, the jobs to judge and the run's settings."""

    engine: Engine
    contexts: dict[str, TaskContext]
    jobs: Sequence[ProgramJob]
    config: AuditConfig
    witness_dir: Path
    agent: WitnessAgent | None
    on_judged: OnJudged | None


class Search(Protocol):
    def __call__(self, run: SearchRun) -> OnJudged | None:
        """File witnesses under ``run.jobs``; the ``on_judged`` to finish the rest with."""
        ...


@dataclass(frozen=True)
class WitnessSource:
    name: str
    description: str
    search: str
    """``module:function`` of its ``Search``."""
    needs: str | None = None
    """The option it cannot run without, for the usage error."""

    def load(self) -> Search:
        module, _, function = self.search.partition(":")
        found: Search = getattr(importlib.import_module(module), function)
        return found


SOURCES: dict[str, WitnessSource] = {
    s.name: s
    for s in (
        WitnessSource(
            "offline",
            "differential testing against G on generated inputs inside P's preconditions",
            "vouch.audit._trial:offline_search",
        ),
        WitnessSource(
            "files", "pytest files the user supplies", "vouch.audit._trial:files_search", "--witness-files DIR"
        ),
        WitnessSource(
            "agent",
            "the auditing model writes witnesses from the checklist and the evidence",
            "vouch.audit._agent_witness:agent_search",
            "--agent-model PROVIDER/MODEL",
        ),
    )
}
"""Every witness source, by name."""


def source(name: str) -> WitnessSource:
    """The source of a ``--witness-source`` name.

    Raises:
        UsageError: An unknown source (the valid ones are listed).
    """
    if name in SOURCES:
        return SOURCES[name]
    raise UsageError(f"--witness-source {name!r} is not a witness source; valid sources: {', '.join(SOURCES)}")
