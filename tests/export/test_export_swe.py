"""vouch export on repository-level audits: SWE-bench instances with the witness tests added."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from _scratch import scratch_root
from vouch.export._repository import new_file_diff, witness_test_names
from vouch.swebench import fixture_files, materialise_fixture_repo


def test_a_new_file_diff_applies_with_git_and_recreates_the_file(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for text in ("def test_a():\n    assert 1\n", "x = 1", ""):
        diff = tmp_path / "new.diff"
        diff.write_text(new_file_diff("tests/test_w.py", text))
        subprocess.run(["git", "-C", str(tmp_path), "apply", str(diff)], check=True)
        assert (tmp_path / "tests" / "test_w.py").read_text() == text
        (tmp_path / "tests" / "test_w.py").unlink()


def test_the_ids_of_a_witness_file_are_its_test_functions_and_test_class_methods() -> None:
    source = (
        "def _helper():\n    pass\n\ndef test_one():\n    pass\n\nclass TestX:\n    def test_two(self):\n        pass\n"
    )
    assert witness_test_names(source) == ["test_one", "TestX::test_two"]
    assert witness_test_names("def (") == []


def _vouch(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vouch", *map(str, args)], capture_output=True, text=True, timeout=900, check=False
    )


def _verdicts(path: Path) -> dict[str, tuple[str, bool]]:
    return {t["trial_id"]: (t["verdict"], t["benchmark_pass"]) for t in json.loads(path.read_text())["trials"]}


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory the runs can read (the world cache lives there)."""
    path = scratch_root() / f"export-swe-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_round_trip_the_exported_instances_fail_the_refuted_trials_and_pass_gold(tmp_path: Path, scratch: Path) -> None:
    """The bundled fixtures: audit, export, then vouch's own run of the harness on the exported
    instances (the audit's T0 stage): gold passes, the refuted trials fail T0, the sound pass."""
    instances, predictions = fixture_files()
    repos = scratch / "repos"
    for name in ("booknotes", "cookiestore", "unitconv"):
        materialise_fixture_repo(name, repos / name)
    common = ("--repo-root", repos, "--cache", scratch / "cache", "--progress", "none")
    audit = tmp_path / "audit.json"
    done = _vouch("audit", "swe", "--instances", instances, "--predictions", predictions, "--json", audit,
                  "--store", tmp_path / "a.sqlite", *common)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    out = tmp_path / "export"
    done = _vouch("export", audit, "--out", out, "--instances", instances, "--predictions", predictions, *common)
    manifest = json.loads((out / "manifest.json").read_text())
    # The trial whose conftest.py forges pytest's reports passes every test under the harness: the
    # export says so rather than claiming to reproduce its refutation, and exits 1.
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    assert [(n["trial_id"], n["reason"].split(" in the")[0]) for n in manifest["not_reproduced"]] == [
        ("vouch-fixtures__booknotes-1#2", "passes every added test")
    ]
    check = manifest["check"]
    assert check["standing"] == check["standing_passing"] == 3 and check["refuted_failing"] == 5
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    first = rows[0]
    given = json.loads(Path(instances).read_text().splitlines()[0])["FAIL_TO_PASS"]
    old = set(given if isinstance(given, list) else json.loads(given))
    added = [t for t in json.loads(first["FAIL_TO_PASS"]) if t not in old]
    # Named as the repository's own tests are, beside them: nothing says vouch wrote them.
    assert added and all(re.match(r"tests/test_\w+_[0-9a-f]{8}\.py::test_", t) for t in added), added
    assert all(f"+++ b/{t.split('::')[0]}" in first["test_patch"] for t in added)
    assert not any("vouch" in t or "witness" in t for t in added)
    original = json.loads(Path(instances).read_text().splitlines()[0])
    assert first["problem_statement"] == original["problem_statement"] and first["patch"] == original["patch"]
    again = tmp_path / "again.json"
    done = _vouch("audit", "swe", "--instances", out / "instances.jsonl", "--predictions", predictions,
                  "--json", again, "--store", tmp_path / "b.sqlite", "--k", "1", *common)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    before, after = _verdicts(audit), _verdicts(again)
    for trial_id, (verdict, _) in before.items():
        if verdict == "refuted" or trial_id == "vouch-fixtures__unitconv-1#1":
            assert after[trial_id] == ("not_passing", False), trial_id
        elif verdict == "sound":
            assert after[trial_id][1], trial_id
    assert all(task["well_formed"] for task in json.loads(again.read_text())["tasks"])
