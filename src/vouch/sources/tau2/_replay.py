"""The tau2 state tasks' harness entry (``replay``) and what their reference verifiers import.

An engine pool that decides tau2 cases pre-imports the module of the tasks' replay entry
(``vouch.bench.preload_for``): importing this one loads the domain databases and tasks once, in
the pool's zygote, so every forked run starts with them (about 1.5 s a run otherwise).
"""

from __future__ import annotations

from vouch.sources.tau2._world import evaluate, replay, run_calls, task_of, warm, well_formed, with_criteria

__all__ = ["evaluate", "replay", "run_calls", "task_of", "well_formed", "with_criteria"]

warm()
