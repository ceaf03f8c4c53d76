"""The SWE form's lightweight mode (TestJack Algorithm 1) on the bundled fixtures: seeded rounds,
a witness confirmed on the sampled trial refuting another trial by replay, the per-trial store
key kept, the CLI end to end, and the edge cases (one trial, no trial passing T0)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[1] / "agent"))  # loopback.py, shared with tests/agent
from loopback import KEY, OpenAIServer, Turn, audit_call, call, first_user

from _scratch import scratch_root
from vouch.agent import HarnessConfig, RetryPolicy, get_provider, load_prices
from vouch.audit import SWE_PRELOAD, AuditResults, TrialResult, Verdict, WitnessAgent
from vouch.audit.repository._audit import _config_key, audit_swe
from vouch.audit.repository._lightweight import T1_NOTE
from vouch.audit.repository._model import SweAuditConfig
from vouch.errors import UsageError
from vouch.exec import LocalExecutor
from vouch.swebench import SweInstance, SweTrial, fixture_files, load_instances, load_predictions
from vouch.swebench import materialise_fixture_repo as build_repo
from vouch.worlds import WorldCache

pytestmark = pytest.mark.slow

COOKIES = "vouch-fixtures__cookiestore-1"


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    path = scratch_root() / f"swe-lw-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    for name in ("cookiestore", "unitconv"):
        build_repo(name, path / "repos" / name)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as pool:
        yield pool


def _fixture(repo: str) -> tuple[list[SweInstance], list[SweTrial]]:
    instances = [i for i in load_instances(fixture_files()[0]) if i.repo == repo]
    trials = [t for t in load_predictions(fixture_files()[1]) if t.instance_id == instances[0].instance_id]
    return instances, trials


def _twin(trial: SweTrial, n: int) -> SweTrial:
    """The same defect in another patch: a comment reworded, so the patch hash differs."""
    patch = trial.patch.replace("# Dots around the domain are not significant.", "# Leading dots do not matter.")
    assert patch != trial.patch
    return trial.model_copy(update={"trial_id": f"{trial.instance_id}#{n}", "model": "agent-z", "patch": patch})


def _audit(
    scratch: Path, executor: LocalExecutor, instances: list[SweInstance], trials: list[SweTrial], **options: object
) -> AuditResults:
    config = replace(SweAuditConfig(repo_root=scratch / "repos", mutants=0, k=1, mode="lightweight"), **options)
    return audit_swe(instances, trials, executor=executor, cache=WorldCache(scratch / "worlds"), config=config)


@pytest.fixture(scope="module")
def shared(scratch: Path, executor: LocalExecutor) -> AuditResults:
    """cookiestore's widening trial (#0), a twin of it (#7) and the sound trial (#2): one round,
    whose seeded draw is #0."""
    instances, trials = _fixture("cookiestore")
    widening, _, sound = trials
    return _audit(scratch, executor, instances, [widening, _twin(widening, 7), sound], rounds=1, seed=0)


def _of(results: AuditResults, trial_id: str) -> TrialResult:
    return next(t for t in results.trials if t.trial_id == trial_id)


def test_witness_of_the_sampled_trial_refutes_its_twin_by_replay(shared: AuditResults) -> None:
    (report,) = shared.tasks
    assert shared.mode == "lightweight" and report.note is not None and "task analysis adds" in report.note
    zero, first = report.rounds
    sampled, twin, sound = (_of(shared, f"{COOKIES}#{n}") for n in (0, 7, 2))
    assert first.trial_id == sampled.trial_id and sampled.verdict is Verdict.REFUTED
    assert first.program_hash == sampled.program_hash
    assert first.refuted == [twin.trial_id] and len(first.witnesses) == len(sampled.witnesses) >= 1
    assert first.replayed == len(first.witnesses) * 2  # on the twin and the sound trial
    assert all(w.found_on == sampled.trial_id for w in sampled.witnesses)
    assert twin.verdict is Verdict.REFUTED and twin.shared_from is None
    assert [w.source for w in twin.witnesses] == [w.source for w in sampled.witnesses]
    for witness in twin.witnesses:
        v = witness.validation
        assert witness.found_on == sampled.trial_id and v.valid and v.rejudged and v.fails_by_assertion
        assert [r.outcome for r in v.reference_runs] == ["pass"] * 3
        assert [r.outcome for r in v.model_runs] == ["fail"] * 3
        assert sampled.trial_id in witness.defect and "expected None" in (witness.actual or "")
    assert twin.reason == twin.witnesses[0].defect
    # The sound trial passes the shared witness, and was never audited on its own.
    assert sound.verdict is Verdict.SOUND and sound.benchmark_pass and not sound.witnesses
    t1 = len(zero.witnesses)
    assert sound.reason == f"lightweight: not sampled; passes T1 and every shared witness ({t1 + 1} tests)"
    assert "mutation" not in sound.evidence.steps and sound.evidence.t0[0].passed
    assert (shared.summary.refuted, report.refuted, report.passing) == (2, 2, 3)
    # Round 0: T0 in the three worlds, then T1's tests (none of which these three trials fail).
    assert zero.round == 0 and zero.trial_id is None and zero.witnesses and zero.refuted == []
    assert zero.replayed == t1 * 3 and zero.executions > 3
    assert first.executions > 0


def test_task_analysis_refutes_a_trial_missing_a_change_of_g_t0_never_checks(
    scratch: Path, executor: LocalExecutor
) -> None:
    """cookiestore #1 leaves import_records alone (P: it must keep secure and expires); T0 imports
    records without either. T1 holds G's answer on varied import_records calls: round 0 refutes it."""
    instances, trials = _fixture("cookiestore")
    out = _audit(scratch, executor, instances, trials, rounds=0)
    (report,) = out.tasks
    (zero,) = report.rounds
    assert zero.refuted == [f"{COOKIES}#1"]
    assert any(re.match(r"test_\w+_[0-9a-f]{8}\.py", w) and "import_records(" in w for w in zero.witnesses)
    missing = _of(out, f"{COOKIES}#1")
    assert missing.verdict is Verdict.REFUTED
    for witness in missing.witnesses:
        v = witness.validation
        assert witness.found_on == "task analysis" and v.valid and v.rejudged and v.fails_by_assertion
        assert [r.outcome for r in v.reference_runs] == ["pass"] * 3
        assert [r.outcome for r in v.model_runs] == ["fail"] * 3
        assert "a test of task analysis, round 0" in witness.defect
    assert missing.evidence.steps[-1] == "lightweight: T1's tests (task analysis) replayed (round 0)"
    for n in (0, 2):  # not sampled (no rounds), not caught by T1
        assert _of(out, f"{COOKIES}#{n}").verdict is Verdict.SOUND


def test_same_seed_same_rounds(scratch: Path, executor: LocalExecutor) -> None:
    instances, trials = _fixture("cookiestore")

    def rounds(seed: int) -> tuple[list[object], list[Verdict]]:
        out = _audit(scratch, executor, instances, trials, rounds=2, seed=seed)
        return [r.model_copy(update={"executions": 0}) for r in out.tasks[0].rounds], [t.verdict for t in out.trials]

    first, again = rounds(5), rounds(5)
    assert first == again
    assert [r.round for r in first[0]] == [0, 1, 2]  # type: ignore[attr-defined]


def test_one_trial_and_none_passing(scratch: Path, executor: LocalExecutor) -> None:
    instances, trials = _fixture("unitconv")
    stage, *_, failing = trials  # #0 misses a stage of the feature; #3 fails T0
    one = _audit(scratch, executor, instances, [stage], gold_mutants=0)
    assert [r.round for r in one.tasks[0].rounds] == [0, 1]  # the active set is empty after one round
    assert one.tasks[0].rounds[1].trial_id == stage.trial_id and one.tasks[0].rounds[1].refuted == []
    assert one.trials[0].verdict is Verdict.REFUTED
    # With G's mutants, T1 holds the probes that tell them from G: the missing long form is
    # caught in round 0, and no round is left to draw.
    caught = _audit(scratch, executor, instances, [stage])
    assert [r.round for r in caught.tasks[0].rounds] == [0] and caught.trials[0].verdict is Verdict.REFUTED
    inputs = [w.input for w in caught.trials[0].witnesses]
    assert (
        inputs
        and len(set(inputs)) == len(inputs)
        and all(w.found_on == "task analysis" for w in caught.trials[0].witnesses)
    )
    assert all(w.why_t0_misses.startswith("T0 does not tell G from its mutant") for w in caught.trials[0].witnesses)
    none = _audit(scratch, executor, instances, [failing])
    assert none.tasks[0].rounds == [] and "no trial passes T0" in (none.tasks[0].note or "")
    assert none.trials[0].verdict is Verdict.NOT_PASSING


def test_a_sampled_audit_that_errors_is_a_round_and_the_next_goes_on(scratch: Path, executor: LocalExecutor) -> None:
    """The agent source: the auditing model fails on the first sampled trial (HTTP 500), gives up
    on the second; both rounds are recorded, the first with its error in the instance's note."""
    failing: list[str] = []

    def script(body: dict[str, object]) -> Turn:
        if audit_call(body) != "witness":
            return Turn(text="no checklist today")  # the offline checklist stands
        found = re.match(r"Trial (\S+) of instance", first_user(body))
        trial = found.group(1) if found else "?"
        failing[:] = failing or [trial]
        return Turn(status=500) if trial == failing[0] else call("give_up", {"reason": "no defect found"})

    instances, trials = _fixture("cookiestore")
    dropped, sound = trials[1], trials[2]
    config = SweAuditConfig(
        repo_root=scratch / "repos",
        mutants=0,
        k=1,
        mode="lightweight",
        rounds=3,
        witness_source="agent",
        agent_model="openai/scripted",
        witness_dir=scratch / "agent-witnesses",
    )
    with OpenAIServer(script) as server:
        provider = get_provider("openai/scripted", retry=RetryPolicy(max_retries=0), base_url=server.url, api_key=KEY)
        agent = WitnessAgent(provider, HarnessConfig(name="witness"), load_prices())
        out = audit_swe(
            instances,
            [dropped, sound],
            executor=executor,
            cache=WorldCache(scratch / "worlds"),
            config=config,
            agent=agent,
        )
    (report,) = out.tasks
    assert T1_NOTE in (report.note or "") and report.rounds[0].witnesses == [], "the agent source: T1 = T0"
    assert [r.round for r in report.rounds] == [0, 1, 2]  # two passing trials: two rounds, then none left
    first, second = report.rounds[1:]
    assert first.trial_id == failing[0] and first.witnesses == [] and first.refuted == [] and first.replayed == 0
    errored, other = _of(out, first.trial_id), _of(out, str(second.trial_id))
    assert errored.verdict is Verdict.ERROR and errored.benchmark_pass
    assert (errored.reason or "").startswith("the auditing model failed")
    assert f"round 1: the audit of {first.trial_id} failed" in (report.note or "")
    assert (first.error or "").startswith("the auditing model failed") and second.error is None
    assert other.verdict is Verdict.SOUND and other.reason == "no agent witness: the agent gave up: no defect found"
    assert out.summary.error == 1 and out.mode == "lightweight"


def test_store_key_and_bad_settings() -> None:
    (instance,), _ = _fixture("unitconv")
    per_trial = SweAuditConfig()
    # The key a per-trial audit had before the modes existed: the fields then, and nothing else.
    before = per_trial.to_dict()
    assert "mode" not in before and _config_key(per_trial, instance) == _key_of(before, instance)
    assert _config_key(replace(per_trial, rounds=5), instance) == _config_key(per_trial, instance)
    lightweight = replace(per_trial, mode="lightweight")
    assert _config_key(lightweight, instance) != _config_key(per_trial, instance)
    assert _config_key(replace(lightweight, rounds=5), instance) != _config_key(lightweight, instance)
    for bad, message in [
        (replace(per_trial, mode="sampled"), "--mode 'sampled'"),
        (replace(per_trial, mode="static"), "is built for the function form"),
        (replace(lightweight, witness_source="files", witness_files=Path(".")), "already runs every file"),
        (replace(lightweight, rounds=-1), "--rounds -1"),
    ]:
        with pytest.raises(UsageError, match=message):
            audit_swe([instance], [], executor=None, config=bad)  # type: ignore[arg-type]


def _key_of(parts: dict[str, object], instance: SweInstance) -> str:
    import hashlib

    import vouch

    kept = {k: v for k, v in parts.items() if k not in ("repo_root", "witness_dir", "agent_model", "agent_config")}
    text = repr(sorted(kept.items())) + vouch.__version__ + instance.model_dump_json(exclude_none=True)
    return hashlib.sha256(text.encode()).hexdigest()


def test_cli_lightweight_end_to_end(scratch: Path) -> None:
    instances_file, predictions_file = fixture_files()
    rows = [json.loads(line) for line in instances_file.read_text().splitlines()]
    work = scratch / "cli"
    work.mkdir()
    (work / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["repo"] == "unitconv"))
    preds = [json.loads(line) for line in predictions_file.read_text().splitlines()]
    unitconv = [p for p in preds if p["instance_id"] == "vouch-fixtures__unitconv-1"]
    (work / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in unitconv))
    out = work / "out" / "audit.json"
    args = [
        sys.executable, "-m", "vouch", "audit", "swe", "--instances", str(work / "instances.jsonl"),
        "--predictions", str(work / "predictions.jsonl"), "--repo-root", str(scratch / "repos"),
        "--json", str(out), "--mutants", "0", "--k", "1", "--cache", str(work / "cache"),
        "--store", str(work / "store.sqlite"), "--mode", "lightweight", "--rounds", "1", "--seed", "3",
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=work)
    assert done.returncode == 0, done.stderr
    assert f"[{len(unitconv)}/{len(unitconv)}]" in done.stderr
    data = json.loads(out.read_text())
    assert data["mode"] == "lightweight" and data["config"]["mode"] == "lightweight"
    assert data["config"]["rounds"] == 1 and data["seed"] == 3
    (task,) = data["tasks"]
    assert [r["round"] for r in task["rounds"]] == [0, 1]
    sampled = task["rounds"][1]["trial_id"]
    verdicts = {t["trial_id"]: t["verdict"] for t in data["trials"]}
    assert verdicts["vouch-fixtures__unitconv-1#3"] == "not_passing"
    for trial in data["trials"]:
        if trial["benchmark_pass"] and trial["trial_id"] != sampled and not trial["witnesses"]:
            assert trial["verdict"] == "sound" and trial["reason"].startswith("lightweight: not sampled")
    assert set(data["summary"]) >= {"trials", "passing", "refuted", "corrected_resolution_rate"}
    stages = data["config"]["stage_run_seconds"]
    assert {"T0 in R[G] and R", "T0 in R[s]", "task analysis: T1 in R[G]"} <= set(stages)
    assert sum(data["config"]["stage_runs"].values()) == data["summary"]["executions"]
    # The per-trial audit of the same trials, and the comparison with its cost.
    per_trial = work / "out" / "per-trial.json"
    swap = {str(out): str(per_trial), str(work / "store.sqlite"): str(work / "pt.sqlite")}
    pt_args = [swap.get(a, a) for a in args[:-6]] + ["--seed", "3"]
    pt = subprocess.run(pt_args, capture_output=True, text=True, timeout=600, cwd=work)
    assert pt.returncode == 0, pt.stderr
    compared = work / "out" / "compare.json"
    cmp = subprocess.run(
        [sys.executable, "-m", "vouch", "audit", "compare", str(per_trial), str(out), "--json", str(compared)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=work,
    )
    assert cmp.returncode == 0, cmp.stderr
    summary = json.loads(compared.read_text())["summary"]
    assert summary["cost_basis"] == "run-seconds beyond T0" and summary["cost_ratio"] is not None
    assert summary["per_trial_refuted"] >= 1 and summary["recall"] is not None
    # Run again: the instance resumes whole from the store, its rounds with it.
    again = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=work)
    assert again.returncode == 0, again.stderr
    second = json.loads(out.read_text())
    assert second["config"]["resumed_programs"] == len(unitconv) and second["summary"]["executions"] == 0
    assert second["tasks"][0]["rounds"] == task["rounds"]
    assert [t["verdict"] for t in second["trials"]] == [t["verdict"] for t in data["trials"]]
    bad = subprocess.run([*args[:-6], "--mode", "lightweight", "--witness-source", "files", "--witness-files", "."],
                         capture_output=True, text=True, timeout=120, cwd=work)  # fmt: skip
    assert bad.returncode == 2 and "already runs every file" in bad.stderr and "Traceback" not in bad.stderr
