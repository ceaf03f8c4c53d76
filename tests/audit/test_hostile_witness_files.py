"""Witness files hold G's values: once the audit writes one, no run of the process can read them.
And in the repository form, the files of a trial's patch that could decide a witness's outcome
from the trial's side are flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from vouch.audit.function import _witness
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


@pytest.mark.parametrize(
    ("path", "flagged"),
    [
        ("tests/conftest.py", "conftest"),
        ("conftest.py", "conftest"),
        ("b/src/pkg/tests/conftest.py", "conftest"),
        ("sitecustomize.py", "start-up"),
        ("lib/usercustomize.py", "start-up"),
        ("evil.pth", ".pth"),
        ("pytest.ini", "pytest configuration"),
        ("tox.ini", "pytest configuration"),
        ("pyproject.toml", "pytest configuration"),
        ("json.py", "shadows the module 'json'"),
        ("unittest/__init__.py", "shadows the module 'unittest'"),
        ("_pytest/python.py", "shadows the module '_pytest'"),
        ("pluggy.py", "shadows the module 'pluggy'"),
        ("src/pkg/module.py", None),
        ("src/pkg/json.py", None),
        ("docs/tox.ini", None),
        ("tests/test_conftest.py", None),
        ("README.md", None),
    ],
)
def test_files_a_patch_adds_that_python_or_pytest_load_unasked_are_flagged(path: str, flagged: str | None) -> None:
    found = _witness.implicit_files([path])
    if flagged is None:
        assert found == []
    else:
        assert len(found) == 1 and flagged in found[0].why, found
