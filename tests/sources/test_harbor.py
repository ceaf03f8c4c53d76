"""Harbor job directories: trials, rewards, the task mapping, the audit plan, and the audit via SWE files.

``data/harbor/byo-job`` was written by harbor 0.25.0's own models and serialisers (installed in
a Python 3.12 venv outside the repository): ``JobConfig.model_dump_json(indent=4,
exclude_defaults=True)`` for the job's ``config.json`` and ``TrialConfig`` likewise for each
trial's, ``TrialResult.model_dump_json(indent=4)`` for each ``result.json``, as ``Job`` and
``Trial`` write them. Five trials: two passing and one failing trial of a SWE-bench task
(``booknotes-1``), a passing trial of a task that is not one (``hello-world``), and one that
timed out with no verifier result. The task directories, and the diffs the trials kept as
artifacts, are written by the tests (harbor's SWE-bench adapter layout: the instance in
``tests/config.json``, G in ``solution/solve.sh``), from vouch's bundled booknotes fixture.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vouch.errors import UsageError
from vouch.sources.trials._harbor import read_job, swe_rows
from vouch.swebench import fixture_files, load_instances, materialise_fixture_repo

JOB = Path(__file__).parent / "data" / "harbor" / "byo-job"
BOOKNOTES = next(i for i in load_instances(fixture_files()[0]) if i.repo == "booknotes")
PATCHES = {
    json.loads(line)["model_name_or_path"]: json.loads(line)["model_patch"]
    for line in fixture_files()[1].read_text().splitlines()
    if json.loads(line)["instance_id"] == BOOKNOTES.instance_id
}


def write_tasks(root: Path) -> Path:
    """The job's two tasks as harbor task directories."""
    swe = root / "booknotes-1"
    (swe / "tests").mkdir(parents=True)
    (swe / "solution").mkdir()
    (swe / "environment").mkdir()
    (swe / "instruction.md").write_text(BOOKNOTES.problem_statement + "\n")
    (swe / "task.toml").write_text('version = "1.0"\n\n[verifier]\ntimeout_sec = 3000.0\n')
    (swe / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /testbed\n")
    (swe / "tests" / "config.json").write_text(json.dumps(BOOKNOTES.model_dump(mode="json", by_alias=True), indent=2))
    (swe / "tests" / "test.sh").write_text("#!/bin/bash\ncd /testbed\ngit diff > /logs/artifacts/patch.diff\n")
    (swe / "solution" / "solve.sh").write_text(f"#!/bin/bash\ncd /testbed\ngit apply <<'EOF'\n{BOOKNOTES.patch}\nEOF\n")
    hello = root / "hello-world"
    (hello / "tests").mkdir(parents=True)
    (hello / "solution").mkdir()
    (hello / "instruction.md").write_text('Create a file called hello.txt with "Hello, world!" as its content.\n')
    (hello / "tests" / "test.sh").write_text("#!/bin/bash\npytest /tests/test_state.py\n")
    (hello / "tests" / "test_state.py").write_text("def test_hello():\n    assert open('/app/hello.txt').read()\n")
    (hello / "solution" / "solve.sh").write_text("#!/bin/bash\necho 'Hello, world!' > /app/hello.txt\n")
    return root


def job_copy(root: Path) -> Path:
    """The job under <root>/jobs, the tasks under <root>/tasks, each passing trial's diff in artifacts/."""
    job = root / "jobs" / "byo-job"
    shutil.copytree(JOB, job)
    write_tasks(root / "tasks")
    for trial, agent in (("booknotes-1__aB3dE9f", "agent-a"), ("booknotes-1__k9Lp0Zs", "agent-b")):
        (job / trial / "artifacts").mkdir(exist_ok=True)
        (job / trial / "artifacts" / "patch.diff").write_text(PATCHES[agent])
    return job


def test_a_job_is_read_and_mapped(tmp_path: Path) -> None:
    job = read_job(job_copy(tmp_path), tmp_path / "tasks")
    assert job.job_name == "byo-job"
    rows = [(t.trial_name, t.model, t.reward, t.passing, t.audit) for t in job.trials]
    assert rows == [
        ("booknotes-1__Q7rT2mX", "gpt-5", 0.0, False, False),
        ("booknotes-1__aB3dE9f", "claude-sonnet-4-5", 1.0, True, True),
        ("booknotes-1__k9Lp0Zs", "gpt-5", 1.0, True, True),
        ("hello-world__Hn4bV1c", "claude-sonnet-4-5", 1.0, True, False),
        ("hello-world__Zx8cW5e", "gpt-5", None, False, False),
    ]
    why = {t.trial_name: t.why_not for t in job.trials}
    assert why["booknotes-1__Q7rT2mX"] == "not passing (reward 0)"
    assert why["hello-world__Hn4bV1c"] is not None and "not a SWE-bench task" in why["hello-world__Hn4bV1c"]
    assert why["hello-world__Zx8cW5e"] == "not passing (no verifier reward)"
    timed_out = job.trials[-1]
    assert timed_out.exception == "AgentTimeoutError: Agent execution timed out after 900.0 seconds"
    task = job.trials[1].task
    assert task is not None and task.kind == "swe-bench" and task.swe_instance == BOOKNOTES
    assert task.instruction.strip() == BOOKNOTES.problem_statement.strip()
    assert (task.tests, task.solution) == (["config.json", "test.sh"], ["solve.sh"])
    assert job.trials[1].patch_file == "artifacts/patch.diff"


def test_audited_trials_become_swe_rows(tmp_path: Path) -> None:
    instances, trials, names = swe_rows(read_job(job_copy(tmp_path), tmp_path / "tasks"))
    assert instances == [BOOKNOTES]
    assert [(t.trial_id, t.model, t.harness_resolved) for t in trials] == [
        (f"{BOOKNOTES.instance_id}#0", "claude-sonnet-4-5", True),
        (f"{BOOKNOTES.instance_id}#1", "gpt-5", True),
    ]
    assert trials[0].patch == PATCHES["agent-a"]
    assert names == {
        f"{BOOKNOTES.instance_id}#0": "booknotes-1__aB3dE9f",
        f"{BOOKNOTES.instance_id}#1": "booknotes-1__k9Lp0Zs",
    }


def test_tasks_are_found_at_the_path_each_trial_recorded(tmp_path: Path) -> None:
    # result.json records task_id.path "tasks/booknotes-1", relative to where harbor ran (<root>).
    job = read_job(job_copy(tmp_path))
    assert [t.task.name if t.task else None for t in job.trials] == [
        "booknotes-1",
        "booknotes-1",
        "booknotes-1",
        "hello-world",
        "hello-world",
    ]
    shutil.rmtree(tmp_path / "tasks")
    job = read_job(tmp_path / "jobs" / "byo-job")
    assert job.trials[1].why_not is not None and job.trials[1].why_not.startswith("task booknotes-1 not found")


def test_which_diff_is_the_agents(tmp_path: Path) -> None:
    job_dir = job_copy(tmp_path)
    artifacts = job_dir / "booknotes-1__aB3dE9f" / "artifacts"
    (artifacts / "notes.diff").write_text("diff --git a/x b/x\n")
    assert read_job(job_dir, tmp_path / "tasks").trials[1].patch_file == "artifacts/patch.diff"
    (artifacts / "patch.diff").rename(artifacts / "other.patch")
    trial = read_job(job_dir, tmp_path / "tasks").trials[1]
    assert not trial.audit and trial.why_not is not None and "several diffs and none named patch.diff" in trial.why_not
    shutil.rmtree(artifacts)
    trial = read_job(job_dir, tmp_path / "tasks").trials[1]
    assert trial.why_not is not None and trial.why_not.startswith("no diff of the agent's changes")


def _edit_result(job_dir: Path, trial: str, **changes: object) -> None:
    path = job_dir / trial / "result.json"
    body = json.loads(path.read_text())
    body.update(changes)
    path.write_text(json.dumps(body))


def test_rewards_without_a_reward_key(tmp_path: Path) -> None:
    job_dir = job_copy(tmp_path)
    _edit_result(job_dir, "booknotes-1__aB3dE9f", verifier_result={"rewards": {"tests": 1, "lint": 0.5}})
    _edit_result(job_dir, "booknotes-1__k9Lp0Zs", verifier_result={"rewards": {"tests": 1, "lint": 0}})
    trials = read_job(job_dir, tmp_path / "tasks").trials
    assert (trials[1].reward, trials[1].passing) == (0.5, True)
    assert (trials[2].reward, trials[2].passing) == (0.0, False)


@pytest.mark.parametrize(
    ("trial", "text", "message"),
    [
        ("booknotes-1__aB3dE9f", "{oops", "result.json: not JSON"),
        ("booknotes-1__aB3dE9f", "[1]", "a JSON object was expected, got list"),
        (
            "booknotes-1__aB3dE9f",
            '{"task_name": "t"}',
            "'trial_name' is None; a harbor trial result names its trial_name",
        ),
        ("booknotes-1__aB3dE9f", '{"trial_name": "x", "task_name": ""}', "'task_name' is ''"),
        (
            "booknotes-1__aB3dE9f",
            '{"trial_name": "x", "task_name": "t", "verifier_result": {"rewards": {"reward": "1"}}}',
            "verifier_result.rewards must map names to numbers",
        ),
        (
            "booknotes-1__aB3dE9f",
            '{"trial_name": "x", "task_name": "t", "verifier_result": {"rewards": {"reward": true}}}',
            "verifier_result.rewards must map names to numbers",
        ),
        (
            "booknotes-1__aB3dE9f",
            '{"trial_name": "x", "task_name": "t", "verifier_result": 1}',
            "'verifier_result' is int",
        ),
    ],
)
def test_malformed_results_are_one_line(tmp_path: Path, trial: str, text: str, message: str) -> None:
    job_dir = job_copy(tmp_path)
    (job_dir / trial / "result.json").write_text(text)
    with pytest.raises(UsageError) as info:
        read_job(job_dir, tmp_path / "tasks")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_directories_that_are_not_a_job(tmp_path: Path) -> None:
    job_dir = job_copy(tmp_path)
    with pytest.raises(UsageError, match="no such directory"):
        read_job(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="it is a trial directory: give its parent"):
        read_job(job_dir / "booknotes-1__aB3dE9f")
    with pytest.raises(UsageError, match=r"--tasks .*: no such directory"):
        read_job(job_dir, tmp_path / "no-tasks")
    (tmp_path / "tasks" / "hello-world" / "instruction.md").unlink()
    job = read_job(job_dir, tmp_path / "tasks")  # a task that cannot be found is a trial's reason, not an error
    assert job.trials[3].why_not is not None and "task hello-world not found" in job.trials[3].why_not
    (tmp_path / "tasks" / "hello-world" / "instruction.md").write_text("x")
    (tmp_path / "tasks" / "booknotes-1" / "tests" / "config.json").write_text("{broken")
    with pytest.raises(UsageError, match=r"config\.json: not JSON"):
        read_job(job_dir, tmp_path / "tasks")


def _vouch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vouch", *args], capture_output=True, text=True, timeout=900, cwd=cwd)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["empty"], "no <trial>/result.json under it"),
        (["empty", "--audit"], "--audit needs --swe-out DIR"),
        (["empty", "--", "--repo-root", "x"], "options after -- are for --audit"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(visible_tmp: Path, args: list[str], message: str) -> None:
    (visible_tmp / "empty").mkdir()
    done = _vouch("audit", "harbor", *args, cwd=visible_tmp)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.strip().count("\n") <= 1, done.stderr


@pytest.mark.slow
def test_cli_plans_then_audits_through_swe_files(visible_tmp: Path) -> None:
    job_dir = job_copy(visible_tmp)
    plan_file, swe_dir = visible_tmp / "plan.json", visible_tmp / "swe"
    done = _vouch(
        "audit", "harbor", str(job_dir), "--tasks", str(visible_tmp / "tasks"), "--json", str(plan_file),
        "--swe-out", str(swe_dir),
        cwd=visible_tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = json.loads(plan_file.read_text())
    assert plan["kind"] == "harbor-plan" and plan["summary"] == {
        "trials": 5,
        "passing": 3,
        "audited": 2,
        "tasks_found": 2,
    }
    swe_task = next(t for t in plan["tasks"] if t["kind"] == "swe-bench")
    assert swe_task["P"] == "instruction.md" and swe_task["G"] == ["solution/solve.sh"]
    assert "3 of 5 trials pass (reward > 0); 2 would be audited" in " ".join(done.stdout.split())
    assert plan["swe_command"].startswith("vouch audit swe --instances ")
    assert {t["trial_name"]: t["swe_trial_id"] for t in plan["trials"] if t["audit"]} == {
        "booknotes-1__aB3dE9f": f"{BOOKNOTES.instance_id}#0",
        "booknotes-1__k9Lp0Zs": f"{BOOKNOTES.instance_id}#1",
    }
    # The audit itself: the written files through vouch audit swe, on the fixture repository.
    materialise_fixture_repo("booknotes", visible_tmp / "repos" / "booknotes")
    out = visible_tmp / "audit.json"
    swe_args = [
        "--repo-root", str(visible_tmp / "repos"), "--json", str(out), "--mutants", "0", "--k", "2",
        "--cache", str(visible_tmp / "cache"), "--store", str(visible_tmp / "s.sqlite"),
    ]  # fmt: skip
    done = _vouch(
        "audit", "harbor", str(job_dir), "--tasks", str(visible_tmp / "tasks"), "--swe-out", str(swe_dir),
        "--audit", "--", *swe_args,
        cwd=visible_tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    verdicts = [(t["model"], t["verdict"]) for t in json.loads(out.read_text())["trials"]]
    assert verdicts == [("claude-sonnet-4-5", "refuted"), ("gpt-5", "sound")]
    # The same files through vouch audit swe by hand: every judgement comes from the store.
    done = _vouch(
        "audit", "swe", "--instances", str(swe_dir / "instances.jsonl"), "--predictions",
        str(swe_dir / "predictions.jsonl"), *swe_args,
        cwd=visible_tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [(t["model"], t["verdict"]) for t in json.loads(out.read_text())["trials"]] == verdicts
