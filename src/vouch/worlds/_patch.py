"""Unified diffs as data: which files a patch touches and which new-side lines it writes.

Pure text processing, no git: the audit needs the changed lines of a trial (for ghost branches
and mutation) and the touched paths (for tampering detectors) before any world exists.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

__all__ = ["FileChange", "Patch", "parse_patch", "patch_hash"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Patch:
    """A patch to apply to a world.

    Attributes:
        name: A label for messages, e.g. ``model_patch`` or ``test_patch``.
        text: The unified diff, as ``git apply`` reads it.
        reset: Restore the files it touches to the base commit first (SWE-bench applies its
            test patch this way, so a trial's edits to those test files are overwritten).
    """

    name: str
    text: str
    reset: bool = False


@dataclass(frozen=True)
class FileChange:
    """One file of a unified diff."""

    path: str
    """The path after the patch (the old path for a deleted file)."""
    old_path: str | None
    """The path before the patch; None for a new file."""
    added_lines: frozenset[int] = field(default_factory=frozenset)
    """1-based line numbers, in the new file, of lines the patch adds or rewrites."""
    added_text: tuple[str, ...] = ()
    """The added lines' text, in order."""
    removed_text: tuple[str, ...] = ()
    """The removed lines' text, in order."""
    deleted: bool = False


def patch_hash(text: str) -> str:
    """sha256 of a patch's text (hex): its part of a world's cache key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _strip_prefix(path: str) -> str | None:
    path = path.strip().split("\t", 1)[0]
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


def parse_patch(text: str) -> list[FileChange]:
    """The files of a unified diff (git or plain), with the new-side lines each hunk adds.

    Args:
        text: A unified diff.

    Returns:
        One FileChange per file section, in diff order; empty for an empty or unparsable text.
    """
    changes: list[FileChange] = []
    old: str | None = None
    new: str | None = None
    added: set[int] = set()
    added_text: list[str] = []
    removed_text: list[str] = []
    in_file = False
    line_no = 0

    def flush() -> None:
        if in_file and (new is not None or old is not None):
            path = new if new is not None else old
            assert path is not None
            changes.append(
                FileChange(
                    path=path,
                    old_path=old,
                    added_lines=frozenset(added),
                    added_text=tuple(added_text),
                    removed_text=tuple(removed_text),
                    deleted=new is None,
                )
            )

    for raw in text.splitlines():
        if raw.startswith("diff --git "):
            flush()
            in_file, old, new = False, None, None
            added, added_text, removed_text = set(), [], []
            continue
        if raw.startswith("--- ") and not (in_file and line_no):
            if in_file:
                flush()
                added, added_text, removed_text = set(), [], []
            old = _strip_prefix(raw[4:])
            in_file, line_no = True, 0
            continue
        if raw.startswith("+++ ") and in_file and not line_no:
            new = _strip_prefix(raw[4:])
            continue
        match = _HUNK.match(raw)
        if match and in_file:
            line_no = int(match.group(3))
            continue
        if not in_file or not line_no:
            continue
        if raw.startswith("+"):
            added.add(line_no)
            added_text.append(raw[1:])
            line_no += 1
        elif raw.startswith("-"):
            removed_text.append(raw[1:])
        elif raw.startswith(" ") or raw == "":
            line_no += 1
        elif raw.startswith("\\"):
            continue
        else:  # the next file's header in a plain diff
            line_no = 0
    flush()
    return changes
