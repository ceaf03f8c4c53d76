"""``--executor`` and ``--address``: where a command's runs happen (this machine, or a Ray cluster)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

EXECUTORS = ("local", "ray")


def executor_options(command: F) -> F:
    """``--executor local|ray`` (passed as ``executor_kind``) and ``--address HOST:PORT``."""
    command = click.option(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="The Ray head's address (as `ray start --head` prints it), with --executor ray; "
        "without it, Ray starts on this machine.",
    )(command)
    return click.option(
        "--executor",
        "executor_kind",
        type=click.Choice(EXECUTORS),
        default="local",
        show_default=True,
        help="Where runs happen: a pool on this machine, or one pool per node of a Ray cluster "
        "(pip install 'vouch[ray]'; docs/ray.md).",
    )(command)
