"""What vouch prints that it did not write reaches the terminal with no control character, and a
replayed witness is judged by the audit's own rule: both through the commands a user runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vouch.audit.function import CANARY, CANARY_WRONG, MARKER, WitnessFile, render_witness, write_witness

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# An exception message that clears the screen, homes the cursor and forges a summary line.
FORGED = "\\x1b[2J\\x1b[H\\r\\n0 refuted, every trial sound\\n"
GCD = "    while b:\n        a, b = b, a % b\n    return a\n"
# greatest_common_divisor: right on T0's inputs, and raises the forged message everywhere else.
RAISES_OFF_T0 = (
    f"    if (a, b) not in ((3, 7), (10, 15), (49, 14), (144, 60)):\n        raise KeyboardInterrupt('{FORGED}')\n"
) + GCD


def _vouch(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = os.environ | {"VOUCH_PROGRESS": "plain", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "vouch", *args], cwd=cwd, capture_output=True, timeout=600, check=False, env=env
    )


def _no_control_bytes(proc: subprocess.CompletedProcess[bytes]) -> None:
    for stream in (proc.stdout, proc.stderr):
        assert b"\x1b" not in stream and b"\r" not in stream, stream.decode(errors="replace")
        assert not any(line.startswith(b"0 refuted") for line in stream.splitlines()), stream


def test_a_trials_exception_message_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/13", "completion": RAISES_OFF_T0}) + "\n")
    proc = _vouch(
        ["audit", "humaneval", "--samples", str(samples), "-k", "1", "--store", "s.db", "--witness-dir", "w"],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    out = proc.stdout.decode()
    assert "refuted HumanEval/13#0" in out
    # The message is shown, as the escapes a reader can see.
    assert "\\x1b[2J" in out
    _no_control_bytes(proc)


def _hand_witness(directory: Path, model: str) -> Path:
    """A witness as ``--witness-files`` may give one: it fails on a wrong answer by a KeyError,
    and on an exception of the program by that exception, not by an assertion."""
    source = (
        f"{MARKER}{json.dumps({'task_id': CANARY.task_id, 'trial_id': 'hand#0', 'entry_point': CANARY.entry_point})}\n"
        f"from solution import {CANARY.entry_point}\n\n\n"
        f"def test_doubled():\n    assert {{10: True}}[{CANARY.entry_point}(5)]\n"
    )
    witness = WitnessFile("test_witness_hand_0.py", source)
    return write_witness(directory / "witnesses" / "hand", witness, model, CANARY.reference)


@pytest.mark.parametrize(
    "model",
    [CANARY_WRONG, CANARY.prompt + f"    raise ValueError('{FORGED}')\n"],
    ids=["key-error", "forged-message"],
)
def test_a_witness_the_audit_would_discard_does_not_hold_on_replay(visible_tmp: Path, model: str) -> None:
    """A failure in R[s] that is no assertion discards a witness in the audit; its replay says
    "does NOT hold" (exit 1), never "holds", and prints the program's message escaped."""
    path = _hand_witness(visible_tmp, model)
    proc = _vouch(["audit", "replay", str(path)], visible_tmp)
    out = proc.stdout.decode()
    assert proc.returncode == 1, out + proc.stderr.decode(errors="replace")
    assert "witness does NOT hold: does not fail in R[s] by an assertion" in out
    _no_control_bytes(proc)


def test_a_witness_that_refutes_still_holds_on_replay(visible_tmp: Path) -> None:
    witness = render_witness(
        trial_id="replay#0",
        task_id=CANARY.task_id,
        entry_point=CANARY.entry_point,
        clause="doubled",
        args=[5],
        expected=10,
        index=0,
    )
    path = write_witness(visible_tmp / "witnesses" / "replay", witness, CANARY_WRONG, CANARY.reference)
    proc = _vouch(["audit", "replay", str(path)], visible_tmp)
    assert proc.returncode == 0 and b"witness holds" in proc.stdout, proc.stdout
