"""``vouch`` run in the test's process through ``vouch.cli.main``, as the installed command runs it
(importable as ``_cli`` from any test): its exit code and what it printed."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from vouch.cli import main


class Ran(NamedTuple):
    """What one command did."""

    exit_code: int
    output: str
    """Its standard output, then its standard error."""


def run_vouch(capsys: pytest.CaptureFixture[str], *args: str) -> Ran:
    """Run ``vouch ARGS``; a test sets ``COLUMNS`` (``monkeypatch.setenv``) for wide tables."""
    capsys.readouterr()  # what the test printed before is not the command's
    try:
        main(list(args))
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    printed = capsys.readouterr()
    return Ran(code, printed.out + printed.err)
