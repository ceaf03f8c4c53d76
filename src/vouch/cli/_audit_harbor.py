"""``vouch audit harbor``: read a harbor job directory, map its trials onto TestJack's terms, and
say which would be audited; ``--swe-out`` writes those as SWE-bench files for ``vouch audit swe``,
and ``--audit`` runs it on them (the options after ``--`` are ``vouch audit swe``'s)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from vouch.cli._terminal import escape
from vouch.sources.trials import HarborJob, SweRows, prediction_lines, read_job, swe_rows

__all__ = ["harbor_command"]

PLAN_SCHEMA_VERSION = 1


@click.command("harbor")
@click.argument("job_dir", type=click.Path(path_type=Path))
@click.argument("swe_args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--tasks",
    "tasks_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the job's task directories are (<tasks>/<task_name>); default: each trial's recorded local path.",
)
@click.option(
    "--swe-out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the trials vouch would audit as instances.jsonl and predictions.jsonl for vouch audit swe.",
)
@click.option(
    "--audit",
    "run_audit",
    is_flag=True,
    help="Then audit them: vouch audit swe on the --swe-out files, with the options given after -- "
    "(e.g. -- --repo-root DIR --environments FILE --json OUT).",
)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the plan.")
@click.pass_context
def harbor_command(
    ctx: click.Context,
    job_dir: Path,
    swe_args: tuple[str, ...],
    tasks_dir: Path | None,
    swe_out: Path | None,
    run_audit: bool,
    json_out: Path | None,
) -> None:
    """Read a harbor job: trials pass on a positive reward; P = instruction.md, T0 = tests/, G = solution/."""
    if run_audit and swe_out is None:
        raise click.UsageError("--audit needs --swe-out DIR (where the SWE-bench files for vouch audit swe go)")
    if swe_args and not run_audit:
        raise click.UsageError(f"unexpected argument {swe_args[0]!r}: options after -- are for --audit")
    job = read_job(job_dir, tasks_dir)
    out = Console()
    _print_plan(job, out)
    body = plan(job)
    rows = swe_rows(job)
    for trial in body["trials"]:
        trial["swe_trial_id"] = next((k for k, v in rows.names.items() if v == trial["trial_name"]), None)
    if swe_out is not None:
        _write_swe_files(rows, swe_out, body, out)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(body, indent=1) + "\n")
        out.print(escape(f"wrote {json_out}"))
    if run_audit and rows.trials:
        assert swe_out is not None
        from vouch.cli._audit_swe import swe

        args = ["--instances", str(swe_out / "instances.jsonl"), "--predictions", str(swe_out / "predictions.jsonl")]
        with swe.make_context("swe", [*args, *swe_args], parent=ctx) as sub:
            swe.invoke(sub)


def _write_swe_files(rows: SweRows, swe_out: Path, body: dict[str, Any], out: Console) -> None:
    """The trials to audit as instances.jsonl and predictions.jsonl in ``swe_out`` (noted in the
    plan ``body``), and the ``vouch audit swe`` command that audits them."""
    instances, trials = rows.instances, rows.trials
    if not trials:
        out.print(escape(f"no trial to audit: nothing written to {swe_out}"))
        return
    swe_out.mkdir(parents=True, exist_ok=True)
    (swe_out / "instances.jsonl").write_text(
        "".join(json.dumps(i.model_dump(mode="json", by_alias=True)) + "\n" for i in instances)
    )
    (swe_out / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in prediction_lines(trials)))
    command = (
        f"vouch audit swe --instances {shlex.quote(str(swe_out / 'instances.jsonl'))} "
        f"--predictions {shlex.quote(str(swe_out / 'predictions.jsonl'))} --repo-root DIR "
        "--environments environments.json"
    )
    body["config"]["swe_out"] = str(swe_out)
    body["swe_command"] = command
    out.print(escape(f"wrote {len(trials)} trials of {len(instances)} instances to {swe_out}; audit them with:"))
    out.print(escape(f"  {command}"), soft_wrap=True)


def plan(job: HarborJob) -> dict[str, Any]:
    """The job as read, every trial's mapping and whether it would be audited (kind ``harbor-plan``)."""
    import vouch

    tasks = {t.task.name: t.task for t in job.trials if t.task is not None}
    return {
        "kind": "harbor-plan",
        "schema_version": PLAN_SCHEMA_VERSION,
        "vouch_version": vouch.__version__,
        "seed": None,
        "config": {"job_dir": str(job.path), "job_name": job.job_name},
        "tasks": [
            {
                "name": task.name,
                "path": str(task.path),
                "kind": task.kind,
                "instance_id": task.swe_instance.instance_id if task.swe_instance else None,
                "P": "instruction.md",
                "T0": ["tests/" + f for f in task.tests],
                "G": ["solution/" + f for f in task.solution],
            }
            for task in tasks.values()
        ],
        "trials": [
            {
                "trial_name": t.trial_name,
                "task_name": t.task_name,
                "agent": t.agent,
                "model": t.model,
                "rewards": t.rewards,
                "reward": t.reward,
                "passing": t.passing,
                "exception": t.exception,
                "patch_file": t.patch_file,
                "audit": t.audit,
                "why_not": t.why_not,
            }
            for t in job.trials
        ],
        "summary": {
            "trials": len(job.trials),
            "passing": sum(t.passing for t in job.trials),
            "audited": sum(t.audit for t in job.trials),
            "tasks_found": len(tasks),
        },
    }


def _print_plan(job: HarborJob, console: Console) -> None:
    table = Table(title=escape(f"harbor job {job.job_name}: {len(job.trials)} trials"))
    for column in ("trial", "task", "model", "reward", "audit"):
        table.add_column(column)
    for t in job.trials:
        reward = "-" if t.reward is None else f"{t.reward:g}"
        table.add_row(
            *map(escape, (t.trial_name, t.task_name, t.model, reward, "yes" if t.audit else (t.why_not or "no")))
        )
    console.print(table)
    passing = sum(t.passing for t in job.trials)
    audited = sum(t.audit for t in job.trials)
    console.print(f"{passing} of {len(job.trials)} trials pass (reward > 0); {audited} would be audited")
