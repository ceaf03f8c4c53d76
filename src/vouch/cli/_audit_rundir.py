"""``vouch audit swe --run-dir``: the harness's per-test verdicts beside vouch's run of T0, as printed
(``vouch.audit.run_swe_command`` compares them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from vouch.cli._terminal import escape

__all__ = ["print_comparison"]


def print_comparison(rows: Sequence[dict[str, Any]], console: Console) -> None:
    """One line per instance where the harness and vouch disagree, and the count."""
    differing = [r for r in rows if r["disagreements"]]
    if differing:
        table = Table(title="the harness's tests_status against vouch's run of T0 (R\\[s])")
        for column in ("instance", "harness", "tests that differ"):
            table.add_column(column)
        for r in differing:
            shown = "; ".join(
                f"{d['test']} (harness {d['harness']}, vouch {d['vouch']})" for d in r["disagreements"][:3]
            )
            more = len(r["disagreements"]) - 3
            table.add_row(
                escape(r["instance_id"]),
                "resolved" if r["harness_resolved"] else "not resolved",
                escape(shown + (f"; and {more} more" if more > 0 else "")),
            )
        console.print(table)
    compared = sum(r["vouch_ran_t0"] for r in rows)
    console.print(
        f"tests_status compared on {compared} of {len(rows)} instances: {len(differing)} with a test the harness "
        "and vouch judged differently (flaky or environment-dependent; see --json)"
    )
    not_compared = [r for r in rows if r["not_compared"]]
    if not_compared:
        count = sum(len(r["not_compared"]) for r in not_compared)
        console.print(
            f"{count} tests of {len(not_compared)} instances the harness judged were not compared: vouch skipped "
            "them, or left them out of T0 because they fail with and without G here (listed in --json)"
        )
