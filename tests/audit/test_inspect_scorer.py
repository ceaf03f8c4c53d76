"""The scorer ``vouch/audit`` through Inspect's own ``inspect score`` command, on a log Inspect wrote.

The log holds real HumanEval tasks as inspect_evals' humaneval records them, each sample marked
passed or failed by Inspect's own scorer (``verify``): has_close_elements taking a distance equal
to the threshold as close (``<=``: passes T0, refuted offline), a right greatest_common_divisor, a
truncate_number that ends its process with status 0 before any assertion (Inspect's scorer took
that for a pass), a right truncate_number that answers wrong whenever it can read the log (the log
is hidden from its runs: sound), and a sample with no completion (vouch cannot judge it: N, which
Inspect's accuracy counts as not correct).
The log sits where sandboxed runs could read it, unless vouch hides it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from _scratch import scratch_root
from vouch.sources.trials import load_problems

pytest.importorskip("inspect_ai.log", reason="the inspect extra: pip install 'vouch[inspect]'")

from inspect_ai.log import (
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
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import Score, Target
from inspect_ai.solver import TaskState

from vouch.errors import UsageError
from vouch.inspect_ext import audit
from vouch.sources.trials import is_vouchs, read_inspect_log

PROBLEMS = load_problems()
MODEL = "openai/gpt-4o-mini"
SCORE = "audit"
"""The key Inspect gives the scorer vouch/audit's score in each sample."""

AT_MOST = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)
FENCED_AT_MOST = f"Here is the function:\n```python\n{PROBLEMS['HumanEval/0'].prompt}{AT_MOST}```\n"
GCD = "    while b:\n        a, b = b, a % b\n    return a\n"
EXITS = "    import os\n    os._exit(0)\n"


def _reads_log(log: Path) -> str:
    """truncate_number, right unless it can read ``log`` (then wrong: what reading G buys it)."""
    return (
        "    try:\n"
        f"        seen = open({str(log)!r}, 'rb').read()\n"
        "    except OSError:\n"
        "        seen = b''\n"
        "    return number if seen else number % 1\n"
    )


def _sample(
    task_id: str, epoch: int, completion: str, value: str | None, *, answer: str | None = None, error: str | None = None
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
        metadata={"prompt": p.prompt, "test": p.test, "entry_point": p.entry_point},
        error=EvalError(message=error, traceback=error, traceback_ansi=error) if error else None,
    )


def _log(path: Path) -> list[tuple[str, str | None]]:
    """Write the log to ``path`` with Inspect's writer; returns (trial id, expected value) per sample."""
    samples = [
        # What a chat model answers (a fenced whole function); Inspect's scorer kept the body it ran.
        (_sample("HumanEval/0", 1, FENCED_AT_MOST, "C", answer=AT_MOST), "I"),
        (_sample("HumanEval/13", 1, GCD, "C"), "C"),
        (_sample("HumanEval/2", 1, EXITS, "C"), "I"),
        (_sample("HumanEval/2", 2, _reads_log(path), "I"), "C"),
        (_sample("HumanEval/2", 3, "", None, error="RuntimeError: the model endpoint timed out"), "N"),
    ]
    ids = list(dict.fromkeys(s.id for s, _ in samples))
    log = EvalLog(
        status="success",
        eval=EvalSpec(
            created="2026-12-01T00:00:00+00:00",
            task="inspect_evals/humaneval",
            dataset=EvalDataset(name="openai_humaneval", samples=len(ids), sample_ids=ids),
            model=MODEL,
            config=EvalConfig(epochs=3),
        ),
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples)),
        stats=EvalStats(started_at="2026-12-01T00:00:00+00:00", completed_at="2026-12-01T00:05:00+00:00"),
        samples=[s for s, _ in samples],
    )
    write_eval_log(log, str(path), format="eval")
    return [(f"{s.id}#{s.epoch}", v) for s, v in samples]


def _inspect_command() -> str:
    beside = Path(sys.executable).parent / "inspect"
    found = str(beside) if beside.is_file() else shutil.which("inspect")
    assert found, "inspect_ai's command line (inspect) is missing; install the inspect extra"
    return found


@pytest.fixture(scope="module")
def scored() -> Iterator[dict[str, Any]]:
    """``inspect score LOG --scorer vouch/audit`` run once, as a user runs it."""
    work = scratch_root() / uuid.uuid4().hex
    work.mkdir(parents=True)
    try:
        log, out = work / "run.eval", work / "run-audited.eval"
        expected = _log(log)
        before = hashlib.sha256(log.read_bytes()).hexdigest()
        env = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
        done = subprocess.run(
            [
                _inspect_command(),
                "score",
                str(log),
                "--scorer",
                "vouch/audit",
                "--action",
                "append",
                # The log's model is never called by this scorer; mockllm needs no API key.
                "--model",
                "mockllm/model",
                "--output-file",
                str(out),
                "-S",
                f"store={work / 'store.sqlite'}",
                "-S",
                f"witness_dir={work / 'witnesses'}",
                "--display",
                "plain",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        yield {"done": done, "log": log, "out": out, "expected": expected, "before": before}
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.slow
def test_inspect_score_with_vouchs_scorer(scored: dict[str, Any]) -> None:
    done = scored["done"]
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    log = read_eval_log(str(scored["out"]))
    assert log.samples is not None
    got = {f"{s.id}#{s.epoch}": (s.scores or {}) for s in log.samples}
    # A sample vouch could not judge is scored "N" (no answer), never left unscored (NaN).
    assert all(isinstance(s[SCORE].value, str) for s in got.values())
    assert {trial: scores[SCORE].value for trial, scores in got.items()} == dict(scored["expected"])
    # Inspect's own scores stay beside vouch's.
    assert {t for t, scores in got.items() if "verify" in scores} == {t for t, v in scored["expected"] if v != "N"}

    refuted = got["HumanEval/0#1"][SCORE]
    assert refuted.explanation is not None
    assert refuted.explanation.startswith("refuted: has_close_elements(")
    shown = ("clause of P: ", "input: [[", "expected (G): False", "actual (the trial): True", "replay: vouch audit")
    for part in shown:
        assert part in refuted.explanation, (part, refuted.explanation)
    meta = refuted.metadata or {}
    # --action append hands the scorer the sample's scores: the program is the one Inspect's scorer ran.
    assert meta["verdict"] == "refuted" and meta["vouch_version"] and meta["config_key"] and meta["program_hash"]
    assert meta["mode"] == "per-trial" and meta["witness_source"] == "offline" and meta["seed"] == 0
    assert meta["inspect_passed"] is True and meta["vouch_t0_passed"] is True and meta["program_from"] == "answer"
    (witness,) = meta["witness_files"][:1]
    assert Path(witness).is_file() and Path(witness).is_relative_to(scored["log"].parent / "witnesses")
    assert meta["replay"][0] == f"vouch audit replay {witness}" and "def test_" in meta["witness_tests"][0]

    sound = got["HumanEval/13#1"][SCORE]
    assert (sound.metadata or {})["verdict"] == "sound" and not (sound.metadata or {})["witness_files"]
    # Exiting with status 0 before T0's assertions passed Inspect's scorer, not vouch's run of T0.
    assert (got["HumanEval/2#1"][SCORE].metadata or {})["verdict"] == "not_passing"
    # The program that answers wrong when it can read the log: the log is hidden from its runs.
    assert (got["HumanEval/2#2"][SCORE].metadata or {})["verdict"] == "sound"
    unjudged = got["HumanEval/2#3"][SCORE]
    assert unjudged.explanation is not None and "no completion" in unjudged.explanation
    assert unjudged.explanation.startswith("undecided: ")
    assert (unjudged.metadata or {})["verdict"] == "error"

    assert log.results is not None
    (headline,) = [s for s in log.results.scores if s.name == SCORE]
    # Accuracy over every sample: the one vouch could not decide counts as not correct, never dropped.
    values = [s.scores[SCORE].value for s in log.samples or [] if s.scores and SCORE in s.scores]
    assert len(values) == len(scored["expected"]) and values.count("N") == 1
    # Inspect reduces a sample's epochs to their mean, then averages over samples.
    by_id: dict[str, list[float]] = {}
    for s in log.samples or []:
        by_id.setdefault(str(s.id), []).append(1.0 if (s.scores or {})[SCORE].value == "C" else 0.0)
    means = [sum(v) / len(v) for v in by_id.values()]
    assert headline.metrics["accuracy"].value == pytest.approx(sum(means) / len(means))
    assert headline.metrics["accuracy"].value == pytest.approx((0 + 1 + 1 / 3) / 3)
    assert hashlib.sha256(scored["log"].read_bytes()).hexdigest() == scored["before"], "the log was modified"


@pytest.mark.slow
def test_vouch_reads_the_scored_log_with_inspects_own_scores(scored: dict[str, Any]) -> None:
    """``vouch audit inspect`` on the re-scored log: Inspect's verdict is ``verify``, never vouch's score."""
    assert scored["done"].returncode == 0
    log = read_eval_log(str(scored["out"]))
    assert all(is_vouchs((s.scores or {})[SCORE]) for s in log.samples or [])
    run = read_inspect_log(scored["out"])
    assert {s.scorer for s in run.scores.values()} == {"verify"}


def _state(task_id: str, completion: str) -> TaskState:
    p = PROBLEMS[task_id]
    return TaskState(
        model=ModelName(MODEL),
        sample_id=task_id,
        epoch=1,
        input=p.prompt,
        messages=[],
        output=ModelOutput.from_content(MODEL, completion),
        metadata={"prompt": p.prompt, "test": p.test, "entry_point": p.entry_point},
    )


def test_vouchs_own_failure_is_a_score_counted_as_not_correct(tmp_path: Path) -> None:
    """A store that cannot be opened: every sample scored N ("undecided: ...", which Inspect's
    accuracy counts as not correct) with the reason, and the scoring run goes on."""
    scorer = audit(store=str(tmp_path / "no-such-dir" / "x" / "store.sqlite"), witness_dir=str(tmp_path / "w"))
    (tmp_path / "no-such-dir").write_text("a file where the store's directory should be")
    p = PROBLEMS["HumanEval/13"]

    async def run() -> Score:
        return await scorer(_state("HumanEval/13", GCD), Target(p.canonical_solution))

    score = anyio.run(run)
    assert score.value == "N"
    assert score.explanation is not None
    assert score.explanation.startswith("undecided: vouch could not judge this sample")
    assert (score.metadata or {})["verdict"] == "error" and (score.metadata or {})["reason"]


def test_a_bad_mode_is_refused_when_the_scorer_is_made() -> None:
    with pytest.raises(UsageError, match="mode='fast' is not a mode"):
        audit(mode="fast")
