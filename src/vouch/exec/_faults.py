"""Which failed runs are vouch's own: the engine's or vouch's install, never the judged code's.

A run's outcome is the judged code's (``ok``, ``error``, ``timeout``, ``memory``, ``killed``)
unless the engine says otherwise or vouch's own modules could not load in the run: then it is
a ``Fault``, reported as vouch's failure and never as a verdict about the code.

vouch's failure is concluded from vouch's evidence, never from the run's words: a status only
the engine gives, a run with no process, or an import failure the run reports while the pool
knows (``RunResult.judged``) that no judged code had run yet. The same report from a run where
judged code may have run is that code's outcome, however well it names vouch's modules: the
code can raise it, or write the whole result record (its nonce is on the harness's stack).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vouch.core import VOUCH_FAILED
from vouch.exec._spec import RunResult

__all__ = ["Fault", "vouch_failure"]

_CODE_STATUSES = frozenset({"ok", "error", "timeout", "memory", "killed"})
"""Statuses that say how the run's code ended. Any other status the engine reports (a sandbox
that could not be set up, a run the pool lost) is the engine's own failure."""
_VOUCH_IMPORT = re.compile(r"No module named '?vouch[.'\s]|cannot import name .{1,80} from '?vouch[.'\s]")
_IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")


def vouch_failure(result: RunResult) -> str | None:
    """Why a run failed for vouch's own reasons; None when its outcome is the judged code's.

    Vouch's own: a status that is not one a run's code can end with (the sandbox or the pool
    failed), a run the pool lost before it started a process (no pid), and an import error that
    escaped to the harness and names one of vouch's modules (its in-run entry, or what that entry
    imports, could not be loaded: vouch is not importable where the run looks for it), reported
    by a run in which no judged code had run (``RunResult.judged`` is False). What the judged
    code does (fail, raise, hang, get killed, exhaust its memory, say that vouch failed) is
    never matched.
    """
    status = result.status.value
    if status not in _CODE_STATUSES:
        return f"the engine reported {status}: {result.reason or 'no reason given'}"
    if result.ok:
        return None
    if result.pid <= 0:
        return f"the pool lost the run before it started ({result.reason or status})"
    if result.judged:
        return None  # whatever the run reports now may be the judged code's words
    exception = result.exception
    if exception is not None and exception.type in _IMPORT_ERRORS and _VOUCH_IMPORT.search(exception.message):
        return f"vouch's own module did not import in the run ({exception.type}: {exception.message[:200]})"
    if status == "error" and _VOUCH_IMPORT.search(result.reason or ""):
        return f"vouch's own module did not import in the run ({(result.reason or '')[:240]})"
    return None


@dataclass(frozen=True)
class Fault:
    """A run that failed for vouch's own reasons (``vouch_failure``)."""

    stage: str
    run: str
    """The run's name (``RunSpec.name``)."""
    why: str
    owned: bool = True
    """The batch named whose evidence the run was (``Engine.run``'s ``owners``)."""

    def reason(self) -> str:
        """One line for the verdict of a trial the fault leaves undecided."""
        return f"{VOUCH_FAILED} {self.stage} ({self.run}): {self.why}"[:400]
