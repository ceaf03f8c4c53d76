"""Witness files hold G's values: once the audit writes one, no run of the process can read them
(issue 14, finding 3)."""

from __future__ import annotations

from pathlib import Path

from vouch.audit import _witness
from vouch.exec import Call, LocalExecutor, RunSpec, hidden_in_every_run


def test_the_witness_root_is_hidden_from_runs_once_a_witness_is_written(visible_tmp: Path) -> None:
    root = visible_tmp / "witnesses"
    wf = _witness.render(trial_id="T/1#0", task_id="T/1", entry_point="f", clause="c", args=[1], expected=2, index=1)
    path = _witness.write(root / "T_1_0", wf, "def f(x):\n    return 1\n", "def f(x):\n    return 2\n")
    assert path.read_text() == wf.source  # the control: written, readable on the host
    assert str(root) in hidden_in_every_run()
    probe = "import os\ndef f(root):\n    return os.listdir(root)\n"
    with LocalExecutor(workers=1, warm_pytest=False) as executor:
        result = executor.run(RunSpec(Call("v.py:f", (str(root),)), files={"v.py": probe}))
    assert result.ok, (result.status, result.reason)
    assert result.value == []
