"""``--progress plain|rich|none`` and ``vouch schema KIND`` as a user runs them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console
from rich.progress import Progress

from _samples import write_samples
from vouch.cli import _progress
from vouch.cli._progress import PlainProgress, progress_bar
from vouch.cli._schema import KINDS, results_schema

VOUCH = [sys.executable, "-m", "vouch"]
GCD = "    while b:\n        a, b = b, a % b\n    return a\n"
ESC = "\x1b"


def _audit(tmp: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``vouch audit humaneval`` on two real trials of HumanEval/13, stderr a pipe (not a terminal)."""
    samples = write_samples(tmp / "samples.jsonl", [("HumanEval/13", GCD), ("HumanEval/13", "    return 1\n")])
    argv = [*VOUCH, "audit", "humaneval", "--samples", str(samples), "--json", str(tmp / "audit.json")]
    argv += ["--store", str(tmp / "store.db"), "--workers", "2", *extra]
    environ = {k: v for k, v in os.environ.items() if k != _progress.ENV} | (env or {})
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=tmp, env=environ, check=False)


def _progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("[vouch] ")]


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp = tmp_path_factory.mktemp("plain")
    proc = _audit(tmp, "--progress", "plain")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, tmp / "audit.json"


@pytest.mark.slow
def test_plain_progress_is_lines_without_escape_codes(plain_run):
    proc, _ = plain_run
    assert ESC not in proc.stderr
    lines = _progress_lines(proc.stderr)
    assert lines, proc.stderr
    assert any(line.startswith("[vouch] T0 in R[s]: 2/2 (100%) ") and line.endswith(" s") for line in lines), lines
    assert len(lines) == len(set(lines))  # a count repeated by the caller is not a second line


@pytest.mark.slow
def test_default_without_a_terminal_is_plain(tmp_path):
    proc = _audit(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ESC not in proc.stderr
    assert _progress_lines(proc.stderr), proc.stderr


@pytest.mark.slow
def test_none_from_the_environment_prints_no_progress(tmp_path):
    proc = _audit(tmp_path, env={_progress.ENV: "none"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _progress_lines(proc.stderr) == []
    assert json.loads((tmp_path / "audit.json").read_text())["summary"]["trials"] == 2


def test_a_bad_progress_mode_is_one_line_exit_2(tmp_path):
    proc = subprocess.run(
        [*VOUCH, "v4v", "--tasks", str(tmp_path), "--progress", "fancy"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "plain" in proc.stderr and "none" in proc.stderr


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_at_most_every_interval_and_at_the_end(monkeypatch, capsys):
    clock = _Clock()
    monkeypatch.setattr(_progress.time, "monotonic", clock)
    with PlainProgress(Console(stderr=True), interval=10.0) as bar:
        task = bar.add_task("T0 in R[s]", total=4000)
        hidden = bar.add_task("hidden", total=None, visible=False)
        clock.now += 5
        bar.update(task, completed=600)  # too soon: no line
        bar.update(hidden, completed=3)
        clock.now += 7.3
        bar.update(task, completed=1200)
        clock.now += 1
        bar.advance(task, 100)  # too soon again
        open_ended = bar.add_task("deciding cases", total=None)
        bar.update(open_ended, completed=7)
    assert capsys.readouterr().err.splitlines() == [
        "[vouch] T0 in R[s]: 1200/4000 (30%) 12.3 s",
        "[vouch] T0 in R[s]: 1300/4000 (32%) 13.3 s",  # on leaving: changed since its last line
        "[vouch] deciding cases: 7 0.0 s",
    ]


def test_plain_completion_prints_once_however_often_it_is_reported(monkeypatch, capsys):
    clock = _Clock()
    monkeypatch.setattr(_progress.time, "monotonic", clock)
    with PlainProgress(Console(stderr=True)) as bar:
        task = bar.add_task("checking", total=None)
        clock.now += 2
        for _ in range(3):
            bar.update(task, completed=18, total=18)
        clock.now += 1
        bar.update(task, completed=1, total=5)  # a second batch of the same stage, soon after
        bar.update(task, completed=5, total=5)
    assert capsys.readouterr().err.splitlines() == [
        "[vouch] checking: 18/18 (100%) 2.0 s",
        "[vouch] checking: 5/5 (100%) 3.0 s",
    ]


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_the_mode_picks_the_bar(monkeypatch):
    console = Console(stderr=True)
    monkeypatch.setattr(sys, "stderr", _Stream(tty=False))
    assert isinstance(progress_bar(None, console=console), PlainProgress)
    assert isinstance(progress_bar("plain", console=console), PlainProgress)
    rich = progress_bar("rich", console=console)
    assert isinstance(rich, Progress) and not rich.disable
    none = progress_bar("none", console=console)
    assert isinstance(none, Progress) and none.disable
    monkeypatch.setattr(sys, "stderr", _Stream(tty=True))
    assert isinstance(progress_bar(None, console=console), Progress)


def _vouch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOUCH, *args], capture_output=True, text=True, timeout=300, check=False)


def test_schema_audit_has_the_results_fields():
    proc = _vouch("schema", "audit")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert {"trials", "summary", "schema_version", "kind"} <= set(schema["properties"])
    assert schema["x-vouch-kind"] == "audit"
    assert schema["x-vouch-schema-version"] == 4
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.slow
def test_a_real_audit_dump_validates_against_its_schema(plain_run, tmp_path):
    _, dump = plain_run
    out = tmp_path / "audit.schema.json"
    proc = _vouch("schema", "audit", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    schema = json.loads(out.read_text())
    results = json.loads(dump.read_text())
    jsonschema.validate(results, schema)
    results["summary"].pop("trials")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(results, schema)


def test_a_real_exec_report_validates_against_its_schema(visible_tmp):
    program = visible_tmp / "hello.py"
    program.write_text("print('hello')\n")
    proc = _vouch("exec", str(program), "--json")
    assert proc.returncode == 0, proc.stderr
    jsonschema.validate(json.loads(proc.stdout), results_schema("exec"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_has_a_valid_schema_with_its_version(kind):
    schema = results_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["x-vouch-kind"] == kind
    assert isinstance(schema["x-vouch-schema-version"], int)
    assert "schema_version" in schema["properties"]


def test_an_envelope_only_kind_pins_its_kind_and_lets_the_body_through():
    schema = results_schema("v4v")
    envelope = {"kind": "v4v", "schema_version": 1, "vouch_version": "0", "seed": 0, "config": {}}
    jsonschema.validate(envelope | {"tasks": [], "retained": 0}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(envelope | {"kind": "bench"}, schema)


def test_schema_list_names_every_kind():
    proc = _vouch("schema", "--list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(KINDS)
    assert all(f"schema_version {4 if line.split()[0] == 'audit' else 1}" in line for line in lines)


@pytest.mark.parametrize("args", [("schema", "no-such-kind"), ("schema",)])
def test_schema_without_a_known_kind_is_one_line_exit_2(args):
    proc = _vouch(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert all(kind in proc.stderr for kind in KINDS)


@pytest.mark.parametrize("mode", ["plain", "rich"])
def test_a_progress_description_from_input_reaches_the_terminal_escaped(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.progress import TextColumn

    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    name = "HumanEval/0\x1b[2J\r\n0 refuted"
    with progress_bar(mode, TextColumn("{task.description}"), console=console) as bar:
        job = bar.add_task(name, total=2)
        bar.update(job, completed=2, description=f"{name} done")
    written = out.getvalue() + capsys.readouterr().err
    assert "\x1b[2J" not in written and "\r" not in written
    assert "HumanEval/0\\x1b[2J\\r\\n0 refuted done" in written
