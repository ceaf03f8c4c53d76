"""``vouch bench challenge``: permitted variants a verifier rejects, violations it accepts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from vouch.bench import ChallengeReport, load_public_task, preload_for, run_challenge, sealed_executor
from vouch.cli._terminal import escape
from vouch.errors import EXIT_FINDINGS, UsageError
from vouch.exec import LocalExecutor

_STYLE = {"PASS": "green", "FAIL": "red", "INVALID": "yellow"}


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the {what} {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"the {what} {path} is not valid JSON: {exc}") from None


def _table(report: ChallengeReport) -> Table:
    table = Table(title=escape(f"challenge of {report.task_id} ({report.kind}): {report.findings} finding(s)"))
    for column in ("candidate", "role", "decision"):
        table.add_column(column, no_wrap=True)
    for column in ("finding", "how", "why"):
        table.add_column(column, overflow="fold")
    for row in report.rows:
        decision = row.decision.value
        table.add_row(
            escape(row.derived.id),
            row.derived.role,
            f"[{_STYLE[decision]}]{decision}[/]",
            (row.finding or "").replace("_", " "),
            escape(row.derived.how),
            escape(row.reason if row.reason else row.derived.why),
        )
    return table


@click.command("challenge")
@click.option("--task", "task_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--verifier", "verifier_file", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--candidate",
    "candidate_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A JSON candidate you hold to be valid (the task kind's schema).",
)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the choices among derivations.")
@click.option("--fail-on-findings", is_flag=True, help="Exit 1 when the verifier rejects or accepts wrongly.")
@click.option("--allow-weak-isolation", is_flag=True)
def challenge_command(
    task_dir: Path,
    verifier_file: Path,
    candidate_file: Path,
    json_out: Path | None,
    seed: int,
    fail_on_findings: bool,
    allow_weak_isolation: bool,
) -> None:
    """Derive permitted variants and violations of a valid candidate; report the verifier's mistakes."""
    task = load_public_task(task_dir)
    try:
        verifier = verifier_file.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read the verifier {verifier_file}: {exc.strerror}") from None
    candidate = _read_json(candidate_file, "candidate")
    if isinstance(candidate, dict) and isinstance(candidate.get("candidate"), dict) and "label" in candidate:
        candidate = candidate["candidate"]  # a case file: its candidate
    # The task's own reference verifier is the build's code; any other verifier is under test.
    trusted = verifier_file.resolve() == (task_dir / "reference" / "verifier.py").resolve()
    pools = (
        LocalExecutor(preload=preload_for([task]), allow_weak=allow_weak_isolation)
        if trusted
        else sealed_executor([task], allow_weak=allow_weak_isolation)
    )
    with pools as executor:
        report = run_challenge(task, verifier, candidate, executor, seed=seed)
    console = Console()
    console.print(_table(report))
    console.print(report.summary(), markup=False)
    if json_out is not None:
        config = {"task": str(task_dir), "verifier": str(verifier_file), "candidate": str(candidate_file)}
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report.to_json(config), indent=2) + "\n")
        Console(stderr=True).print(escape(f"wrote {json_out}"))
    if fail_on_findings and report.findings:
        sys.exit(EXIT_FINDINGS)
