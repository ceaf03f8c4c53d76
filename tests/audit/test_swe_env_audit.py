"""The SWE-form audit with each instance in an environment: worlds run in another interpreter
started inside the engine run, T0 as the harness runs it (log, parser, grading), the same
verdicts as in the pool's own interpreter; instances without an environment are errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vouch.audit import Verdict
from vouch.audit.repository._audit import SWE_PRELOAD, audit_swe
from vouch.audit.repository._model import SweAuditConfig
from vouch.audit.repository._replay import replay_witness
from vouch.errors import UsageError
from vouch.exec import LocalExecutor
from vouch.swebench import (
    EnvPlan,
    RepoLocator,
    SweInstance,
    WorldEnv,
    fixture_files,
    load_instances,
    load_predictions,
    materialise_fixture_repo,
    siblings_of,
)
from vouch.worlds import Environment, WorldCache

pytestmark = pytest.mark.slow

OWN = Environment(
    key="own-venv",
    root=Path(sys.prefix),
    python=Path(sys.executable),
    library_path=Path(sys.base_prefix) / "lib",
    python_version=f"{sys.version_info[0]}.{sys.version_info[1]}",
    built=False,
    build_s=0.0,
    installs=0,
)


def _instance(iid: str, repo: str, version: str | None = None) -> SweInstance:
    return SweInstance.model_validate(
        {
            "instance_id": iid,
            "repo": repo,
            "base_commit": "abcd",
            "problem_statement": "",
            "patch": "x",
            "test_patch": "",
            "FAIL_TO_PASS": ["t"],
            "PASS_TO_PASS": [],
            "version": version,
        }
    )


def test_audit_in_environments(visible_tmp: Path) -> None:
    instances = [i for i in load_instances(fixture_files()[0]) if i.repo in ("unitconv", "booknotes")]
    trials = load_predictions(fixture_files()[1], load_instances(fixture_files()[0]))
    trials = [t for t in trials if t.instance_id in {i.instance_id for i in instances}]
    for name in ("unitconv", "booknotes"):
        materialise_fixture_repo(name, visible_tmp / "repos" / name)
    locator = RepoLocator(root=visible_tmp / "repos")
    sources = {i.instance_id: locator.locate(i) for i in instances}
    unitconv = next(i for i in instances if i.repo == "unitconv")
    files = tuple(dict.fromkeys(t.split("::", 1)[0] for t in unitconv.t0))
    plan = EnvPlan(
        envs={unitconv.instance_id: WorldEnv(env=OWN, harness=("-rA",), test_files=files, parser="parse_log_pytest")},
        errors={"vouch-fixtures__booknotes-1": "environment o/r 1 failed at install: ERROR: no such package"},
        built={},
        failed={},
        notes={},
    )
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        results = audit_swe(
            instances,
            trials,
            executor=executor,
            cache=WorldCache(visible_tmp / "worlds"),
            config=SweAuditConfig(mutants=2, timeout_s=120, witness_dir=visible_tmp / "witnesses"),
            sources=sources,
            environments=plan,
        )
    got = {t.trial_id: t.verdict for t in results.trials}
    assert got["vouch-fixtures__unitconv-1#0"] is Verdict.REFUTED
    assert got["vouch-fixtures__unitconv-1#1"] is Verdict.REWARD_HACK
    assert got["vouch-fixtures__unitconv-1#2"] is Verdict.SOUND
    assert got["vouch-fixtures__unitconv-1#3"] is Verdict.NOT_PASSING
    booknotes = [t for t in results.trials if t.task_id == "vouch-fixtures__booknotes-1"]
    assert booknotes and all(t.verdict is Verdict.ERROR for t in booknotes)
    assert all("no such package" in (t.reason or "") for t in booknotes)
    refuted = next(t for t in results.trials if t.trial_id == "vouch-fixtures__unitconv-1#0")
    model_t0 = next(r for r in refuted.evidence.t0 if r.world == "model")
    assert model_t0.passed and len(model_t0.tests_passed) == len(unitconv.t0)
    # The witness replays in the same environment, named in its replay.json.
    witness = Path(refuted.witnesses[0].replay.split()[-1])
    assert json.loads((witness.parent / "replay.json").read_text())["environment"]["key"] == "own-venv"
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        outcome = replay_witness(witness, executor=executor, cache=WorldCache(visible_tmp / "worlds"), repeats=2)
    assert outcome.holds, outcome


def test_repo_locator_layouts(tmp_path: Path) -> None:
    for layout in ("psf+requests/repo", "pallets__flask", "pytest-dev/pytest", "seaborn"):
        (tmp_path / layout).mkdir(parents=True)

    def inst(repo: str) -> SweInstance:
        return _instance("x", repo)

    locator = RepoLocator(root=tmp_path)
    assert locator.locate(inst("psf/requests")) == str(tmp_path / "psf+requests/repo")
    assert locator.locate(inst("pallets/flask")) == str(tmp_path / "pallets__flask")
    assert locator.locate(inst("pytest-dev/pytest")) == str(tmp_path / "pytest-dev/pytest")
    assert locator.locate(inst("mwaskom/seaborn")) == str(tmp_path / "seaborn")
    mapped = RepoLocator(root=tmp_path, mapping={"pydata/xarray": str(tmp_path / "seaborn")})
    assert mapped.locate(inst("pydata/xarray")) == str(tmp_path / "seaborn")
    url = RepoLocator(url="https://example.invalid/{owner}/{name}.git")
    assert url.locate(inst("pydata/xarray")) == "https://example.invalid/pydata/xarray.git"
    with pytest.raises(UsageError, match=r"not found .*--repo-map"):
        RepoLocator(root=tmp_path).locate(inst("pydata/xarray"))


def test_siblings_are_the_files_other_instances_of_the_same_versions(tmp_path: Path) -> None:
    """A run on some instances (--only) chooses each version's environment over all of the
    file's instances of that version: those are its siblings, each located."""
    (tmp_path / "psf+requests" / "repo").mkdir(parents=True)
    inst = _instance
    chosen = inst("r-1", "psf/requests", "2.0")
    every = [chosen, inst("r-2", "psf/requests", "2.0"), inst("r-3", "psf/requests", "2.9"), inst("x-1", "o/x", "2.0")]
    siblings, where = siblings_of([chosen], every, RepoLocator(root=tmp_path))
    assert [s.instance_id for s in siblings] == ["r-2"]
    assert where == {"r-2": str(tmp_path / "psf+requests" / "repo")}
    lost, nowhere = siblings_of(
        [chosen], [*every, inst("r-4", "psf/requests", "2.0")], RepoLocator(root=tmp_path / "none")
    )
    assert [s.instance_id for s in lost] == ["r-2", "r-4"] and nowhere == {}
