"""Materialise worlds: a repository at a commit, plus patches, as a cached git worktree.

A world's key is the hash of the repository source, the commit and each patch's text, so the
reference world R[G] of an instance is built once for all its trials, and a second audit run
finds every world already there. Worlds live under a cache directory that sandboxed runs can
read (never /tmp: it is private in a run). Git runs here on data (trusted tooling); the
repository's own code runs only through the engine.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vouch.errors import InfrastructureError, UsageError
from vouch.exec import expose_to_runs, visible_in_runs
from vouch.worlds._files import leads_out
from vouch.worlds._patch import Patch, parse_patch, patch_hash

__all__ = ["Unappliable", "World", "WorldCache", "default_cache_dir", "git"]

_GIT_TIMEOUT_S = 600
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "vouch",
    "GIT_AUTHOR_EMAIL": "vouch@localhost",
    "GIT_COMMITTER_NAME": "vouch",
    "GIT_COMMITTER_EMAIL": "vouch@localhost",
}


@dataclass(frozen=True)
class World:
    """A materialised world: a directory holding the repository with its patches applied."""

    path: Path
    key: str
    """Content hash of (repository, commit, patches)."""
    commit: str
    patches: tuple[str, ...]
    """Names of the patches applied, in order."""


@dataclass(frozen=True)
class Unappliable:
    """A world that cannot exist: one of its patches does not apply."""

    key: str
    patch: str
    """Name of the patch that failed."""
    reason: str
    """git's own message, first lines."""


def default_cache_dir() -> Path:
    """``$VOUCH_CACHE/worlds`` when set, else ``.vouch/worlds`` under the working directory."""
    base = os.environ.get("VOUCH_CACHE")
    root = Path(base) / "worlds" if base else Path.cwd() / ".vouch" / "worlds"
    return root.resolve()


def git(
    args: Sequence[str],
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git (trusted tooling, on data) with a fixed identity and no prompts.

    Args:
        args: git's arguments.
        cwd: Where to run it.
        stdin: Text fed to git's standard input.
        env: Extra environment variables (e.g. fixed commit dates), applied last.

    Returns:
        The completed process; a failing git is data, never raised.
    """
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | _GIT_ENV | dict(env or {})
    try:
        return subprocess.run(
            ["git", "-c", "safe.directory=*", "-c", "core.autocrlf=false", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        if cwd is not None and not Path(cwd).is_dir():
            raise InfrastructureError(f"git cannot run in {cwd}: the directory is gone") from exc
        raise InfrastructureError("git is not installed; worlds need git on PATH") from exc


def _first_lines(text: str, n: int = 4) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:n]) or "no message"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class WorldCache:
    """Clones repositories and materialises worlds under one directory, safely in parallel.

    Args:
        root: Cache directory; default ``default_cache_dir()``. It must be readable by runs,
            so a path under /tmp, /var/tmp or /dev/shm, or behind a home other users cannot
            search, is refused.
    """

    def __init__(self, root: Path | str | None = None) -> None:
        resolved = Path(root).resolve() if root is not None else default_cache_dir()
        expose_to_runs(resolved)  # runs read their worlds here, in a home a rootless pool covers too
        hidden = visible_in_runs(resolved)
        if hidden is not None:
            raise UsageError(
                f"world cache {str(resolved)!r} cannot be read by runs ({hidden}); "
                "set VOUCH_CACHE or pass a cache directory elsewhere"
            )
        self.root = resolved
        for sub in ("repos", "worlds", "locks"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)  # noqa: S103 - runs (another uid) must read the worlds

    # --- repositories -------------------------------------------------------------------

    def repo(self, source: str, commit: str) -> Path:
        """A clone of ``source`` (local path or git URL) in the cache that holds ``commit``.

        Raises:
            UsageError: The source cannot be cloned, or it has no such commit.
        """
        local = Path(source)
        ident = str(local.resolve()) if local.exists() else source
        name = hashlib.sha256(ident.encode()).hexdigest()[:20]
        clone = self.root / "repos" / name
        with _locked(self.root / "locks" / f"repo-{name}.lock"):
            if not (clone / ".git").exists():
                if clone.exists():
                    shutil.rmtree(clone)
                done = git(["clone", "--quiet", "--no-checkout", ident, str(clone)])
                if done.returncode != 0:
                    raise UsageError(f"repo {source!r} cannot be cloned: {_first_lines(done.stderr)}")
            if not self._has(clone, commit):
                git(["fetch", "--quiet", "origin"], cwd=clone)
            if not self._has(clone, commit):
                raise UsageError(f"repo {source!r} has no commit {commit!r}; check base_commit")
        return clone

    @staticmethod
    def _has(clone: Path, commit: str) -> bool:
        return git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=clone).returncode == 0

    # --- worlds -------------------------------------------------------------------------

    def key(self, source: str, commit: str, patches: Sequence[Patch]) -> str:
        """The content hash naming a world."""
        parts = [commit, *(f"{p.reset}:{patch_hash(p.text)}" for p in patches)]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]

    def materialise(self, source: str, commit: str, patches: Sequence[Patch] = ()) -> World | Unappliable:
        """The world of ``source`` at ``commit`` with ``patches`` applied in order, cached.

        Args:
            source: The repository, a local path or a git URL.
            commit: The base commit.
            patches: Zero or more patches (the trial's or gold patch, then the test patch).

        Returns:
            The World, or Unappliable with git's message when a patch does not apply.

        Raises:
            UsageError: The repository or commit cannot be found.
        """
        key = self.key(source, commit, patches)
        dest = self.root / "worlds" / key
        done_marker = self.root / "worlds" / f"{key}.json"
        names = tuple(p.name for p in patches)
        with _locked(self.root / "locks" / f"world-{key}.lock"):
            cached = self._cached(done_marker, dest, key, commit, names)
            if cached is not None:
                return cached
            clone = self.repo(source, commit)
            with _locked(self.root / "locks" / f"repo-{clone.name}.lock"):
                self._remove(clone, dest)
                # --force twice: a run killed inside an earlier `worktree add` leaves the path
                # registered as missing but locked, which one --force does not override.
                added = git(
                    ["worktree", "add", "--detach", "--force", "--force", "--quiet", str(dest), commit], cwd=clone
                )
            if added.returncode != 0:
                raise InfrastructureError(f"git worktree add for {commit} failed: {_first_lines(added.stderr)}")
            for patch in patches:
                failure = self._apply(dest, commit, patch)
                if failure is not None:
                    with _locked(self.root / "locks" / f"repo-{clone.name}.lock"):
                        self._remove(clone, dest)
                    done_marker.write_text(json.dumps({"unappliable": patch.name, "reason": failure}))
                    return Unappliable(key=key, patch=patch.name, reason=failure)
            done_marker.write_text(json.dumps({"world": str(dest), "commit": commit, "patches": list(names)}))
        return World(path=dest, key=key, commit=commit, patches=names)

    @staticmethod
    def _cached(marker: Path, dest: Path, key: str, commit: str, names: tuple[str, ...]) -> World | Unappliable | None:
        if not marker.exists():
            return None
        try:
            data = json.loads(marker.read_text())
        except (OSError, ValueError):
            return None
        if "unappliable" in data:
            return Unappliable(key=key, patch=str(data["unappliable"]), reason=str(data["reason"]))
        if dest.is_dir():
            return World(path=dest, key=key, commit=commit, patches=names)
        return None

    @staticmethod
    def _remove(clone: Path, dest: Path) -> None:
        if dest.exists():
            git(["worktree", "remove", "--force", str(dest)], cwd=clone)
            if dest.exists():
                shutil.rmtree(dest)
        git(["worktree", "prune"], cwd=clone)

    @staticmethod
    def _apply(dest: Path, commit: str, patch: Patch) -> str | None:
        if not patch.text.strip():
            return None
        if patch.reset:
            for change in parse_patch(patch.text):
                for path in {change.path, change.old_path} - {None}:
                    assert path is not None
                    restored = git(["checkout", commit, "--", path], cwd=dest)
                    # Not in the base commit: the patch creates it (never removed through a link
                    # out of the world that the trial's patch put on the way).
                    inside = not leads_out(dest, os.path.dirname(path) or ".")
                    if restored.returncode != 0 and os.path.lexists(dest / path) and inside:
                        (dest / path).unlink()
        text = patch.text if patch.text.endswith("\n") else patch.text + "\n"
        applied = git(["apply", "--whitespace=nowarn", "-"], cwd=dest, stdin=text)
        if applied.returncode == 0:
            return None
        WorldCache._reset(dest, commit)
        # SWE-bench's harness falls back to GNU patch with fuzz when git apply refuses.
        if shutil.which("patch") is not None:
            fuzzed = subprocess.run(
                ["patch", "--batch", "--fuzz=5", "-p1", "--no-backup-if-mismatch", "-r", "-"],
                cwd=dest,
                input=text,
                capture_output=True,
                text=True,
                check=False,
            )
            if fuzzed.returncode == 0:
                return None
            WorldCache._reset(dest, commit)
        return f"{patch.name} does not apply: {_first_lines(applied.stderr)}"

    @staticmethod
    def _reset(dest: Path, commit: str) -> None:
        git(["checkout", "--force", commit], cwd=dest)
        git(["clean", "-fdq"], cwd=dest)
