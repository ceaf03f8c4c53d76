"""The judge of a witness run is out of the judged program's reach.

A witness run's harness runs pytest on the witness; the program answers its calls from a
process of its own (``vouch.exec._apart``). Whatever that process does instead of answering
(it sleeps, interrupts pid 1, its parent or every pid it can see, closes its
channel, ends itself) the harness finishes the test and reports it: the witness
fails in R[s] by an ``AssertionError`` naming what happened, and passes in R[G].
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from _samples import write_samples
from vouch.audit import PRELOAD, Verdict, audit_humaneval
from vouch.audit.function import _witness
from vouch.audit.function._inrun import ANSWER_S
from vouch.exec import LocalExecutor, RunSpec
from vouch.sources.trials import load_problems

pytestmark = pytest.mark.slow

PROBLEM = load_problems()["HumanEval/0"]
# has_close_elements with `<=` where P says "closer than": True on [1.0, 2.0] with threshold 1.0.
NON_STRICT = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)
WITNESS = _witness.render(
    trial_id="HumanEval/0#0",
    task_id="HumanEval/0",
    entry_point="has_close_elements",
    clause="closer to each other than the given threshold",
    args=[[1.0, 2.0], 1.0],
    expected=False,
    index=1,
)
INTERRUPT_EVERY_PID = (
    "    import os, signal\n"
    "    for name in os.listdir('/proc'):\n"
    "        if name.isdigit() and int(name) != os.getpid():\n"
    "            try:\n                os.kill(int(name), signal.SIGINT)\n"
    "            except OSError:\n                pass\n"
)
# A program that writes, on every socket it holds, the message the judge reads as "the program's
# process could not be set up": vouch's failure is not the program's to claim.
FORGED_SETUP_FAILURE = (
    "    import json, os, stat, struct\n"
    "    data = json.dumps({'setup_error': 'forged'}).encode()\n"
    "    for fd in range(3, 256):\n"
    "        try:\n"
    "            if stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
    "                os.write(fd, struct.pack('<I', len(data)) + data)\n"
    "        except OSError:\n"
    "            pass\n"
)
# (what the program does, code before the prompt, code at the top of the body, what the failure names).
# A PID 1 ignores the signals it has no handler for; pytest's process handles SIGINT.
HOSTILE = [
    ("sleeps in the call", "", "    import time\n    time.sleep(60)\n", f"no answer within {ANSWER_S:g} s"),
    ("sleeps at import", "import time\ntime.sleep(60)\n", "", f"no answer within {ANSWER_S:g} s"),
    ("interrupts pid 1", "", "    import os, signal\n    os.kill(1, signal.SIGINT)\n", ""),
    ("interrupts pid 1 at import", "import os, signal\nos.kill(1, signal.SIGINT)\n", "", ""),
    ("interrupts its parent", "", "    import os, signal\n    os.kill(os.getppid(), signal.SIGINT)\n", ""),
    ("interrupts every pid in /proc", "", INTERRUPT_EVERY_PID, ""),
    (
        "closes its channel and sleeps",
        "",
        "    import os, time\n    os.closerange(3, 1024)\n    time.sleep(60)\n",
        "closed its channel",
    ),
    ("exits at import", "import os\nos._exit(3)\n", "", "process ended"),
    ("forges a setup failure", "", FORGED_SETUP_FAILURE, ""),
    # Sent at import, before the child's first answer: the setup spoke before the program loaded.
    ("forges a setup failure at import", textwrap.dedent(FORGED_SETUP_FAILURE), "", "setup message"),
]


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=PRELOAD) as pool:
        yield pool


@pytest.fixture(scope="module")
def records(executor: LocalExecutor) -> dict[str, object]:
    """The R[s] record of the witness on each hostile program, and R[G]'s, from one batch."""
    specs: list[RunSpec] = [_witness.validation_spec(WITNESS, PROBLEM.reference, "R[G]", 0)]
    for name, top, body, _ in HOSTILE:
        program = top + PROBLEM.prompt + body + NON_STRICT
        specs.append(_witness.validation_spec(WITNESS, program, f"R[s] {name}", 0))
    results = executor.run_batch(specs)
    out: dict[str, object] = {"G": _witness.record("reference", results[0])}
    for (name, *_), result in zip(HOSTILE, results[1:], strict=True):
        out[name] = _witness.record("model", result)
    return out


@pytest.mark.parametrize(("name", "names"), [(h[0], h[3]) for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_what_the_program_does_to_its_judge_fails_the_witness_by_an_assertion(
    records: dict[str, object], name: str, names: str
) -> None:
    reference, model = records["G"], records[name]
    assert reference.outcome == "pass", reference  # type: ignore[attr-defined]
    assert model.outcome == "fail" and model.exception == "AssertionError", model  # type: ignore[attr-defined]
    assert names in (model.message or ""), model  # type: ignore[attr-defined]
    verdict = _witness.judge([reference], [model], None)  # type: ignore[list-item]
    assert verdict.valid and verdict.fails_by_assertion, verdict.reason


def test_the_program_reads_nothing_of_the_tests_and_the_judge_reports_the_test(executor: LocalExecutor) -> None:
    """Covered in the program's mount namespace, or emptied while it lives where the run may not
    nest namespaces: either way the test's expected values are not on the program's disk."""
    program = (
        "import glob\n\n\ndef seen():\n    return ''.join(open(p).read() for p in sorted(glob.glob('test_*.py')))\n"
    )
    witness = _witness.render(
        trial_id="T/1#0", task_id="T/1", entry_point="seen", clause="c", args=[], expected="", index=1
    )
    (judged,) = executor.run_batch([_witness.validation_spec(witness, program, "R[s]", 0)])
    record = _witness.record("model", judged)
    assert record.outcome == "pass", record


@pytest.mark.slow
def test_a_program_process_vouch_could_not_set_up_for_t0_leaves_the_trial_error(
    executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T0's deciding run runs the program in a process of its own; when vouch cannot set that
    process up (here: the program's file is not in the run), the trial is ``error`` with vouch's
    reason, never ``not_passing``: the run's own process, which holds none of the program's code,
    said so."""
    from vouch.audit.function import _trial

    real = _trial.t0_spec

    def without_the_program(program: str, problem: Any, name: str, **options: Any) -> Any:
        spec = real(program, problem, name, **options)
        return replace(spec, files={k: v for k, v in spec.files.items() if k != "solution.py"})

    monkeypatch.setattr(_trial, "t0_spec", without_the_program)
    samples = write_samples(
        tmp_path / "samples.jsonl", [("HumanEval/0", PROBLEM.reference.removeprefix(PROBLEM.prompt))]
    )
    (trial,) = audit_humaneval(samples, executor=executor, witness_dir=tmp_path / "witnesses").trials
    assert trial.verdict is Verdict.ERROR, (trial.verdict, trial.reason)
    assert trial.infrastructure and "could not set up the program's process" in (trial.reason or ""), trial.reason
