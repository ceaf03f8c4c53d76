"""The audit commands' exit codes say whose failure it was: the judged code's (a finding) or vouch's (3)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vouch.audit.function import _trial, _witness
from vouch.audit.function._witness import CANARY, CANARY_WRONG
from vouch.cli import main
from vouch.exec import Call, RunSpec

pytestmark = pytest.mark.slow

MISSING = "vouch.audit._no_such_module"
REAL_SPEC = _witness.validation_spec
NON_STRICT = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)


def _broken_spec(*args: Any, **kwargs: Any) -> RunSpec:
    """A witness run whose in-run entry is a module of vouch that does not exist."""
    spec = REAL_SPEC(*args, **kwargs)
    assert isinstance(spec.entry, Call)
    return replace(spec, entry=replace(spec.entry, target=f"{MISSING}:run_witness"))


class _BrokenWitness:
    """``_trial``'s view of ``_witness`` with every validation run broken (the canary's runs work)."""

    validation_spec = staticmethod(_broken_spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(_witness, name)


def _exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The command's exit code (0 when it returns), stdout and stderr."""
    code: int = 0
    try:
        main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _written(directory: Path, model: str) -> Path:
    witness = _witness.render(
        trial_id="replay#0",
        task_id=CANARY.task_id,
        entry_point=CANARY.entry_point,
        clause="doubled",
        args=[5],
        expected=10,
        index=0,
    )
    return _witness.write(directory / "witnesses" / "replay", witness, model, CANARY.reference)


def test_replay_exits_0_when_the_witness_holds_and_1_when_it_does_not(
    visible_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    holds = _written(visible_tmp / "a", CANARY_WRONG)
    code, out, _ = _exit(["audit", "replay", str(holds)], capsys)
    assert code == 0 and "witness holds" in out
    fails = _written(visible_tmp / "b", CANARY.reference)
    code, out, _ = _exit(["audit", "replay", str(fails)], capsys)
    assert code == 1 and "witness does NOT hold" in out


def test_replay_a_run_vouch_cannot_run_exits_3_and_never_says_does_not_hold(
    visible_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _written(visible_tmp, CANARY_WRONG)
    monkeypatch.setattr("vouch.cli._audit.validation_spec", _broken_spec)
    code, out, _ = _exit(["audit", "replay", str(path)], capsys)
    assert code == 3 and "does NOT hold" not in out and "vouch could not run the witness" in out


def _samples(tmp_path: Path) -> Path:
    path = tmp_path / "samples.jsonl"
    rows = [("HumanEval/0", NON_STRICT)]
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    return path


def _humaneval(tmp_path: Path, visible_tmp: Path) -> list[str]:
    return [
        "audit", "humaneval", "--samples", str(_samples(tmp_path)), "-k", "1", "--workers", "2",
        "--store", str(tmp_path / "store.sqlite"), "--witness-dir", str(visible_tmp / "w"),
        "--json", str(tmp_path / "audit.json"),
    ]  # fmt: skip


def test_an_audit_whose_validation_runs_vouch_cannot_run_exits_3_with_its_results_kept(
    tmp_path: Path, visible_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_trial, "_witness", _BrokenWitness())
    code, _, err = _exit(_humaneval(tmp_path, visible_tmp), capsys)
    assert code == 3
    last = err.strip().splitlines()[-1]
    assert last.startswith("vouch: error: audit humaneval: 1 of 1 judgements are error") and "vouch's own" in last
    results = json.loads((tmp_path / "audit.json").read_text())
    assert results["schema_version"] == 4
    (trial,) = results["trials"]
    assert trial["verdict"] == "error" and trial["infrastructure"] and results["summary"]["sound"] == 0


def test_a_canary_the_pool_fails_stops_the_command_with_one_line_before_any_verdict(
    tmp_path: Path, visible_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_witness, "validation_spec", _broken_spec)
    code, _, err = _exit(_humaneval(tmp_path, visible_tmp), capsys)
    lines = [line for line in err.splitlines() if line.startswith("vouch:")]
    assert code == 3 and len(lines) == 1 and lines[0].startswith("vouch: error: the pool failed the canary")
    assert "No module named" in lines[0]
    assert not (tmp_path / "audit.json").exists()
