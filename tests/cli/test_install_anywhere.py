"""vouch judges the same wherever it is installed: a wheel in a venv under /tmp, an editable
copy of the checkout under /tmp.

Every run gets a private /tmp, so a pool whose vouch lives there must still give its runs
vouch's own run-side modules; if it did not, every witness run would fail with vouch's import
error, and that failure must never read as a verdict about the trial.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

# has_close_elements: P says "closer than", so `<=` is wrong on two numbers exactly `threshold`
# apart, which T0 never tries: the audit refutes it with a witness.
NON_STRICT = (
    "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) <= threshold:\n                return True\n    return False\n"
)


def _checkout_copy(where: Path) -> Path:
    """The checkout's package sources, copied (a build writes beside them)."""
    where.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, where / name)
    shutil.copytree(ROOT / "src", where / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return where


def _venv_under_tmp(where: Path) -> Path:
    """A venv under ``where`` that sees this environment's dependencies but not its vouch."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A plain path in a .pth file: this environment's packages, without processing its own .pth
    # files (one of which maps vouch to this checkout).
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _pip(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args],
        check=True,
        capture_output=True,
    )


def _audit(python: Path, tmp: Path) -> dict[str, object]:
    samples = tmp / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": NON_STRICT}) + "\n")
    out = tmp / "audit.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["HOME"] = str(tmp / "home")  # no store or cache shared with the rest of the suite
    proc = subprocess.run(
        [str(python), "-m", "vouch", "audit", "humaneval", "--samples", str(samples), "--json", str(out)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The vouch that ran is the one installed under /tmp, not this checkout.
    where = subprocess.run(
        [str(python), "-c", "import vouch; print(vouch.__file__)"], capture_output=True, text=True, check=True
    ).stdout
    assert where.startswith(str(tmp)), where
    return json.loads(out.read_text())


def _refuted(results: dict[str, object]) -> list[str]:
    trials = results["trials"]
    assert isinstance(trials, list)
    return [t["trial_id"] for t in trials if t["verdict"] == "refuted"]


@pytest.fixture
def under_tmp() -> Iterator[Path]:
    """A directory under /tmp, which every run gets a private copy of, whatever $TMPDIR says."""
    path = Path(tempfile.mkdtemp(prefix="vouch-install-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_wheel_installed_under_tmp_refutes_what_the_checkout_refutes(under_tmp: Path) -> None:
    tmp_path = under_tmp
    wheels = tmp_path / "wheels"
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(_checkout_copy(tmp_path / "checkout")))
    python = _venv_under_tmp(tmp_path / "venv")
    wheel = next(wheels.glob("vouch-*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    assert _refuted(_audit(python, tmp_path)) == ["HumanEval/0#0"]


def test_an_editable_checkout_under_tmp_refutes_what_the_checkout_refutes(under_tmp: Path) -> None:
    tmp_path = under_tmp
    checkout = _checkout_copy(tmp_path / "checkout")
    python = _venv_under_tmp(tmp_path / "venv")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-e",
            str(checkout),
        ],
        check=True,
        capture_output=True,
    )
    assert _refuted(_audit(python, tmp_path)) == ["HumanEval/0#0"]
