from __future__ import annotations

import click


@click.group()
def cli() -> None:
    """vouch: checks the checkers of agent benchmarks."""


def main() -> None:
    cli()
