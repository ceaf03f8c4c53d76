"""``vouch report RESULTS.json --html OUT``: one self-contained HTML file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vouch.errors import UsageError
from vouch.report import write_html


@click.command("report")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--html", "html_out", required=True, type=click.Path(dir_okay=False, path_type=Path))
def report(results: Path, html_out: Path) -> None:
    """Render a results file (bench, baselines, v4v, generate, audit) as one self-contained HTML page."""
    try:
        data = json.loads(results.read_text())
    except FileNotFoundError:
        raise UsageError(f"no such results file: {results}") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {results}: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{results} is not a vouch results object")
    write_html(data, html_out)
    click.echo(f"wrote {html_out}")
