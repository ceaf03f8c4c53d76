"""Sealed pools: where verifiers under test and a verifier-writing agent's code run.

Some benchmarks keep their answers as code: AgentDojo's task classes hold ``ground_truth()`` and
``utility()``, and a state task's replay must import that package to run the tools. A run of
untrusted code that could import it could call the task's own check. So untrusted code runs in
a *sealed* pool, which never imports those packages and hides their directories from every run;
the replays (harness code on the candidate's calls, which are data) go to a second pool that
has the benchmark warm, and only their JSON snapshots reach the sealed run, over the service
channel.

``SealedExecutor`` does the routing: a run whose entry is one of the tasks' replay entries goes
to the replay pool as it is; every other run goes to the sealed pool with the sealed directories
added to its hidden paths. Code that decides cases asks ``executor.sealed`` to know whether the
states of a state task come from a replay inside the verifier's run (trusted reference
verifiers, fast) or over the service channel (everything else).
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from vouch.bench._decide import PRELOAD, Task, preload_for
from vouch.exec import Call, Executor, LocalExecutor, RunResult, RunSpec
from vouch.sources import SOURCES

SEALED_PACKAGES = tuple(package for entry in SOURCES.values() for package in entry.sealed_packages)
"""Installed benchmarks whose answers are code that their replay imports (each source's
``sealed_packages``)."""


def sealed_paths() -> list[str]:
    """The directories of the sources' ``sealed_packages`` that are installed (hidden from sealed runs)."""
    found = []
    for package in (p for entry in SOURCES.values() for p in entry.sealed_packages):
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            found.append(str(Path(location).resolve()))
    return found


class SealedExecutor(Executor):
    """Untrusted runs to a pool that cannot import the sealed packages; replays to one that can.

    Args:
        runs: The pool for untrusted code. It must not pre-import a sealed package (the modules
            of a fork's parent are there in every run, hidden directory or not).
        replays: The pool for the tasks' replay entries.
        replay_entries: The ``module:function`` targets of those entries.
        hidden: Added to every run of ``runs`` (default: ``sealed_paths()``).
    """

    name = "sealed"
    sealed = True

    def __init__(
        self,
        runs: Executor,
        replays: Executor,
        replay_entries: Sequence[str],
        hidden: Sequence[str] | None = None,
    ) -> None:
        self.runs = runs
        self.replays = replays
        self.replay_entries = frozenset(replay_entries)
        self.hidden = tuple(sealed_paths() if hidden is None else hidden)

    def is_replay(self, spec: RunSpec) -> bool:
        return isinstance(spec.entry, Call) and spec.entry.target in self.replay_entries

    def submit(self, spec: RunSpec, service: Any = None) -> Future[RunResult]:
        if self.is_replay(spec):
            return self.replays.submit(spec, service)
        merged = tuple(sorted({*spec.hidden, *self.hidden}))
        return self.runs.submit(dataclasses.replace(spec, hidden=merged), service)

    def close(self) -> None:
        self.runs.close()
        self.replays.close()


def sealed_executor(
    tasks: Sequence[Task],
    *,
    allow_weak: bool = False,
    preload: Sequence[str] = (),
    workers: int | None = None,
) -> SealedExecutor:
    """Pools for untrusted code on ``tasks``: a sealed pool (``PRELOAD`` plus ``preload``) and,
    started only when a run needs it, a replay pool warmed as ``preload_for(tasks)``."""
    entries = sorted({t.spec.replay for t in tasks if t.spec.replay})
    runs = LocalExecutor(workers=workers, preload=[*PRELOAD, *preload], allow_weak=allow_weak)
    replays = LocalExecutor(workers=workers, preload=preload_for(tasks), allow_weak=allow_weak, warm_pytest=False)
    return SealedExecutor(runs, replays, entries)
