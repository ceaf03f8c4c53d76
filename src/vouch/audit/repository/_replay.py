"""Witness files on disk and their replay: ``vouch audit swe --replay FILE``.

A validated witness is written as ``<dir>/<instance_id>/<n>/<file>`` beside a ``replay.json``
holding what rebuilds its two worlds (repository, base commit, gold, test and trial patches).
Replaying rebuilds R[G] and R[s] from the world cache and runs the witness in both through the
engine, as validation did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vouch.audit._validation import REPOSITORY, replayed
from vouch.audit.repository._runs import _WITNESS_DIR, record_witness_run
from vouch.core import RunRecord, Witness
from vouch.errors import UsageError
from vouch.exec import Executor
from vouch.swebench import Runner, SweInstance, SweTrial, WorldEnv
from vouch.worlds import Environment, Patch, Unappliable, World, WorldCache

__all__ = ["ReplayOutcome", "replay_witness", "write_witnesses"]

REPLAY_FILE = "replay.json"


@dataclass(frozen=True)
class ReplayOutcome:
    """A witness re-run: it holds when it passes every time in R[G] and fails every time in R[s]
    by an assertion; vouch could not tell when one of its runs failed for vouch's own reasons."""

    file: Path
    reference: tuple[RunRecord, ...]
    model: tuple[RunRecord, ...]

    @property
    def holds(self) -> bool | None:
        """By the audit's own rule (``_validation.replayed``): True or False; None when the runs
        decide nothing (vouch's own failure, or a run that did not complete)."""
        validation = replayed(self.reference, self.model, REPOSITORY)
        return True if validation.valid else None if not validation.complete else False


def write_witnesses(
    instance: SweInstance,
    source: str,
    trial: SweTrial,
    witnesses: list[Witness],
    directory: Path,
    env: WorldEnv | None = None,
) -> list[Witness]:
    """Write each witness and the trial's replay.json; return the witnesses with their replay command.

    Args:
        instance: The instance (its gold and test patches rebuild R[G]).
        source: The repository as the audit resolved it (path or URL).
        trial: The trial (its patch rebuilds R[s]).
        witnesses: Witnesses to write.
        directory: The root of the witness files.
        env: The instance's environment, when it ran in one (replay runs there again).

    Returns:
        The same witnesses, ``replay`` set to the command that re-runs the written file.
    """
    if not witnesses:
        return witnesses
    folder = directory / instance.instance_id / trial.trial_id.rsplit("#", 1)[-1]
    folder.mkdir(parents=True, exist_ok=True)
    plan: dict[str, Any] = {
        "format_version": 1,
        "trial_id": trial.trial_id,
        "repo": source,
        "base_commit": instance.base_commit,
        "patch": instance.patch,
        "test_patch": instance.test_patch,
        "model_patch": trial.patch,
    }
    if env is not None:
        plan["environment"] = {
            **env.env.record(),
            "harness": list(env.harness),
            "test_files": list(env.test_files),
            "parser": env.parser,
            "services": list(env.services),
        }
    (folder / REPLAY_FILE).write_text(json.dumps(plan, indent=1) + "\n")
    out = []
    for witness in witnesses:
        path = folder / witness.file
        path.write_text(witness.source)
        out.append(witness.model_copy(update={"replay": f"vouch audit swe --replay {path}"}))
    return out


def replay_witness(path: Path, *, executor: Executor, cache: WorldCache, repeats: int = 3) -> ReplayOutcome:
    """Re-run a written witness in R[G] and R[s], ``repeats`` times each, through the engine.

    Raises:
        UsageError: The file or its replay.json is missing or malformed, or a world cannot be built.
    """
    if not path.is_file():
        raise UsageError(f"witness {path}: no such file")
    plan_file = path.parent / REPLAY_FILE
    try:
        plan = json.loads(plan_file.read_text())
        repo, commit = str(plan["repo"]), str(plan["base_commit"])
        gold, tests, model = str(plan["patch"]), str(plan["test_patch"]), str(plan["model_patch"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"witness {path}: {plan_file} is missing or malformed ({exc}); re-run the audit") from None
    test_patch = Patch("test_patch", tests, reset=True)
    worlds: list[World] = []
    for name, patch in (("patch", gold), ("model_patch", model)):
        world = cache.materialise(repo, commit, [Patch(name, patch), test_patch])
        if isinstance(world, Unappliable):
            raise UsageError(f"witness {path}: {world.reason}")
        worlds.append(world)
    runner = Runner(executor)
    if "environment" in plan:
        env = _environment(path, plan["environment"])
        for world in worlds:
            runner.attach(world, env)
    files = {f"{_WITNESS_DIR}/{path.name}": path.read_text()}
    ref_runs, model_runs = runner.witness_runs(worlds, files, repeats, noconftest=True)
    return ReplayOutcome(
        file=path,
        reference=tuple(record_witness_run("reference", r, path.name) for r in ref_runs),
        model=tuple(record_witness_run("model", r, path.name) for r in model_runs),
    )


def _environment(path: Path, data: dict[str, Any]) -> WorldEnv:
    """The environment a witness was validated in, as replay.json names it."""
    try:
        env = Environment.from_record(data)
        world_env = WorldEnv(
            env=env,
            harness=tuple(data["harness"]),
            test_files=tuple(data["test_files"]),
            parser=data.get("parser"),
            services=tuple(data.get("services") or ()),
        )
    except (KeyError, TypeError) as exc:
        raise UsageError(f"witness {path}: its environment entry is malformed ({exc}); re-run the audit") from None
    if not env.python.exists():
        raise UsageError(
            f"witness {path}: environment {env.key} ({env.root}) is gone; "
            "re-run the audit with --environments to build it"
        )
    return world_env
