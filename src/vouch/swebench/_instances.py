"""SWE-bench-format instances and predictions, and the repository fixtures bundled with vouch.

Instances JSONL has SWE-bench's fields (``instance_id, repo, base_commit, problem_statement,
patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS``; the two test lists may be JSON-encoded strings,
as SWE-bench ships them); predictions JSONL has ``instance_id, model_name_or_path,
model_patch``. A bad line is one error naming ``file:line`` and the field. Trials are numbered
per instance in file order: ``<instance_id>#<n>``.

The fixtures under ``vouch/data/swe`` are small multi-file libraries written for vouch, each
stored as a plain directory tree (``.py`` files as ``.py.txt``, so that vouch's own mypy, ruff
and pytest never take the fixture for vouch code); ``materialise_fixture_repo`` turns one into a git repository
with a deterministic commit, so the ``base_commit`` of the bundled instances is stable.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from vouch._json import BAD_JSON, why_not_json
from vouch.errors import InfrastructureError, UsageError

__all__ = [
    "FIXTURES",
    "SweInstance",
    "SweTrial",
    "fixture_dir",
    "fixture_files",
    "load_instances",
    "load_predictions",
    "materialise_fixture_repo",
]

FIXTURES = ("booknotes", "cookiestore", "unitconv")
"""The bundled fixture repositories (``vouch/data/swe/repos/<name>``)."""

_STORED_SUFFIX = ".txt"
"""Python files of a fixture tree are stored as ``<name>.py.txt`` and restored when built."""
_FIXED_DATE = "2026-01-01T00:00:00+00:00"
_FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "vouch fixtures",
    "GIT_AUTHOR_EMAIL": "fixtures@vouch.invalid",
    "GIT_COMMITTER_NAME": "vouch fixtures",
    "GIT_COMMITTER_EMAIL": "fixtures@vouch.invalid",
    "GIT_AUTHOR_DATE": _FIXED_DATE,
    "GIT_COMMITTER_DATE": _FIXED_DATE,
}


class SweInstance(BaseModel):
    """One SWE-bench task instance."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    instance_id: str = Field(min_length=1, description="Unique id of the instance.")
    repo: str = Field(min_length=1, description="The repository: a local path, a git URL, or a name under --repo-root.")
    base_commit: str = Field(min_length=4, description="The commit the patches apply to.")
    problem_statement: str = Field(description="The task specification P (the issue text).")
    patch: str = Field(min_length=1, description="The gold patch G (unified diff).")
    test_patch: str = Field(description="The patch adding the official tests (unified diff).")
    fail_to_pass: list[str] = Field(alias="FAIL_TO_PASS", description="T0 tests that G makes pass.")
    pass_to_pass: list[str] = Field(alias="PASS_TO_PASS", description="T0 tests that must keep passing.")
    version: str | None = Field(
        default=None, description="The repo version whose environment spec applies (SWE-bench's field)."
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, (int, float)) else value

    @field_validator("fail_to_pass", "pass_to_pass", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except BAD_JSON as exc:
                raise ValueError(f"a JSON-encoded list of test ids was expected ({why_not_json(exc)})") from None
        return value

    @property
    def t0(self) -> list[str]:
        """T0: FAIL_TO_PASS then PASS_TO_PASS, without repeats."""
        return list(dict.fromkeys([*self.fail_to_pass, *self.pass_to_pass]))


class SweTrial(BaseModel):
    """One prediction: an agent's patch for an instance."""

    model_config = ConfigDict(extra="forbid")

    trial_id: str = Field(description="<instance_id>#<n>, n counting the instance's predictions from 0.")
    instance_id: str = Field(description="The instance it attempts.")
    model: str = Field(description="model_name_or_path of the prediction.")
    patch: str = Field(description="model_patch: the trial's unified diff (may be empty).")
    harness_resolved: bool | None = Field(
        default=None, description="The benchmark harness's own verdict, when the predictions carry one (resolved)."
    )


class _Prediction(BaseModel):
    model_config = ConfigDict(extra="ignore")

    instance_id: str = Field(min_length=1)
    model_name_or_path: str = Field(min_length=1)
    model_patch: str | None
    resolved: bool | None = None


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise UsageError(f"{path}: no such file; pass an existing JSONL file")
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except BAD_JSON as exc:  # also not UTF-8, too deep, too many digits
                raise UsageError(
                    f"{path}:{number}: not JSON ({why_not_json(exc)}); each line must be one object"
                ) from None
            if not isinstance(row, dict):
                raise UsageError(f"{path}:{number}: a JSON object was expected, got {type(row).__name__}")
            yield number, row


def _field_error(path: Path, number: int, exc: ValidationError) -> UsageError:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "<line>"
    return UsageError(f"{path}:{number}: field {field!r}: {first['msg']}")


def load_instances(path: Path | str) -> list[SweInstance]:
    """Read and validate an instances JSONL file.

    Args:
        path: The file.

    Returns:
        The instances in file order.

    Raises:
        UsageError: A line that is not an object, a missing or ill-typed field, a duplicate id
            (one line, naming file:line and the field).
    """
    path = Path(path)
    out: list[SweInstance] = []
    seen: dict[str, int] = {}
    for number, row in _rows(path):
        try:
            instance = SweInstance.model_validate(row)
        except ValidationError as exc:
            raise _field_error(path, number, exc) from None
        if instance.instance_id in seen:
            first = seen[instance.instance_id]
            raise UsageError(f"{path}:{number}: field 'instance_id': {instance.instance_id!r} repeats line {first}")
        if not instance.fail_to_pass and not instance.pass_to_pass:
            raise UsageError(f"{path}:{number}: field 'FAIL_TO_PASS': T0 is empty; an instance needs official tests")
        seen[instance.instance_id] = number
        out.append(instance)
    if not out:
        raise UsageError(f"{path}: no instances; the file is empty")
    return out


def load_predictions(path: Path | str, instances: list[SweInstance] | None = None) -> list[SweTrial]:
    """Read and validate a predictions JSONL file into trials.

    Args:
        path: The file.
        instances: When given, every prediction must name one of them.

    Returns:
        Trials in file order, ``trial_id`` = ``<instance_id>#<n>``.

    Raises:
        UsageError: A bad line, a missing field, or an unknown instance_id (file:line, field).
    """
    path = Path(path)
    known = None if instances is None else {i.instance_id for i in instances}
    counters: dict[str, int] = {}
    out: list[SweTrial] = []
    for number, row in _rows(path):
        try:
            prediction = _Prediction.model_validate(row)
        except ValidationError as exc:
            raise _field_error(path, number, exc) from None
        if known is not None and prediction.instance_id not in known:
            raise UsageError(
                f"{path}:{number}: field 'instance_id': {prediction.instance_id!r} is not in the instances file"
            )
        n = counters.get(prediction.instance_id, 0)
        counters[prediction.instance_id] = n + 1
        out.append(
            SweTrial(
                trial_id=f"{prediction.instance_id}#{n}",
                instance_id=prediction.instance_id,
                model=prediction.model_name_or_path,
                patch=prediction.model_patch or "",
                harness_resolved=prediction.resolved,
            )
        )
    if not out:
        raise UsageError(f"{path}: no predictions; the file is empty")
    return out


def load_agents(paths: Sequence[Path | str], instances: list[SweInstance] | None = None) -> list[SweTrial]:
    """The trials of several predictions files (one per agent, say) as one run.

    Each file is read and validated as ``load_predictions`` reads it; trial ids are numbered per
    instance across the files in order (``<instance_id>#<n>``), so two agents' trials of one
    instance stay apart while each keeps its ``model``.

    Raises:
        UsageError: No file, or a file ``load_predictions`` refuses.
    """
    if not paths:
        raise UsageError("give at least one predictions file")
    counters: dict[str, int] = {}
    out: list[SweTrial] = []
    for path in paths:
        for trial in load_predictions(path, instances):
            n = counters.get(trial.instance_id, 0)
            counters[trial.instance_id] = n + 1
            out.append(trial.model_copy(update={"trial_id": f"{trial.instance_id}#{n}"}))
    return out


# --- bundled fixtures -----------------------------------------------------------------


def fixture_dir() -> Path:
    """The directory of the bundled SWE fixtures (instances.jsonl, predictions.jsonl, repos/)."""
    return Path(str(resources.files("vouch") / "data" / "swe"))


def fixture_files() -> tuple[Path, Path]:
    """Paths of the bundled instances and predictions files."""
    base = fixture_dir()
    return base / "instances.jsonl", base / "predictions.jsonl"


def materialise_fixture_repo(name: str, dest: Path | str) -> str:
    """Build a bundled fixture as a git repository at ``dest`` with one deterministic commit.

    Author, committer, dates and file modes are fixed, so the commit id is the same on every
    machine and matches ``base_commit`` in the bundled instances file.

    Args:
        name: One of ``FIXTURES``.
        dest: A directory that does not exist yet (or is empty).

    Returns:
        The commit id.

    Raises:
        UsageError: An unknown fixture name, or a non-empty ``dest``.
    """
    from vouch.worlds import git

    if name not in FIXTURES:
        raise UsageError(f"fixture={name!r} is unknown; choose one of {', '.join(FIXTURES)}")
    source = fixture_dir() / "repos" / name
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise UsageError(f"{dest} is not empty; give a new directory for fixture {name!r}")
    shutil.copytree(source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for root, _, files in os.walk(dest):
        os.chmod(root, 0o755)  # noqa: S103 - runs (another uid) read the repository
        for file in files:
            path = os.path.join(root, file)
            if file.endswith(".py" + _STORED_SUFFIX):
                # Stored as *.py.txt so that vouch's own linters and tests leave the fixture alone.
                restored = path[: -len(_STORED_SUFFIX)]
                os.replace(path, restored)
                path = restored
            os.chmod(path, 0o644)
    for step in (["init", "--quiet", "--initial-branch=main"], ["add", "--all"], ["commit", "--quiet", "-m", name]):
        done = git(["-c", "commit.gpgsign=false", *step], cwd=dest, env=_FIXED_IDENTITY)
        if done.returncode != 0:
            raise InfrastructureError(f"git {step[0]} failed for fixture {name!r}: {done.stderr.strip()[:300]}")
    return git(["rev-parse", "HEAD"], cwd=dest).stdout.strip()
