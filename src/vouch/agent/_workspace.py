"""The public materials of a task, as the agent sees them, and nothing else.

The public set is ``task.toml`` without the harness's replay fields, ``instruction.md`` and the
regular files below ``environment/``. Every path the agent names is looked up in that set; a
path that is absolute, climbs with ``..``, is a symlink, or resolves outside ``environment/``
is not in it. ``reference/``, ``cases/`` and the rest of the tasks root never are.

``HidingExecutor`` does the same for runs: every run a tool starts (a replay, a self-test, the
candidate runs a verifier's ``env.call`` asks for, the challenger's) gets the agent's hidden paths.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import tomllib
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from vouch.bench import Task
from vouch.core import dump_task_spec
from vouch.exec import Executor, RunResult, RunSpec

MAX_FILE_BYTES = 2_000_000
_HARNESS_FIELDS = ("replay", "replay_args")


@dataclass(frozen=True)
class PublicFile:
    """One public file: its path as the agent names it and where it lives."""

    name: str
    path: Path | None
    """None for ``task.toml``, whose public text is built, not read."""
    size: int


def public_task_toml(task: Task) -> str:
    """``task.toml`` minus the fields only the harness needs (how replays are run)."""
    data = tomllib.loads(dump_task_spec(task.spec))
    for key in _HARNESS_FIELDS:
        data.pop(key, None)
    return tomli_w.dumps(data)


class Workspace:
    """The public files of one task; ``read`` and ``listing`` never leave them."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self._toml = public_task_toml(task)
        self.files: dict[str, PublicFile] = {"task.toml": PublicFile("task.toml", None, len(self._toml))}
        instruction = task.root / "instruction.md"
        if instruction.is_file() and not instruction.is_symlink():
            self.files["instruction.md"] = PublicFile("instruction.md", instruction, instruction.stat().st_size)
        env = (task.root / "environment").resolve()
        if env.is_dir() and not (task.root / "environment").is_symlink():
            for dirpath, dirnames, filenames in os.walk(env, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
                for filename in sorted(filenames):
                    path = Path(dirpath) / filename
                    # A symlink could point at reference/ or cases/: left out, whatever its target.
                    if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(env):
                        continue
                    name = "environment/" + path.relative_to(env).as_posix()
                    self.files[name] = PublicFile(name, path, path.stat().st_size)

    def resolve(self, name: str) -> PublicFile | None:
        """The public file the agent means by ``name``, or None when it names no public file."""
        if not isinstance(name, str) or not name or "\0" in name or name.startswith(("/", "~")):
            return None
        normal = posixpath.normpath(name.strip().removeprefix("./"))
        if normal.startswith("..") or "/../" in f"/{normal}/":
            return None
        return self.files.get(normal)

    def listing(self, directory: str = "") -> list[str]:
        """Public file names, all or those under ``directory``."""
        prefix = posixpath.normpath(directory).strip("/") if directory not in ("", ".", "/") else ""
        if prefix.startswith(".."):
            return []
        return [n for n in self.files if not prefix or n == prefix or n.startswith(prefix + "/")]

    def text(self, name: str) -> str | None:
        """The text of a public file, or None when ``name`` is not one."""
        entry = self.resolve(name)
        if entry is None:
            return None
        if entry.path is None:
            return self._toml
        with entry.path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES)
        return data.decode("utf-8", errors="replace")

    def run_files(self) -> dict[str, str]:
        """Every public file, for a run's working directory (under ``task/``)."""
        out = {}
        for name in self.files:
            text = self.text(name)
            if text is not None:
                out[f"task/{name}"] = text
        return out


class HidingExecutor(Executor):
    """Delegates to another executor, adding hidden paths to every run (nested ones included)."""

    name = "hiding"

    def __init__(self, inner: Executor, hidden: tuple[str, ...]) -> None:
        self.inner = inner
        self.hidden = hidden
        self.sealed = inner.sealed  # follows the executor it wraps

    def submit(self, spec: RunSpec, service: Any = None) -> Future[RunResult]:
        merged = tuple(sorted({*spec.hidden, *self.hidden}))
        return self.inner.submit(dataclasses.replace(spec, hidden=merged), service)

    def close(self) -> None:
        """The inner executor belongs to the caller: nothing to close here."""
