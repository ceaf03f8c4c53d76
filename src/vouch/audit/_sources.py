"""The witness sources: one registry, one contract for both forms of the audit.

A witness source has one implementation per form, each a function over its form's run record
that returns what it found as ``Found`` values (``vouch.audit.Found``: the witnesses, each with
its validation, how the search ended, or why it could not run); the form files them and decides
the verdict:

- ``search(run: SearchRun) -> list[Found]`` (``vouch.audit.Search``): the function form's
  programs to judge, once their evidence is in (T0, coverage, mutants, the differential run on
  the offline pool), one ``Found`` a program, in order;
- ``repo_search(run: RepoSearchRun) -> Found`` (``vouch.audit.RepoSearch``): one passing trial
  of ``vouch audit swe`` with its world and evidence.

Every name users see comes from here: the CLI's ``--witness-source`` choices of both commands
and the errors that list them; ``Witness.origin`` holds the source's name.

Each source declares the modes it serves in each form (``modes``, ``repo_modes``) and the option
it needs (``needs``); ``serves`` is the one check of a source against a mode. Adding a source is
one module with its ``search`` (and, for ``vouch audit swe``, its ``repo_search``) and one line in
``SOURCES``::

    WitnessSource("mine", "what it does", "vouch.audit._mine:search", repo_search="vouch.audit._mine:repo_search"),

Both are named by their import paths, so the registry imports none of them (the agent's
dependencies load only when the agent source runs, the repository form's only in ``vouch audit
swe``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from vouch.errors import UsageError

if TYPE_CHECKING:
    from vouch.audit.function._jobs import Search
    from vouch.audit.repository._model import RepoSearch


@dataclass(frozen=True)
class WitnessSource:
    name: str
    description: str
    search: str
    """``module:function`` of its function form's ``Search``."""
    needs: str | None = None
    """The option it cannot run without, for the usage error."""
    repo_search: str | None = None
    """``module:function`` of its repository form's ``RepoSearch``; None: function level only."""
    modes: tuple[str, ...] | None = ("per-trial",)
    """The function form's modes it serves (``_modes.REGISTRY``); None: every one."""
    repo_modes: tuple[str, ...] | None = ("per-trial",)
    """The repository form's modes it serves; None: every one."""

    def serves(self, mode: str, form: str) -> bool:
        served = self.modes if form == "function" else self.repo_modes
        return served is None or mode in served

    note: str = ""
    """Why it serves no other mode, for the usage error."""
    model: bool = False
    """The auditing model writes its witnesses: it needs ``--agent-model``, asks the model for the
    requirements checklist, and keeps the witnesses beside the model's traces."""
    user_files: bool = False
    """The user's witness files are the witnesses (``--witness-files``): no generated inputs, no
    differential run, every file on every trial."""
    differential: bool = False
    """It searches by differential runs against G on generated inputs or recorded calls (its
    witnesses are written to ``witness_dir`` when one is given; the lightweight mode's task
    analysis varies T0's recorded calls for it)."""

    def load(self) -> Search:
        """The function form's implementation."""
        found: Search = _load(self.search)
        return found

    def load_repo(self) -> RepoSearch:
        """The repository form's implementation.

        Raises:
            UsageError: The source has none.
        """
        found: RepoSearch = _load(repo_source(self.name).repo_search or "")
        return found


def _load(path: str) -> Any:
    module, _, function = path.partition(":")
    return getattr(importlib.import_module(module), function)


SOURCES: dict[str, WitnessSource] = {
    s.name: s
    for s in (
        WitnessSource(
            "offline",
            "differential testing against G on generated inputs inside P's preconditions",
            "vouch.audit.function._trial:offline_search",
            repo_search="vouch.audit.repository._runs:offline_repo_search",
            modes=None,
            repo_modes=None,
            differential=True,
        ),
        WitnessSource(
            "files",
            "pytest files the user supplies",
            "vouch.audit.function._trial:files_search",
            "--witness-files DIR",
            repo_search="vouch.audit.repository._runs:files_repo_search",
            note="it already runs every file on every trial, so there is no sampled trial's witness to share",
            user_files=True,
        ),
        WitnessSource(
            "agent",
            "the auditing model writes witnesses from the checklist and the evidence",
            "vouch.audit.function._agent:agent_search",
            "--agent-model PROVIDER/MODEL",
            repo_search="vouch.audit.repository._agent:agent_repo_search",
            repo_modes=("per-trial", "lightweight"),
            note="the function form's lightweight and static modes share the offline source's witnesses",
            model=True,
        ),
    )
}
"""Every witness source, by name."""


def _repo_names() -> str:
    return ", ".join(name for name, s in SOURCES.items() if s.repo_search is not None)


def source(name: str) -> WitnessSource:
    """The source of a ``--witness-source`` name.

    Raises:
        UsageError: An unknown source (the valid ones are listed).
    """
    if name in SOURCES:
        return SOURCES[name]
    raise UsageError(f"--witness-source {name!r} is not a witness source; valid sources: {', '.join(SOURCES)}")


class Named(Protocol):
    """A mode as a source sees it (``_modes.Mode``, which imports this module): its name."""

    @property
    def name(self) -> str: ...


def serves(name: str, mode: Named, form: str) -> WitnessSource:
    """The source of ``name``, checked to serve ``mode`` in ``form`` ("function" or "repository").

    Raises:
        UsageError: An unknown source, one without that form, or one that does not serve the mode
            (the sources that do are listed).
    """
    found = source(name) if form == "function" else repo_source(name)
    if found.serves(mode.name, form):
        return found
    served = (found.modes if form == "function" else found.repo_modes) or ()
    others = [s.name for s in SOURCES.values() if s.serves(mode.name, form)]
    why = f" ({found.note})" if found.note else ""
    instead = f"use --witness-source {' or '.join(others)} with it" if others else "no witness source serves it"
    raise UsageError(
        f"--witness-source {name} serves --mode {', '.join(served)} in the {form} form, not {mode.name}{why}; "
        + instead
    )


def repo_source(name: str) -> WitnessSource:
    """The source of a ``vouch audit swe --witness-source`` name.

    Raises:
        UsageError: An unknown source, or one without a repository form (the valid ones are listed).
    """
    found = source(name)
    if found.repo_search is None:
        raise UsageError(f"--witness-source {name} has no repository form; vouch audit swe takes {_repo_names()}")
    return found
