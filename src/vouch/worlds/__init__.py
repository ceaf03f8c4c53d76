"""Worlds: a repository snapshot plus zero or one patch, materialised once and cached.

The model world R[s], the reference world R[G] and the null world R of TestJack are
directories under a cache that sandboxed runs can see; tests run in them only through the
engine, with ``vouch.worlds._inrun`` as the in-run entry.
"""

from __future__ import annotations

from vouch.worlds._env import (
    EnvCache,
    EnvFailure,
    Environment,
    EnvRecipe,
    default_env_dir,
    find_python,
    generated_files,
    import_root,
)
from vouch.worlds._files import LinkOutOfWorld, link_out_of_world, link_target, read_world_text
from vouch.worlds._inrun import canon
from vouch.worlds._patch import FileChange, Patch, parse_patch, patch_hash
from vouch.worlds._services import SERVICES, available
from vouch.worlds._world import Unappliable, World, WorldCache, default_cache_dir, git

__all__ = [
    "SERVICES",
    "EnvCache",
    "EnvFailure",
    "EnvRecipe",
    "Environment",
    "FileChange",
    "LinkOutOfWorld",
    "Patch",
    "Unappliable",
    "World",
    "WorldCache",
    "available",
    "canon",
    "default_cache_dir",
    "default_env_dir",
    "find_python",
    "generated_files",
    "git",
    "import_root",
    "link_out_of_world",
    "link_target",
    "parse_patch",
    "patch_hash",
    "read_world_text",
]
