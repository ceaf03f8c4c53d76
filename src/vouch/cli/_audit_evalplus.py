"""EvalPlus's verdicts beside vouch's, after ``vouch audit humaneval --evalplus-results FILE``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from vouch.audit import AuditResults
from vouch.cli._terminal import escape
from vouch.sources.trials import Labelled, evalplus_comparison

__all__ = ["report_evalplus"]

_SHOWN = 20
"""Rows listed after a run (disagreements and findings first); every row goes to --json."""


def report_evalplus(labelled: Labelled, path: Path, results: AuditResults, console: Console) -> dict[str, Any]:
    """Print EvalPlus's base/plus verdicts beside vouch's T0 run and verdict; return them for the results file."""
    rows = evalplus_comparison(labelled.labels, results.trials)
    interesting = [r for r in rows if not r["base_agrees"] or r["finding"]]
    shown = rows if len(rows) <= _SHOWN else interesting[:_SHOWN]
    if shown:
        table = Table(title="EvalPlus beside vouch" + ("" if shown is rows else " (disagreements and findings)"))
        for column in ("trial", "base", "plus", "vouch T0", "verdict", "finding"):
            table.add_column(column)
        for r in shown:
            mark = "" if r["base_agrees"] else " [red](differs)[/red]"
            table.add_row(
                escape(r["trial_id"]),
                escape(r["base_status"]),
                escape(r["plus_status"] or "-"),
                ("pass" if r["vouch_t0_passed"] else "fail") + mark,
                r["verdict"],
                r["finding"] or "",
            )
        console.print(table)
    count = {k: sum(r["finding"] == k for r in rows) for k in ("plus_only", "vouch_only", "both")}
    differ = [r["trial_id"] for r in rows if not r["base_agrees"]]
    console.print(
        f"EvalPlus labels {len(labelled.labels)} trials ({len(rows)} audited here): base tests and vouch's T0 "
        f"differ on {len(differ)}; HumanEval+ alone rejects {count['plus_only']} trials vouch judged sound, "
        f"vouch alone refutes {count['vouch_only']}, both reject {count['both']}"
    )
    if labelled.unmatched_entries or labelled.unlabelled_trials:
        console.print(
            f"{len(labelled.unmatched_entries)} EvalPlus entries match no trial's program, "
            f"{len(labelled.unlabelled_trials)} trials have no EvalPlus entry (see --json)"
        )
    return {
        "results": str(path),
        "labelled": len(labelled.labels),
        "unmatched_entries": labelled.unmatched_entries,
        "unlabelled_trials": labelled.unlabelled_trials,
        "base_disagreements": differ,
        "findings": count,
        "trials": rows,
    }
