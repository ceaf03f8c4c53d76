"""Harbor job directories, read as JSON: trials, their rewards, and the tasks they attempted.

A harbor job (``harbor jobs start``, harbor 0.25) writes ``<jobs_dir>/<job_name>/`` holding
``config.json`` (the job's config), ``result.json`` (its stats) and one directory per trial,
``<trial_name>/``, with ``config.json``, ``result.json`` (harbor's ``TrialResult``:
``trial_name``, ``task_name``, ``task_id`` (``{"path"}`` for a local task, ``{"git_url",
"git_commit_id", "path"}`` or ``{"org", "name", "ref"}``), ``agent_info`` (``name``,
``version``, ``model_info``: ``{"name", "provider"}``), ``verifier_result``: ``{"rewards":
{"reward": 1.0}}``, ``exception_info``), and the ``agent/``, ``verifier/`` and ``artifacts/``
directories mounted into its container. vouch reads the JSON; it never imports harbor (which
needs Python 3.12).

Mapping onto TestJack's terms: a trial *passes* when its verifier reward is positive (the
``reward`` key, else the only key; with several keys and no ``reward``, every one must be
positive). A task directory (``instruction.md``, ``task.toml``, ``environment/``, ``tests/``,
``solution/``) gives P = ``instruction.md``, T0 = ``tests/`` (``test.sh`` and what it runs), G =
``solution/`` (``solve.sh``). Harbor's SWE-bench adapter writes the instance itself into
``tests/config.json`` (the dataset row: ``repo``, ``base_commit``, ``patch``, ``test_patch``,
``FAIL_TO_PASS``, ``PASS_TO_PASS``, ...): such a task is a Python repository vouch builds worlds
for, and its passing trials are audited as SWE-bench trials once the agent's changes are at hand
as a diff. Harbor keeps no diff of the container by itself; vouch takes one ``*.diff`` or
``*.patch`` file the trial kept in ``artifacts/``, ``verifier/`` or ``agent/`` (for example a
``git diff > /logs/artifacts/patch.diff`` in the task's ``tests/test.sh`` before it applies the
test patch).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from vouch._json import BAD_JSON, why_not_json
from vouch.errors import UsageError
from vouch.swebench import SweInstance, SweTrial

__all__ = ["HarborJob", "HarborTask", "HarborTrial", "SweRows", "prediction_lines", "read_job", "read_task", "swe_rows"]

_RESULT = "result.json"
_PATCH_DIRS = ("artifacts", "verifier", "agent")
_PATCH_NAMES = ("patch.diff", "model.patch", "model_patch.diff", "agent.patch", "changes.diff")


@dataclass(frozen=True)
class HarborTask:
    """A harbor task directory, mapped onto P, T0 and G."""

    name: str
    path: Path
    instruction: str
    """P: ``instruction.md``."""
    tests: list[str]
    """T0: the files of ``tests/`` (relative paths)."""
    solution: list[str]
    """G: the files of ``solution/`` (relative paths)."""
    swe_instance: SweInstance | None
    """The SWE-bench instance in ``tests/config.json``, when the task came from harbor's SWE-bench adapter."""

    @property
    def kind(self) -> str:
        return "swe-bench" if self.swe_instance is not None else "other"


@dataclass(frozen=True)
class HarborTrial:
    """One trial of a harbor job and what vouch can do with it."""

    trial_name: str
    task_name: str
    agent: str
    model: str
    rewards: dict[str, float]
    reward: float | None
    passing: bool
    exception: str | None
    """``exception_info`` of the trial, one line, when harbor recorded one."""
    task: HarborTask | None
    patch_file: str | None
    """The diff the trial kept (relative to the trial directory), if one was found."""
    audit: bool
    """vouch would audit it: passing, a SWE-bench task, and the agent's diff at hand."""
    why_not: str | None


@dataclass(frozen=True)
class HarborJob:
    path: Path
    job_name: str
    trials: list[HarborTrial]
    patches: dict[str, str]
    """The audited trials' diffs by trial name."""


def _object(file: Path) -> dict[str, Any]:
    try:
        body = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{file}: cannot be read ({exc.strerror}); give a harbor job directory") from None
    except BAD_JSON as exc:  # also not UTF-8, too deep, too many digits
        raise UsageError(f"{file}: not JSON ({why_not_json(exc)}); give a harbor job directory") from None
    if not isinstance(body, dict):
        raise UsageError(f"{file}: a JSON object was expected, got {type(body).__name__}")
    return body


def _text(file: Path, body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{file}: {key!r} is {value!r}; a harbor trial result names its {key}")
    return value


def _reward(file: Path, body: dict[str, Any]) -> tuple[dict[str, float], float | None]:
    verifier = body.get("verifier_result")
    if verifier is None:
        return {}, None
    if not isinstance(verifier, dict):
        raise UsageError(f"{file}: 'verifier_result' is {type(verifier).__name__}, not an object")
    rewards = verifier.get("rewards") or {}
    if not isinstance(rewards, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in rewards.values()
    ):
        raise UsageError(f"{file}: verifier_result.rewards must map names to numbers, got {rewards!r}")
    values = {str(k): float(v) for k, v in rewards.items()}
    if not values:
        return values, None
    if "reward" in values:
        return values, values["reward"]
    return values, min(values.values())


def read_task(path: Path, name: str) -> HarborTask:
    """Read a harbor task directory.

    Raises:
        UsageError: No ``instruction.md``, or a ``tests/config.json`` that is not JSON.
    """
    instruction = path / "instruction.md"
    if not instruction.is_file():
        raise UsageError(f"task {name}: {path} has no instruction.md; is it a harbor task directory?")

    def files(sub: str) -> list[str]:
        root = path / sub
        return sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file()) if root.is_dir() else []

    instance = None
    config = path / "tests" / "config.json"
    if config.is_file():
        try:
            instance = SweInstance.model_validate(_object(config))
        except ValidationError:
            instance = None  # some other benchmark's config: the task is not a SWE-bench instance
    return HarborTask(
        name=name,
        path=path,
        instruction=instruction.read_text(encoding="utf-8", errors="replace"),
        tests=files("tests"),
        solution=files("solution"),
        swe_instance=instance,
    )


def _task_dir(body: dict[str, Any], task_name: str, tasks: Path | None, job: Path) -> Path | None:
    """Where the trial's task is: under ``--tasks`` by name, else the local path harbor recorded."""
    task_id = body.get("task_id") if isinstance(body.get("task_id"), dict) else {}
    assert isinstance(task_id, dict)
    if tasks is not None:
        candidates = [tasks / task_name, tasks / task_name.split("/")[-1]]
        if isinstance(task_id.get("path"), str):
            candidates += [tasks / task_id["path"], tasks / Path(task_id["path"]).name]
        return next((c for c in candidates if (c / "instruction.md").is_file()), None)
    if isinstance(task_id.get("path"), str) and "git_url" not in task_id:
        local = Path(task_id["path"]).expanduser()
        for candidate in (local, job.parent / local, job.parent.parent / local):
            if (candidate / "instruction.md").is_file():
                return candidate
    return None


def _find_patch(trial_dir: Path) -> tuple[Path | None, str | None]:
    found = [
        f
        for sub in _PATCH_DIRS
        if (trial_dir / sub).is_dir()
        for f in sorted((trial_dir / sub).rglob("*"))
        if f.is_file() and f.suffix in (".diff", ".patch")
    ]
    if not found:
        return None, (
            "no diff of the agent's changes in artifacts/, verifier/ or agent/ (harbor keeps none by itself: "
            "collect one, e.g. git diff > /logs/artifacts/patch.diff)"
        )
    named = [f for f in found if f.name in _PATCH_NAMES]
    if len(found) > 1 and len(named) != 1:
        listed = ", ".join(str(f.relative_to(trial_dir)) for f in found[:4])
        return None, f"several diffs and none named patch.diff: {listed}"
    return (named or found)[0], None


def read_job(path: Path, tasks: Path | None = None) -> HarborJob:
    """Read a harbor job directory: every trial, its reward, its task, and whether vouch would audit it.

    Args:
        path: ``<jobs_dir>/<job_name>``.
        tasks: Where the task directories are, by task name (default: the local path each trial recorded).

    Returns:
        The trials in trial-name order.

    Raises:
        UsageError: Not a directory, no trial results in it, or a trial ``result.json`` of
            another shape (one line naming the file and the field).
    """
    if not path.is_dir():
        raise UsageError(f"{path}: no such directory; give a harbor job directory (<jobs_dir>/<job_name>)")
    if tasks is not None and not tasks.is_dir():
        raise UsageError(f"--tasks {tasks}: no such directory; give the directory holding the job's task directories")
    trial_dirs = sorted(d for d in path.iterdir() if d.is_dir() and (d / _RESULT).is_file())
    if not trial_dirs:
        hint = " (it is a trial directory: give its parent, the job)" if (path / _RESULT).is_file() else ""
        raise UsageError(f"{path}: no <trial>/result.json under it; give a harbor job directory{hint}")
    job_name = path.name
    if (path / "config.json").is_file():
        name = _object(path / "config.json").get("job_name")
        job_name = name if isinstance(name, str) and name else job_name
    trials: list[HarborTrial] = []
    patches: dict[str, str] = {}
    seen_tasks: dict[Path, HarborTask] = {}
    for trial_dir in trial_dirs:
        file = trial_dir / _RESULT
        body = _object(file)
        trial_name, task_name = _text(file, body, "trial_name"), _text(file, body, "task_name")
        agent_info = body.get("agent_info") if isinstance(body.get("agent_info"), dict) else {}
        assert isinstance(agent_info, dict)
        model_info = agent_info.get("model_info") if isinstance(agent_info.get("model_info"), dict) else {}
        assert isinstance(model_info, dict)
        agent = str(agent_info.get("name") or "unknown")
        model = str(model_info.get("name") or agent)
        rewards, reward = _reward(file, body)
        exception = body.get("exception_info")
        exception_line = None
        if isinstance(exception, dict):
            exception_line = f"{exception.get('exception_type')}: {str(exception.get('exception_message'))[:200]}"
        task_path = _task_dir(body, task_name, tasks, path)
        task = None
        if task_path is not None:
            task = seen_tasks.get(task_path) or read_task(task_path, task_name)
            seen_tasks[task_path] = task
        passing = reward is not None and reward > 0
        patch_file, why_not = None, None
        if not passing:
            why_not = "not passing (no verifier reward)" if reward is None else f"not passing (reward {reward:g})"
        elif task is None:
            why_not = f"task {task_name} not found (pass --tasks DIR holding <task_name>/instruction.md)"
        elif task.swe_instance is None:
            why_not = "not a SWE-bench task (tests/config.json holds no instance): vouch has no world for it yet"
        else:
            found, why_not = _find_patch(trial_dir)
            if found is not None:
                patch_file = str(found.relative_to(trial_dir))
                patches[trial_name] = found.read_text(encoding="utf-8", errors="replace")
        trials.append(
            HarborTrial(
                trial_name=trial_name,
                task_name=task_name,
                agent=agent,
                model=model,
                rewards=rewards,
                reward=reward,
                passing=passing,
                exception=exception_line,
                task=task,
                patch_file=patch_file,
                audit=why_not is None,
                why_not=why_not,
            )
        )
    return HarborJob(path=path, job_name=job_name, trials=trials, patches=patches)


class SweRows(NamedTuple):
    instances: list[SweInstance]
    trials: list[SweTrial]
    names: dict[str, str]
    """The harbor trial name of each SWE trial id."""


def swe_rows(job: HarborJob) -> SweRows:
    """The audited trials as SWE-bench instances and trials (``harness_resolved``: the reward passed).

    Trials of one task are numbered ``<instance_id>#<n>`` in trial-name order, as
    ``vouch audit swe`` numbers the predictions it reads.
    """
    instances: dict[str, SweInstance] = {}
    trials: list[SweTrial] = []
    names: dict[str, str] = {}
    counters: dict[str, int] = {}
    for trial in job.trials:
        if not trial.audit or trial.task is None or trial.task.swe_instance is None:
            continue
        instance = trial.task.swe_instance
        instances.setdefault(instance.instance_id, instance)
        n = counters.get(instance.instance_id, 0)
        counters[instance.instance_id] = n + 1
        names[f"{instance.instance_id}#{n}"] = trial.trial_name
        trials.append(
            SweTrial(
                trial_id=f"{instance.instance_id}#{n}",
                instance_id=instance.instance_id,
                model=trial.model,
                patch=job.patches[trial.trial_name],
                harness_resolved=trial.passing,
            )
        )
    return SweRows(list(instances.values()), trials, names)


def prediction_lines(trials: Sequence[SweTrial]) -> list[dict[str, Any]]:
    """Predictions JSONL rows (SWE-bench's fields, plus ``resolved``) for ``vouch audit swe``."""
    return [
        {
            "instance_id": t.instance_id,
            "model_name_or_path": t.model,
            "model_patch": t.patch,
            "resolved": t.harness_resolved,
        }
        for t in trials
    ]
