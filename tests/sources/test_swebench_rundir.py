"""A SWE-bench harness run directory read as trials; its tests_status beside vouch's run of T0.

swebench is not installed here (it pulls in datasets, modal, docker and pandas), so the run
directory is written by ``harness_run`` below in the layout swebench 4.1.0's
``harness.run_evaluation.run_instance`` leaves (``logs/run_evaluation/<run_id>/<model with / as
__>/<instance_id>/`` with ``patch.diff``, ``eval.sh``, ``test_output.txt``,
``run_instance.log``, ``report.json``) and ``report.json`` as ``harness.grading.get_eval_report``
writes it (``json.dumps(report, indent=4)``: ``patch_is_None``, ``patch_exists``,
``patch_successfully_applied``, ``resolved``, ``tests_status`` with FAIL_TO_PASS, PASS_TO_PASS,
FAIL_TO_FAIL and PASS_TO_FAIL ``success``/``failure`` lists). Instances and patches are vouch's
bundled fixture repositories' (booknotes, cookiestore).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vouch.errors import UsageError
from vouch.sources.swebench._rundir import HarnessReport, compare_tests_status, read_run_dir
from vouch.swebench import SweInstance, fixture_files, load_instances, materialise_fixture_repo

INSTANCES = load_instances(fixture_files()[0])
PREDICTIONS = [json.loads(line) for line in fixture_files()[1].read_text().splitlines()]


def _patch(instance_id: str, model: str) -> str:
    return next(
        p["model_patch"] for p in PREDICTIONS if p["instance_id"] == instance_id and p["model_name_or_path"] == model
    )


def report_json(instance: SweInstance, resolved: bool, p2p_failed: tuple[str, ...] = ()) -> str:
    """grading.get_eval_report's report, as run_instance writes it."""
    f2p_ok = instance.fail_to_pass if resolved else []
    status = {
        "FAIL_TO_PASS": {"success": f2p_ok, "failure": [t for t in instance.fail_to_pass if t not in f2p_ok]},
        "PASS_TO_PASS": {
            "success": [t for t in instance.pass_to_pass if t not in p2p_failed],
            "failure": list(p2p_failed),
        },
        "FAIL_TO_FAIL": {"success": [], "failure": []},
        "PASS_TO_FAIL": {"success": [], "failure": []},
    }
    entry = {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": resolved,
        "tests_status": status,
    }
    return json.dumps({instance.instance_id: entry}, indent=4)


def harness_run(
    root: Path, model: str, graded: dict[str, tuple[bool, tuple[str, ...]]], ungraded: tuple[str, ...] = ()
) -> Path:
    """logs/run_evaluation/<run_id>/<model>/<instance_id>/ for each instance, as the harness leaves it."""
    model_dir = root / "logs" / "run_evaluation" / "run-7" / model.replace("/", "__")
    for instance in INSTANCES:
        iid = instance.instance_id
        if iid not in graded and iid not in ungraded:
            continue
        d = model_dir / iid
        d.mkdir(parents=True)
        (d / "run_instance.log").write_text(f"Container for {iid} created\n")
        (d / "patch.diff").write_text(_patch(iid, model))
        if iid in graded:
            resolved, p2p_failed = graded[iid]
            (d / "eval.sh").write_text("#!/bin/bash\nset -uxo pipefail\n")
            (d / "test_output.txt").write_text(">>>>> Start Test Output\n>>>>> End Test Output\n")
            (d / "report.json").write_text(report_json(instance, resolved, p2p_failed))
    return model_dir


BOOKNOTES, COOKIESTORE, UNITCONV = (i.instance_id for i in sorted(INSTANCES, key=lambda i: i.instance_id))


def test_a_run_directory_is_read_as_trials(tmp_path: Path) -> None:
    run_dir = harness_run(tmp_path, "agent-a", {BOOKNOTES: (True, ()), UNITCONV: (False, ())}, ungraded=(COOKIESTORE,))
    run = read_run_dir(run_dir, INSTANCES)
    assert (run.run_id, run.model) == ("run-7", "agent-a")
    assert [(t.trial_id, t.harness_resolved) for t in run.trials] == [
        (f"{BOOKNOTES}#0", True),
        (f"{UNITCONV}#0", False),
    ]
    assert run.trials[0].patch == _patch(BOOKNOTES, "agent-a")
    assert list(run.ungraded) == [COOKIESTORE] and "run_instance.log" in run.ungraded[COOKIESTORE]
    booknotes = next(i for i in INSTANCES if i.instance_id == BOOKNOTES)
    assert run.reports[BOOKNOTES].passed == frozenset(booknotes.t0)
    assert run.reports[UNITCONV].failed == frozenset(
        next(i for i in INSTANCES if i.instance_id == UNITCONV).fail_to_pass
    )


def test_a_model_name_with_a_slash_is_read_back(tmp_path: Path) -> None:
    run_dir = harness_run(tmp_path, "agent-a", {BOOKNOTES: (True, ())})
    renamed = run_dir.with_name("org__agent-a")
    run_dir.rename(renamed)
    assert read_run_dir(renamed, INSTANCES).model == "org/agent-a"


def test_tests_status_against_vouchs_run() -> None:
    report = HarnessReport("x", True, True, frozenset({"a", "b", "c", "d"}), frozenset({"e", "f"}), True)
    diffs = compare_tests_status(report, failed={"b", "e", "g"}, skipped={"c", "f"})
    assert [(d.test, d.harness, d.vouch) for d in diffs] == [("b", "pass", "fail")]
    diffs = compare_tests_status(report, failed=set())
    assert [(d.test, d.harness, d.vouch) for d in diffs] == [("e", "fail", "pass"), ("f", "fail", "pass")]


def _bad_report(tmp_path: Path, text: str) -> Path:
    run_dir = harness_run(tmp_path, "agent-a", {BOOKNOTES: (True, ())})
    (run_dir / BOOKNOTES / "report.json").write_text(text)
    return run_dir


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{oops", "report.json: not JSON"),
        ('{"other": {}}', f"no object under {BOOKNOTES!r}"),
        (json.dumps({BOOKNOTES: {"resolved": "yes"}}), "'resolved' is 'yes', not true or false"),
        (json.dumps({BOOKNOTES: {"resolved": True, "tests_status": []}}), "'tests_status' is list, not an object"),
        (
            json.dumps({BOOKNOTES: {"resolved": True, "tests_status": {"FAIL_TO_PASS": {"success": "t"}}}}),
            "tests_status.FAIL_TO_PASS.success is not a list of test ids",
        ),
    ],
)
def test_malformed_reports_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        read_run_dir(_bad_report(tmp_path, text), INSTANCES)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_directories_that_are_not_a_model_run(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        read_run_dir(tmp_path / "missing", INSTANCES)
    run_dir = harness_run(tmp_path, "agent-a", {BOOKNOTES: (True, ())})
    with pytest.raises(UsageError, match=r"it holds model directories: give .*agent-a"):
        read_run_dir(run_dir.parent, INSTANCES)
    (run_dir / "astropy__astropy-12907").mkdir()
    with pytest.raises(UsageError, match="astropy__astropy-12907/ is not an instance of the instances file"):
        read_run_dir(run_dir, INSTANCES)


def _vouch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vouch", *args], capture_output=True, text=True, timeout=900, cwd=cwd)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--run-dir", "nowhere"], "--run-dir nowhere: no such directory"),
        (["--run-dir", "nowhere", "--predictions", "p.jsonl"], "--run-dir takes the place of --predictions"),
    ],
)
def test_cli_bad_run_dir_exits_2_with_one_line(visible_tmp: Path, extra: list[str], message: str) -> None:
    done = _vouch("audit", "swe", "--instances", str(fixture_files()[0]), *extra, cwd=visible_tmp)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.strip().count("\n") <= 1, done.stderr


@pytest.mark.slow
def test_cli_audits_the_resolved_trials_and_reports_tests_status(visible_tmp: Path) -> None:
    materialise_fixture_repo("booknotes", visible_tmp / "repos" / "booknotes")
    booknotes = next(i for i in INSTANCES if i.instance_id == BOOKNOTES)
    flaky = booknotes.pass_to_pass[0]
    # The harness's run saw one PASS_TO_PASS test fail (a flaky test) where vouch's run passes it;
    # unitconv was not resolved, so it is not audited.
    run_dir = harness_run(visible_tmp, "agent-b", {BOOKNOTES: (True, (flaky,)), UNITCONV: (False, ())})
    out = visible_tmp / "audit.json"
    done = _vouch(
        "audit", "swe", "--instances", str(fixture_files()[0]), "--run-dir", str(run_dir),
        "--repo-root", str(visible_tmp / "repos"), "--json", str(out), "--mutants", "0", "--k", "1",
        "--cache", str(visible_tmp / "cache"), "--store", str(visible_tmp / "store.sqlite"), "--progress", "none",
        cwd=visible_tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    body = json.loads(out.read_text())
    assert [(t["trial_id"], t["model"], t["benchmark_pass"]) for t in body["trials"]] == [
        (f"{BOOKNOTES}#0", "agent-b", True)
    ]
    run = body["config"]["run_dir"]
    assert (run["run_id"], run["graded"], run["resolved"], run["audited"]) == ("run-7", 2, 1, 1)
    (row,) = run["tests_status"]
    assert row["vouch_ran_t0"] and row["disagreements"] == [{"test": flaky, "harness": "fail", "vouch": "pass"}]
    assert "1 with a test the harness and vouch judged differently" in " ".join(done.stdout.split())
