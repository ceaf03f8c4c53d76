"""The ``vouch`` command group and its error handling: one line, a defined exit code."""

from __future__ import annotations

import errno
import sqlite3
import sys

import click

import vouch
from vouch.cli._terminal import shown
from vouch.errors import EXIT_INFRASTRUCTURE, EXIT_USAGE, VouchError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(vouch.__version__, prog_name="vouch")
def cli() -> None:
    """vouch: checks the checkers of agent benchmarks."""


def _register() -> None:
    from vouch.cli._bench import bench
    from vouch.cli._generate import generate_command

    bench.add_command(generate_command)
    from vouch.cli._challenge import challenge_command

    bench.add_command(challenge_command)
    from vouch.cli._data import data
    from vouch.cli._demo import demo
    from vouch.cli._exec import exec_command
    from vouch.cli._report import report
    from vouch.cli._schema import schema_command
    from vouch.cli._v4v import v4v

    cli.add_command(exec_command)
    cli.add_command(demo)
    cli.add_command(data)
    cli.add_command(bench)
    cli.add_command(report)
    cli.add_command(v4v)
    cli.add_command(schema_command)
    from vouch.cli._audit import audit
    from vouch.cli._audit_harbor import harbor_command
    from vouch.cli._audit_inspect import inspect_command
    from vouch.cli._audit_swe import swe

    audit.add_command(swe)
    audit.add_command(inspect_command)
    audit.add_command(harbor_command)
    cli.add_command(audit)
    from vouch.cli._export import export_command

    cli.add_command(export_command)


def main(argv: list[str] | None = None) -> None:
    """Run the command line; never shows a traceback for an expected error."""
    _register()
    try:
        cli.main(args=argv, prog_name="vouch", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("vouch: aborted", err=True)
        sys.exit(EXIT_INFRASTRUCTURE)
    except click.ClickException as exc:
        click.echo(f"vouch: error: {_one_line(exc.format_message())}", err=True)
        sys.exit(EXIT_USAGE)
    except VouchError as exc:
        click.echo(f"vouch: error: {_one_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("vouch: interrupted", err=True)
        sys.exit(130)
    except (OSError, sqlite3.Error) as exc:
        where = _full_disk(exc)
        if where is None:
            raise
        click.echo(
            f"vouch: error: no space left on the device {where}; what was stored before is kept "
            "(each judgement is its own transaction): free space and run the same command to resume",
            err=True,
        )
        sys.exit(EXIT_INFRASTRUCTURE)


def _one_line(message: str) -> str:
    """An error message as one line: messages quote file names and values from input, which may
    hold line breaks."""
    return shown(" ".join(message.split("\n")).replace("\r", " "))


def _full_disk(exc: BaseException) -> str | None:
    """Where a write failed for want of space (``of FILE`` when known), or None for another error.

    SQLite says "database or disk is full" and rolls the failed transaction back."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"of {exc.filename}" if exc.filename else "being written"
    if isinstance(exc, sqlite3.Error) and "disk is full" in str(exc):
        return "holding the store"
    return None
