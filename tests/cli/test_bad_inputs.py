"""Bad input to the command line: one line on stderr and exit 2 or 3, never a traceback.

Each row of ``BAD`` is a command a user could run on a hostile or broken file; the files are
made once per module. The table runs in-process through ``vouch.cli._main.main`` (every row
stops before any run is submitted); the audits that do run (text that looks like rich markup,
bad sample lines, a forged store row) go through a subprocess, as a user runs them.
"""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import TextColumn

import vouch
from vouch.audit import AuditConfig
from vouch.cli._main import main
from vouch.cli._progress import progress_bar

SWE_DATA = Path(vouch.__file__).resolve().parent / "data" / "swe"
DEEP = "[" * 100_000 + "]" * 100_000
"""JSON nested 100,000 deep: json.loads raises RecursionError."""
BIG_INT = "9" * 5_000
"""An integer past Python's int digit limit: json.loads raises ValueError."""
GCD = "    while b:\n        a, b = b, a % b\n    return a\n"
# greatest_common_divisor special-casing T0's inputs; elsewhere it returns text that reads as
# a rich closing tag, and the witness's defect quotes it.
MARKUP_HACK = (
    "    if a == 3 and b == 7:\n        return 1\n    if a == 10 and b == 15:\n        return 5\n"
    "    if a == 49 and b == 14:\n        return 7\n    if a == 144 and b == 60:\n        return 12\n"
    "    return '[/vouch]'\n"
)


def _sqlite(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad-inputs")
    good = json.dumps({"task_id": "HumanEval/13", "completion": GCD})
    (d / "good_samples.jsonl").write_text(good + "\n")
    (d / "deep.json").write_text(DEEP)
    for name, test in (("minus", "-" * 100_000 + "1"), ("sum", "+".join(["1"] * 20_000))):
        row = {
            "task_id": "Deep/0",
            "prompt": 'def f(x):\n    """Return x."""\n',
            "entry_point": "f",
            "canonical_solution": "    return x\n",
            "test": f"def check(candidate):\n    assert candidate({test}) == 1\n",
        }
        (d / f"problems_deep_{name}.jsonl").write_text(json.dumps(row) + "\n")
    (d / "deep.jsonl").write_text(DEEP + "\n")
    (d / "bigint.json").write_text('{"kind": "audit", "n": ' + BIG_INT + "}")
    (d / "latin1.jsonl").write_bytes(b'{"instance_id": "caf\xe9"}\n')
    (d / "audit_trials_ints.json").write_text(json.dumps({"kind": "audit", "trials": [1, 2]}))
    (d / "audit_evidence_str.json").write_text(
        json.dumps({"kind": "audit", "trials": [{"verdict": "sound", "evidence": "x"}]})
    )
    (d / "audit_witnesses_ints.json").write_text(
        json.dumps({"kind": "audit", "trials": [{"verdict": "refuted", "witnesses": [1]}]})
    )
    summary = {"trials": 0, "passing": 0, "refuted": 0, "reward_hack": 0}
    summary |= {"corrected_resolution_rate": 0, "executions": 0, "wall_s": 0}
    for benchmark in ("humaneval", "swe"):
        results = {"kind": "audit", "vouch_version": "0", "benchmark": benchmark, "trials": [], "summary": summary}
        (d / f"audit_{benchmark}_empty.json").write_text(json.dumps(results))
    _sqlite(d / "foreign.sqlite", "CREATE TABLE foo (x)")
    _sqlite(d / "other_columns.sqlite", "CREATE TABLE audit_judgements (x)", "CREATE TABLE decisions (x)")
    _sqlite(
        d / "version_text.sqlite",
        "CREATE TABLE audit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "INSERT INTO audit_meta VALUES ('audit_schema_version', 'banana')",
    )
    _sqlite(d / "meta_columns.sqlite", "CREATE TABLE audit_meta (a, b, c)")
    return d


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    """The command's arguments; ``{d}`` is the directory of bad files, ``{swe}`` the packaged SWE data."""
    code: int
    says: str
    """A piece of the one line on stderr."""


def _audit(store: str) -> Case:
    return Case(
        ("audit", "humaneval", "--samples", "{d}/good_samples.jsonl", "--store", "{d}/" + store, "--progress", "none"),
        3,
        store,
    )


BAD = {
    "report-deep-json": Case(("report", "{d}/deep.json", "--html", "{d}/o.html"), 2, "nested too deeply"),
    "report-5000-digit-int": Case(("report", "{d}/bigint.json", "--html", "{d}/o.html"), 2, "digits"),
    "report-audit-trials-not-objects": Case(
        ("report", "{d}/audit_trials_ints.json", "--html", "{d}/o.html"), 2, "trials[0]"
    ),
    "report-audit-evidence-not-object": Case(
        ("report", "{d}/audit_evidence_str.json", "--html", "{d}/o.html"), 2, "evidence"
    ),
    "report-audit-witnesses-not-objects": Case(
        ("report", "{d}/audit_witnesses_ints.json", "--html", "{d}/o.html"), 2, "witnesses"
    ),
    "swe-instances-deep": Case(
        ("audit", "swe", "--instances", "{d}/deep.jsonl", "--predictions", "{swe}/predictions.jsonl"),
        2,
        "deep.jsonl:1: not JSON (nested too deeply",
    ),
    "swe-instances-not-utf8": Case(
        ("audit", "swe", "--instances", "{d}/latin1.jsonl", "--predictions", "{swe}/predictions.jsonl"),
        2,
        "latin1.jsonl:1: not JSON (not UTF-8",
    ),
    "swe-predictions-deep": Case(
        ("audit", "swe", "--instances", "{swe}/instances.jsonl", "--predictions", "{d}/deep.jsonl"),
        2,
        "deep.jsonl:1: not JSON (nested too deeply",
    ),
    "swe-predictions-not-utf8": Case(
        ("audit", "swe", "--instances", "{swe}/instances.jsonl", "--predictions", "{d}/latin1.jsonl"),
        2,
        "latin1.jsonl:1",
    ),
    "inspect-log-deep": Case(("audit", "inspect", "{d}/deep.json"), 2, "nested too deeply"),
    "evalplus-results-deep": Case(
        ("audit", "humaneval", "--samples", "{d}/good_samples.jsonl", "--evalplus-results", "{d}/deep.json"),
        2,
        "nested too deeply",
    ),
    "problems-deep-unary-chain": Case(
        ("audit", "function", "--problems", "{d}/problems_deep_minus.jsonl", "--samples", "{d}/good_samples.jsonl"),
        2,
        "line 1: code nested too deeply to parse",
    ),
    "problems-deep-binary-chain": Case(
        ("audit", "function", "--problems", "{d}/problems_deep_sum.jsonl", "--samples", "{d}/good_samples.jsonl"),
        2,
        "line 1: code nested too deeply to parse",
    ),
    "export-deep-json": Case(("export", "{d}/deep.json", "--out", "{d}/x"), 2, "nested too deeply"),
    "export-not-audit-results": Case(("export", "{d}/bigint.json", "--out", "{d}/x"), 2, "digits"),
    "export-audit-of-another-layout": Case(
        ("export", "{d}/audit_trials_ints.json", "--out", "{d}/x"),
        2,
        "audit results of another layout (vouch_version: Field required",
    ),
    "export-no-samples-named": Case(
        ("export", "{d}/audit_humaneval_empty.json", "--out", "{d}/x"), 2, "name no samples file; pass --samples"
    ),
    "export-swe-without-instances": Case(
        ("export", "{d}/audit_swe_empty.json", "--out", "{d}/x"), 2, "with --instances FILE and --predictions FILE"
    ),
    "store-foreign-database": _audit("foreign.sqlite"),
    "store-other-columns": _audit("other_columns.sqlite"),
    "store-version-not-a-number": _audit("version_text.sqlite"),
    "store-meta-other-columns": _audit("meta_columns.sqlite"),
}


@pytest.mark.parametrize("case", list(BAD.values()), ids=list(BAD))
def test_bad_input_is_one_line_and_exit_2_or_3(
    case: Case, bad: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(bad)  # any default store or output stays in the module's directory
    args = [a.format(d=bad, swe=SWE_DATA) for a in case.args]
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == case.code, err
    assert len(lines) == 1 and lines[0].startswith("vouch: error: "), err
    assert case.says in lines[0]
    assert "Traceback" not in err


def _vouch(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vouch", *map(str, args)], capture_output=True, text=True, timeout=600, check=False
    )


def _audit_run(samples: Path, store: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return _vouch("audit", "humaneval", "--samples", samples, "--store", store, "--json", out, "--progress", "none")


@pytest.mark.slow
def test_text_that_reads_as_rich_markup_is_printed_and_the_results_written(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    rows = [{"task_id": "HumanEval/13", "completion": MARKUP_HACK}, {"task_id": "[/x]", "completion": GCD}]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for run_name in ("first", "resumed"):
        out = tmp_path / f"{run_name}.json"
        run = _audit_run(samples, tmp_path / "store.sqlite", out)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "Traceback" not in run.stderr
        body = json.loads(out.read_text())
        assert [t["verdict"] for t in body["trials"]] == ["reward_hack"]
        assert "[/vouch]" in run.stdout  # printed as it is, not read as a closing tag
        assert "'[/x]'" in run.stderr  # the skipped line's reason quotes the task id
    assert body["config"]["resumed_programs"] == 1


@pytest.mark.slow
def test_sample_lines_too_deep_or_with_too_many_digits_are_bad_lines(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    good = json.dumps({"task_id": "HumanEval/13", "completion": GCD})
    samples.write_text(f"{good}\n{DEEP}\n" + '{"task_id": "HumanEval/13", "n": ' + BIG_INT + "}\n")
    out = tmp_path / "r.json"
    run = _audit_run(samples, tmp_path / "store.sqlite", out)
    assert run.returncode == 0, run.stderr[-3000:]
    body = json.loads(out.read_text())
    assert body["summary"]["trials"] == 1 and body["trials"][0]["verdict"] == "sound"
    reasons = {b["line"]: b["reason"] for b in body["config"]["bad_lines"]}
    assert "nested too deeply" in reasons[2] and "digits" in reasons[3]


@pytest.mark.slow
def test_a_forged_store_row_is_no_verdict(tmp_path: Path) -> None:
    """A row edited to say refuted, without the witness a refutation carries, is judged again."""
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/13", "completion": GCD}) + "\n")
    store = tmp_path / "store.sqlite"
    first = _audit_run(samples, store, tmp_path / "a.json")
    assert first.returncode == 0, first.stderr[-3000:]
    forged = json.dumps({"benchmark_pass": True, "verdict": "refuted", "witnesses": [], "evidence": {}})
    _sqlite(store, f"UPDATE audit_judgements SET judgement = '{forged}'")
    again = _audit_run(samples, store, tmp_path / "b.json")
    assert again.returncode == 0, again.stderr[-3000:]
    body = json.loads((tmp_path / "b.json").read_text())
    assert [t["verdict"] for t in body["trials"]] == ["sound"]
    assert body["config"]["resumed_programs"] == 0
    key = AuditConfig().key()
    rows = sqlite3.connect(store).execute("SELECT judgement FROM audit_judgements WHERE config_key = ?", (key,))
    assert [json.loads(text)["verdict"] for (text,) in rows] == ["sound"]  # the new judgement replaced it


def test_an_error_quoting_a_line_break_is_still_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(["report", "results\nTraceback.json", "--html", "o.html"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert len(err.strip().splitlines()) == 1 and "no such results file" in err, err


def test_a_rich_progress_bar_shows_descriptions_as_text() -> None:
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=True, width=120)
    with progress_bar("rich", TextColumn("{task.description}"), console=console) as bar:
        task = bar.add_task("instance [/x] of [bold]model", total=2)
        bar.update(task, completed=2, description="environment [/vouch] 1.0")
    assert "environment [/vouch] 1.0" in stream.getvalue()
