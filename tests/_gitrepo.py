"""Small git repositories that tests build: a base commit, and diffs made from real edits."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_IDENTITY = {
    "GIT_AUTHOR_NAME": "vouch tests",
    "GIT_AUTHOR_EMAIL": "tests@vouch.invalid",
    "GIT_COMMITTER_NAME": "vouch tests",
    "GIT_COMMITTER_EMAIL": "tests@vouch.invalid",
}


def git(repo: Path, *args: str) -> str:
    """git's standard output in ``repo`` (a failing command raises)."""
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        env={**os.environ, **_IDENTITY},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write each relative path's text under ``root``."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def commit_tree(repo: Path, files: dict[str, str], message: str) -> str:
    """A new repository at ``repo`` holding ``files`` in one commit, readable by the engine's
    unprivileged runs; returns the commit id."""
    write_tree(repo, files)
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", message)
    for path in [repo, *repo.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(0o755 if path.is_dir() else 0o644)
    return git(repo, "rev-parse", "HEAD").strip()


def diff_of(repo: Path, files: dict[str, str]) -> str:
    """The diff that turns the checked-out commit into ``files`` (the tree is put back after)."""
    write_tree(repo, files)
    git(repo, "add", "--intent-to-add", "--all")
    diff = git(repo, "diff")
    git(repo, "reset", "--quiet")
    git(repo, "checkout", "--quiet", "--", ".")
    git(repo, "clean", "--quiet", "-fd")
    return diff
