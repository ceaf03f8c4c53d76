"""``vouch audit swe --run-dir``: the harness's per-test verdicts beside vouch's run of T0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vouch.audit import AuditResults
from vouch.sources._swebench_rundir import RunDir, StatusDisagreement, compare_tests_status
from vouch.swebench._harness import InstanceReproduction

__all__ = ["audit_comparison", "harness_comparison", "print_comparison", "run_dir_config"]


def run_dir_config(run: RunDir, audited: int) -> dict[str, Any]:
    """What was read from the run directory, for the results file's config."""
    return {
        "path": str(run.path),
        "run_id": run.run_id,
        "model": run.model,
        "graded": len(run.reports),
        "resolved": sum(r.resolved for r in run.reports.values()),
        "audited": audited,
        "ungraded": run.ungraded,
    }


def _row(
    instance_id: str,
    run: RunDir,
    vouch_ran: bool,
    diffs: Sequence[StatusDisagreement],
    why: str | None,
    not_compared: Sequence[str] = (),
) -> dict[str, Any]:
    report = run.reports[instance_id]
    return {
        "instance_id": instance_id,
        "harness_resolved": report.resolved,
        "harness_tests_status": report.has_tests_status,
        "vouch_ran_t0": vouch_ran,
        "disagreements": [{"test": d.test, "harness": d.harness, "vouch": d.vouch} for d in diffs],
        "not_compared": sorted(not_compared),
        "reason": why,
    }


def harness_comparison(run: RunDir, records: Sequence[InstanceReproduction]) -> list[dict[str, Any]]:
    """Per instance of a ``--harness-only`` run: the tests vouch's R[s] and the harness's judged differently."""
    rows = []
    for record in records:
        if record.instance_id not in run.reports:
            continue
        agent = record.agent
        if agent is None or agent.resolved is None:
            why = record.reason or (agent.reason if agent else None) or "no graded run of the agent's world"
            rows.append(_row(record.instance_id, run, False, [], why))
            continue
        failed = set(agent.f2p_failed) | set(agent.p2p_failed)
        diffs = compare_tests_status(run.reports[record.instance_id], failed, set(agent.skipped))
        rows.append(_row(record.instance_id, run, True, diffs, None, agent.skipped))
    return rows


def audit_comparison(run: RunDir, results: AuditResults) -> list[dict[str, Any]]:
    """Per audited trial: the tests vouch's run of T0 in R[s] and the harness's judged differently.

    A T0 id vouch neither passed nor failed (skipped, or left out of T0 because it fails with and
    without G on this machine) is not compared.
    """
    rows = []
    for trial in results.trials:
        if trial.task_id not in run.reports:
            continue
        t0 = next((r for r in trial.evidence.t0 if r.world == "model"), None)
        if t0 is None or not (t0.tests_passed or t0.tests_failed):
            rows.append(_row(trial.task_id, run, False, [], trial.reason or "vouch did not run T0 in R[s]"))
            continue
        report = run.reports[trial.task_id]
        ran = set(t0.tests_passed) | set(t0.tests_failed)
        left_out = (report.passed | report.failed) - ran
        diffs = compare_tests_status(report, set(t0.tests_failed), left_out)
        rows.append(_row(trial.task_id, run, True, diffs, None, sorted(left_out)))
    return rows


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
