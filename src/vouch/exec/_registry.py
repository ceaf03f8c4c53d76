"""Executors by name: ``local`` (this machine's pool) and ``ray`` (one pool per node of a Ray
cluster, imported on first use: its extra may be missing)."""

from __future__ import annotations

import importlib
from typing import Any

from vouch.errors import UsageError
from vouch.exec._executor import Executor, LocalExecutor

_EXECUTORS: dict[str, type[Executor] | str] = {"local": LocalExecutor, "ray": "vouch.exec._ray:RayExecutor"}
"""Name -> class, or ``module:class`` for one imported on first use (its extra may be missing)."""


def _executor_class(name: str) -> type[Executor]:
    try:
        entry = _EXECUTORS[name]
    except KeyError:
        raise UsageError(f"unknown executor {name!r}; valid executors: {', '.join(sorted(_EXECUTORS))}") from None
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        cls: type[Executor] = getattr(importlib.import_module(module), attribute)
        return cls
    return entry


def get_executor(name: str = "local", **options: Any) -> Executor:
    """An executor by name; an unknown name lists the valid ones."""
    return _executor_class(name)(**options)


def make_executor(kind: str = "local", address: str | None = None, **options: Any) -> Executor:
    """The executor a command asked for, with ``LocalExecutor``'s options for its pools.

    ``kind`` is ``local`` (this machine) or ``ray`` (one pool per node of the Ray cluster at
    ``address``; None starts a Ray instance here). Ray connects at once: an address that does
    not answer raises ClusterUnavailable before any run.
    """
    if kind == "ray":
        options["address"] = address
    elif address is not None:
        raise UsageError(f"--address {address!r} is for --executor ray, not {kind!r}")
    return get_executor(kind, **options)


def check_executor(kind: str = "local", address: str | None = None) -> None:
    """Fail now, in one line, when ``kind`` cannot run: an unknown name, a missing extra, an
    address that does not answer. Commands call it before they open anything."""
    if kind != "ray" and address is not None:
        raise UsageError(f"--address {address!r} is for --executor ray, not {kind!r}")
    _executor_class(kind)
    if kind == "ray":
        from vouch.exec._ray import connect

        connect(address)
