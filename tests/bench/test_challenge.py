"""The variant challenger on real tasks (HumanEval, BFCL, AgentDojo) built by vouch's own builders.

The reference verifier and the gold candidate are read here, by the test, never by the
challenger: the reference accepting every variant the challenger calls permitted is the
soundness check of its derivations.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from vouch.bench import PRELOAD, Decision, load_public_task, run_challenge
from vouch.bench._challenge_public import read_public
from vouch.errors import UsageError
from vouch.exec import LocalExecutor
from vouch.sources import build_source

pytestmark = pytest.mark.slow

AGENTDOJO_TASKS = ["banking/user_task_3", "banking/user_task_15", "slack/user_task_5", "workspace/user_task_0"]


@pytest.fixture(scope="module")
def executor():
    preload = [
        *PRELOAD,
        "vouch.sources.agentdojo._source",
        "vouch.sources.agentdojo._world:warm",
        "vouch.sources._probe",
    ]
    with LocalExecutor(preload=preload) as pool:
        yield pool


@pytest.fixture(scope="module")
def built(tmp_path_factory, executor) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("challenge")
    build_source("humaneval", root / "he", options={"limit": 4}, executor=executor)
    build_source("bfcl", root / "bf", options={"limit": 6})
    build_source("agentdojo", root / "ad", options={"user_tasks": AGENTDOJO_TASKS})
    dirs = sorted(p.parent for p in root.rglob("task.toml"))
    by_kind: dict[str, list[Path]] = {"code": [], "tool_call": [], "state": []}
    for d in dirs:
        by_kind[load_public_task(d).spec.kind].append(d)
    return by_kind


def _gold(task_dir: Path) -> dict:
    data = json.loads((task_dir / "reference" / "gold.json").read_text())
    return data.get("candidate", data)


def _reference(task_dir: Path) -> str:
    return (task_dir / "reference" / "verifier.py").read_text()


def _challenge(executor, task_dir: Path, verifier: str, candidate: dict | None = None, seed: int = 0):
    task = load_public_task(task_dir)
    return run_challenge(task, verifier, _gold(task_dir) if candidate is None else candidate, executor, seed=seed)


# --- soundness: the reference accepts what the challenger calls permitted -----------------


@pytest.mark.parametrize("kind", ["code", "tool_call", "state"])
def test_reference_verifier_accepts_every_permitted_variant(executor, built, kind):
    permitted = violations = 0
    for task_dir in built[kind]:
        report = _challenge(executor, task_dir, _reference(task_dir))
        assert report.original.decision is Decision.PASS, task_dir.name
        rejected = [(r.derived.id, r.derived.how, r.reason) for r in report.unjustified + report.invalid]
        assert not report.unjustified and not report.invalid, (task_dir.name, rejected)
        permitted += sum(r.derived.role == "permitted" for r in report.rows)
        violations += sum(r.derived.role == "violation" for r in report.rows)
        if "agentdojo" not in task_dir.name:  # AgentDojo's own checks accept unrequested writes (tests/sources)
            assert not report.accepted_violations, (task_dir.name, [r.derived.how for r in report.accepted_violations])
    assert permitted >= 2 * len(built[kind]) and violations >= len(built[kind])


def test_state_violations_are_checked_on_replays(executor, built):
    task_dir = next(d for d in built["state"] if "banking-user_task_3" in d.name)
    report = _challenge(executor, task_dir, _reference(task_dir))
    constructions = {r.derived.construction for r in report.rows}
    assert {"drop_required_step", "change_required_value", "unauthorised_write", "omit_optional"} <= constructions
    for row in report.rows[1:]:
        assert row.derived.evidence.get("checked_by") == "replay on the public environment"
    # AgentDojo's banking check looks only at the refund: the unrequested write passes it.
    assert [r.derived.construction for r in report.accepted_violations] == ["unauthorised_write"]


# --- strict verifiers are caught rejecting permitted variants -------------------------------

STRICT_ORDER = """
GOLD = {gold!r}

def verify(candidate, env):
    calls = candidate["calls"]
    # strict: the gold's calls in the gold's order, each with every argument the gold passed
    return [c["function"] for c in calls] == [c["function"] for c in GOLD] and all(
        set(g["args"]) <= set(c["args"]) for c, g in zip(calls, GOLD)
    )
"""

STRICT_SOURCE = """
GOLD = {gold!r}

def verify(candidate, env):
    return candidate["source"] == GOLD  # strict: the exact text
"""


@pytest.mark.parametrize("kind", ["tool_call", "state"])
def test_a_strict_verifier_is_caught_rejecting_permitted_variants(executor, built, kind):
    caught = set()
    for task_dir in built[kind]:
        verifier = STRICT_ORDER.format(gold=_gold(task_dir)["calls"])
        report = _challenge(executor, task_dir, verifier)
        assert report.original.decision is Decision.PASS
        caught |= {r.derived.construction for r in report.unjustified}
    assert {"omit_optional"} <= caught
    if kind == "state":
        assert {"add_read_only", "reorder_independent"} <= caught


def test_a_strict_code_verifier_is_caught_rejecting_cosmetic_changes(executor, built):
    task_dir = built["code"][0]
    report = _challenge(executor, task_dir, STRICT_SOURCE.format(gold=_gold(task_dir)["source"]))
    assert {r.derived.construction for r in report.unjustified} >= {"rename_locals", "add_comments", "reformat"}
    assert "unjustified check" in report.summary()


# --- lax verifiers are caught accepting violations ------------------------------------------

ALWAYS = "def verify(candidate, env):\n    return {value}\n"
NAMES_ONLY = """
NAMES = {names!r}

def verify(candidate, env):
    return [c["function"] for c in candidate["calls"]] == NAMES
"""


@pytest.mark.parametrize("kind", ["code", "tool_call", "state"])
def test_an_always_true_verifier_accepts_every_violation(executor, built, kind):
    report = _challenge(executor, built[kind][0], ALWAYS.format(value="True"))
    violations = [r for r in report.rows if r.derived.role == "violation"]
    assert violations and report.accepted_violations == violations
    assert not report.unjustified


def test_a_verifier_that_checks_only_function_names_accepts_changed_values(executor, built):
    caught = set()
    for task_dir in built["tool_call"]:
        names = [c["function"] for c in _gold(task_dir)["calls"]]
        report = _challenge(executor, task_dir, NAMES_ONLY.format(names=names))
        caught |= {r.derived.construction for r in report.accepted_violations}
    assert "change_required_value" in caught


def test_a_verifier_that_rejects_the_original_says_so_first(executor, built):
    report = _challenge(executor, built["tool_call"][0], ALWAYS.format(value="False"))
    assert report.original.finding == "rejects_original"
    assert report.summary().startswith("The verifier REJECTS the candidate you hold valid")
    assert report.to_json()["original"]["decision"] == "FAIL"


def test_a_verifier_that_crashes_on_some_candidates_gets_invalid_rows_and_the_run_goes_on(executor, built):
    task_dir = built["tool_call"][0]
    n = len(_gold(task_dir)["calls"])
    verifier = f"def verify(candidate, env):\n    assert len(candidate['calls']) == {n}, 'count'\n    return True\n"
    report = _challenge(executor, task_dir, verifier)
    assert report.original.decision is Decision.PASS
    assert report.invalid and all("AssertionError: count" in (r.reason or "") for r in report.invalid)
    assert any(r.decision is Decision.PASS for r in report.rows[1:])


# --- public materials only ------------------------------------------------------------------


def test_the_challenger_never_opens_reference_or_cases(executor, built):
    opened: list[str] = []
    watching = [True]

    def hook(event: str, args: tuple) -> None:
        if watching[0] and event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], str | Path):
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # audit hooks cannot be removed; this one stops recording below
    try:
        for kind in ("code", "tool_call", "state"):
            task_dir = built[kind][0]
            task = load_public_task(task_dir)
            gold, reference = _gold(task_dir), _reference(task_dir)
            opened.clear()
            run_challenge(task, reference, gold, executor)
            hits = [p for p in opened if "/reference" in p or "/cases" in p]
            assert not hits, hits
            assert any(p.startswith(str(task_dir)) for p in opened)  # the hook does see its reads
    finally:
        watching[0] = False


def test_same_report_without_reference_and_cases_on_disk(executor, built, tmp_path):
    for kind in ("code", "state"):
        task_dir = built[kind][0]
        gold, reference = _gold(task_dir), _reference(task_dir)
        bare = tmp_path / task_dir.name
        shutil.copytree(task_dir, bare)
        shutil.rmtree(bare / "reference")
        shutil.rmtree(bare / "cases")
        full = run_challenge(load_public_task(task_dir), reference, gold, executor, seed=3)
        alone = run_challenge(load_public_task(bare), reference, gold, executor, seed=3)
        assert [(r.derived.id, r.derived.candidate, r.decision) for r in full.rows] == [
            (r.derived.id, r.derived.candidate, r.decision) for r in alone.rows
        ]


def test_read_public_refuses_withheld_paths_symlinks_included(built):
    task_dir = built["tool_call"][0]
    for bad in ("reference/verifier.py", "cases/gold.json", "../x", "environment/../reference/gold.json"):
        with pytest.raises(UsageError, match="challenger reads only"):
            read_public(task_dir, bad)
    link = task_dir / "environment" / "leak.json"
    link.symlink_to(task_dir / "reference" / "gold.json")
    try:
        with pytest.raises(UsageError, match="challenger reads only"):
            read_public(task_dir, "environment/leak.json")
    finally:
        link.unlink()


def test_the_verifier_cannot_read_the_withheld_files(executor, built, visible_tmp):
    task_dir = visible_tmp / "task"
    shutil.copytree(built["tool_call"][0], task_dir)
    probe = task_dir / "reference" / "verifier.py"
    public = task_dir / "environment" / "tools.json"
    verifier = (
        "def read(path):\n"
        "    try:\n"
        "        return open(path).read()\n"
        "    except OSError:\n"
        "        return ''\n"
        "def verify(candidate, env):\n"
        f"    return read({str(probe)!r}) == '' and read({str(public)!r}) != ''\n"
    )
    report = _challenge(executor, task_dir, verifier)
    assert report.original.decision is Decision.PASS  # the withheld file was hidden, the public one not
    assert probe.read_text()  # and it is not empty


def test_the_verifier_cannot_read_the_installed_answer_data(executor, built):
    from vouch.sources import answer_data_paths

    paths = answer_data_paths()
    # They hold data here: directories with files, files with bytes (tau2's task files).
    assert paths and all(os.listdir(p) if os.path.isdir(p) else os.path.getsize(p) for p in paths)
    verifier = (
        "import os\n"
        "def verify(candidate, env):\n"
        "    def covered(p):\n"
        "        return not os.listdir(p) if os.path.isdir(p) else not os.path.exists(p) or not os.path.getsize(p)\n"
        f"    return all(covered(p) for p in {paths!r})\n"
    )
    report = _challenge(executor, built["code"][0], verifier)
    assert report.original.decision is Decision.PASS


# --- bad input, determinism -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("candidate", "verifier", "message"),
    [
        ({"source": "def f(): pass\n"}, ALWAYS.format(value="True"), "does not fit a tool_call task"),
        ({"calls": [{"function": 3}]}, ALWAYS.format(value="True"), "does not fit a tool_call task"),
        ([1, 2], ALWAYS.format(value="True"), "not a JSON object"),
        (None, "def verify(c, env:\n    return True\n", "does not parse"),
        (None, "import no_such_module_anywhere\ndef verify(c, env):\n    return True\n", "does not import"),
        (None, "verify = 3\n", "defines no callable verify"),
    ],
)
def test_bad_input_is_one_usage_error(executor, built, candidate, verifier, message):
    task_dir = built["tool_call"][0]
    with pytest.raises(UsageError, match=message):
        run_challenge(
            load_public_task(task_dir), verifier, _gold(task_dir) if candidate is None else candidate, executor
        )


def test_same_seed_same_derivations(executor, built):
    task_dir = built["state"][0]
    a = _challenge(executor, task_dir, ALWAYS.format(value="True"), seed=5)
    b = _challenge(executor, task_dir, ALWAYS.format(value="True"), seed=5)
    assert [(r.derived.id, r.derived.candidate) for r in a.rows] == [
        (r.derived.id, r.derived.candidate) for r in b.rows
    ]
    data = a.to_json({"task": str(task_dir)})
    assert data["kind"] == "challenge" and data["seed"] == 5 and data["task_id"] == task_dir.name
    assert data["rows"][0]["id"] == "original" and json.dumps(data)
