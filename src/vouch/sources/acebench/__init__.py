"""ACEBench's English normal and special categories as ``tool_call`` tasks (``_source``), their
hidden cases (``_cases``) and ACEBench's checking rules as the reference verifier (``_verifier``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vouch.sources.acebench._source import IRRELEVANT, NORMAL

_SOURCE_NAMES = ("IRRELEVANT", "NORMAL")


def __getattr__(name: str) -> object:
    # The builder loads on first use only, as the source registry loads it: ``_cases`` and
    # ``_verifier`` imported alone import nothing of it.
    if name in _SOURCE_NAMES:
        from vouch.sources.acebench import _source

        return getattr(_source, name)
    raise AttributeError(f"module 'vouch.sources.acebench' has no attribute {name!r}")


__all__ = ["IRRELEVANT", "NORMAL"]
