"""``vouch exec FILE``: run one untrusted Python file under the engine."""

from __future__ import annotations

import json
import os

import click
from rich.console import Console
from rich.table import Table

import vouch
from vouch.cli._terminal import escape, shown
from vouch.core import ExecReport, IsolationReport
from vouch.errors import UsageError
from vouch.exec import Limits, LocalExecutor, RunResult, RunSpec, Script


def _read_source(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path!r}: {exc.strerror}") from None
    try:
        source = data.decode()
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path!r} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        # Parsing is not running: a file that cannot even be compiled is a usage error.
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise UsageError(f"{path}: cannot be compiled: {exc}") from None
    return source


def to_report(path: str, result: RunResult, config: dict[str, object]) -> ExecReport:
    return ExecReport(
        vouch_version=vouch.__version__,
        config=config,
        file=path,
        status=result.status.value,
        reason=result.reason,
        exit_code=result.exit_code,
        signal=result.signal,
        duration_s=round(result.duration_s, 6),
        peak_memory_mb=result.peak_memory_mb,
        pid=result.pid,
        stdout_tail=result.stdout_tail,
        stderr_tail=result.stderr_tail,
        isolation=IsolationReport.model_validate(result.isolation.to_dict()),
    )


@click.command("exec")
@click.argument("file", type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Wall-clock seconds before the whole process tree is killed.",
)
@click.option(
    "--memory-mb",
    type=click.IntRange(min=1),
    default=512,
    show_default=True,
    help="Memory headroom above what the warm pool pre-imported.",
)
@click.option(
    "--hide", "hidden", multiple=True, type=click.Path(), help="A path the run must see as empty (repeatable)."
)
@click.option("--allow-weak-isolation", is_flag=True, help="Run even when namespaces are missing (recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (kind: exec).")
def exec_command(
    file: str, timeout: float, memory_mb: int, hidden: tuple[str, ...], allow_weak_isolation: bool, as_json: bool
) -> None:
    """Run one untrusted Python FILE under the engine and report how it ended."""
    if not os.path.exists(file):
        raise UsageError(f"no such file: {file!r}")
    source = _read_source(file)
    name = os.path.basename(file)
    limits = Limits(timeout_s=timeout, memory_mb=memory_mb)
    spec = RunSpec(
        entry=Script(name),
        files={name: source},
        limits=limits,
        hidden=tuple(os.path.abspath(p) for p in hidden),
        name=name,
    )
    with LocalExecutor(workers=1, allow_weak=allow_weak_isolation, warm_pytest=False) as executor:
        result = executor.run(spec)
    config = {
        "timeout_s": timeout,
        "memory_mb": memory_mb,
        "hidden": list(spec.hidden),
        "allow_weak_isolation": allow_weak_isolation,
    }
    report = to_report(file, result, config)
    if as_json:
        click.echo(json.dumps(report.model_dump(mode="json")))
        return
    _print_human(report)


def _print_human(report: ExecReport) -> None:
    console = Console()
    style = "green" if report.status == "ok" else "red"
    table = Table(show_header=False, box=None)
    table.add_row("status", f"[{style}]{report.status}[/]" + (escape(f"  ({report.reason})") if report.reason else ""))
    table.add_row("exit", f"code {report.exit_code}" if report.signal is None else f"signal {report.signal}")
    table.add_row("duration", f"{report.duration_s * 1000:.1f} ms")
    table.add_row("peak memory", f"{report.peak_memory_mb:.1f} MiB")
    iso = report.isolation
    table.add_row(
        "isolation", f"{iso.level}; network {'on' if iso.network else 'off'}; uid {iso.uid} (host {iso.host_uid})"
    )
    console.print(table)
    if report.stdout_tail:
        console.rule("stdout (tail)")
        console.print(shown(report.stdout_tail, lines=True), markup=False, highlight=False, end="")
    if report.stderr_tail:
        console.rule("stderr (tail)")
        console.print(shown(report.stderr_tail, lines=True), markup=False, highlight=False, end="")
