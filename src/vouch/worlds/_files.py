"""Reading a world's files on the host without leaving the world.

A world holds a patch vouch did not write: a patch can add a file as a symbolic link to any path
of the host (``.env`` -> ``/root/.env``). Runs read worlds inside the sandbox, as an unprivileged
user; vouch itself reads them on the host (mutants, ghost branches, the census, witness records),
as root when it runs as root. Every such read goes through here: a path whose resolution leaves
the world is refused before anything is opened, and the last component is opened with
``O_NOFOLLOW``, so the file read is the one that was checked.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path

__all__ = ["LinkOutOfWorld", "leads_out", "link_out_of_world", "link_target", "read_world_text"]


class LinkOutOfWorld(OSError):
    """A path of a world that leads out of it through a symbolic link (an ``OSError``, so that a
    caller that reads "what is there, else nothing" treats it as an unreadable file)."""


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip("/") + "/")


def leads_out(root: Path | str, path: str) -> bool:
    """Whether ``path`` (relative to the world ``root``, existing or not) resolves outside it."""
    base = os.path.realpath(root)
    return not _inside(base, os.path.realpath(os.path.join(base, path)))


def read_world_text(root: Path | str, path: str) -> str:
    """The text of ``path`` (relative to the world ``root``), never through a link out of it.

    Args:
        root: The world's directory.
        path: A path relative to it.

    Returns:
        The file's text (UTF-8).

    Raises:
        LinkOutOfWorld: ``path`` resolves outside ``root`` (a link, or ``..``).
        OSError: The file cannot be opened (missing, a directory, a link that changed).
        UnicodeDecodeError: It is not UTF-8 text.
    """
    target = os.path.realpath(os.path.join(os.path.realpath(root), path))
    if leads_out(root, path):
        raise LinkOutOfWorld(f"{path} leads out of the world")
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = handle.read()
    return data.decode("utf-8")


def link_target(path: str, target: str) -> str | None:
    """Where a link at ``path`` (relative to a world's root) pointing at ``target`` leads when
    that is outside the world: the target as written; None when it stays inside."""
    if not target or posixpath.isabs(target) or target.startswith("~"):
        return target or None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return target if joined == ".." or joined.startswith("../") else None


def link_out_of_world(root: Path | str, path: str) -> str | None:
    """Where ``path`` of the world ``root`` leads when a link takes it out of the world (the link's
    target as written, else the resolved path); None when it stays inside or does not exist."""
    base = os.path.realpath(root)
    full = os.path.join(base, path)
    if not os.path.lexists(full):
        return None
    if _inside(base, os.path.realpath(full)):
        return None
    return os.readlink(full) if os.path.islink(full) else os.path.realpath(full)
