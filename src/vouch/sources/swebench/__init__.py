"""SWE-bench instances as ``code`` tasks whose candidates are patches (``_tasks``, built by
``_build``): candidate patches (``_cases``, ``_refactor``), the reference verifier run as T0 in a
candidate's world (``_check``) and a harness run directory read as trials (``_rundir``). The
SWE-bench machinery itself (instances, environments, harness, logs) is ``vouch.swebench``'s."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vouch.sources.swebench._build import build_options, build_swebench
    from vouch.sources.swebench._check import run_public, withheld_paths
    from vouch.sources.swebench._rundir import RunDir, StatusDisagreement, compare_tests_status, read_run_dir
    from vouch.sources.swebench._tasks import SwebenchOptions

_NAMES = {
    "SwebenchOptions": "_tasks",
    "build_options": "_build",
    "build_swebench": "_build",
    "run_public": "_check",
    "withheld_paths": "_check",
    "RunDir": "_rundir",
    "StatusDisagreement": "_rundir",
    "compare_tests_status": "_rundir",
    "read_run_dir": "_rundir",
}


def __getattr__(name: str) -> object:
    # The build (and vouch.worlds under it) loads on first use only: a module of this package
    # imported alone, such as a harness run directory's reader, imports none of it.
    if name in _NAMES:
        return getattr(importlib.import_module(f"vouch.sources.swebench.{_NAMES[name]}"), name)
    raise AttributeError(f"module 'vouch.sources.swebench' has no attribute {name!r}")


__all__ = [
    "RunDir",
    "StatusDisagreement",
    "SwebenchOptions",
    "build_options",
    "build_swebench",
    "compare_tests_status",
    "read_run_dir",
    "run_public",
    "withheld_paths",
]
