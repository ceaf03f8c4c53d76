"""``vouch report RESULTS.json --html OUT``: one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path

import click

from vouch._json import loads
from vouch.errors import UsageError
from vouch.report import render_html, write_page


@click.command("report")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--html", "html_out", required=True, type=click.Path(dir_okay=False, path_type=Path))
def report(results: Path, html_out: Path) -> None:
    """Render a results file (bench, baselines, v4v, generate, audit) as one self-contained HTML page."""
    try:
        text = results.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"no such results file: {results}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {results}: {exc.strerror or exc}") from None
    data = loads(text, results)
    if not isinstance(data, dict):
        raise UsageError(f"{results} is not a vouch results object")
    try:
        page = render_html(data)
    except UsageError as exc:
        raise UsageError(f"{results}: {exc}") from None
    write_page(page, html_out)
    click.echo(f"wrote {html_out}")
