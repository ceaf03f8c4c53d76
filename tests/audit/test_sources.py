"""The witness-source registry: one module and one registry line make a new source."""

from __future__ import annotations

import json
import re
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from vouch.audit import PRELOAD, SWE_PRELOAD, AuditConfig, Verdict, audit_humaneval
from vouch.audit._sources import SOURCES, WitnessSource, source
from vouch.cli._audit import function_command
from vouch.core import REGISTERED_NAME, Witness
from vouch.errors import UsageError
from vouch.exec import LocalExecutor

MODULE = """
from vouch.audit import Found

def search(run):
    return [Found(note=f"searched by mine ({len(run.contexts[j.task_id].asserts)} T0 asserts seen)") for j in run.jobs]
"""


@pytest.mark.slow
def test_a_new_source_is_one_module_and_one_registry_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_source.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(SOURCES, "mine", WitnessSource("mine", "a source of the test's own", "my_source:search"))
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        json.dumps({"task_id": "HumanEval/13", "completion": "    while b:\n        a, b = b, a % b\n    return a\n"})
        + "\n"
    )
    with LocalExecutor(workers=1, preload=PRELOAD) as executor:
        results = audit_humaneval(
            samples, executor=executor, witness_dir=tmp_path / "w", config=AuditConfig(witness_source="mine")
        )
    (trial,) = results.trials
    assert trial.verdict is Verdict.SOUND and trial.reason == "no mine witness: searched by mine (4 T0 asserts seen)"
    assert results.witness_source == "mine"
    sys.modules.pop("my_source", None)


REPO_MODULE = """
from vouch.audit import Found

def search(run):
    return Found(note=f"looked at {len(run.inst.probes)} recorded calls of {run.trial.trial_id}")

def repo_search(run):
    return search(run)
"""


@pytest.mark.slow
def test_a_new_source_for_the_repository_form_is_one_module_and_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    from _scratch import scratch_root
    from vouch.audit.repository._audit import audit_swe
    from vouch.audit.repository._model import SweAuditConfig
    from vouch.swebench import fixture_files, load_instances, load_predictions, materialise_fixture_repo
    from vouch.worlds import WorldCache

    (tmp_path / "my_repo_source.py").write_text(REPO_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    line = WitnessSource("mine", "the test's own", "my_repo_source:search", repo_search="my_repo_source:repo_search")
    monkeypatch.setitem(SOURCES, "mine", line)
    scratch = scratch_root() / f"sources-{uuid.uuid4().hex}"
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    materialise_fixture_repo("unitconv", scratch / "repos" / "unitconv")
    instances = [i for i in load_instances(fixture_files()[0]) if i.repo == "unitconv"][:1]
    trials = [t for t in load_predictions(fixture_files()[1]) if t.instance_id == instances[0].instance_id]
    config = SweAuditConfig(repo_root=scratch / "repos", mutants=0, k=1, witness_source="mine")
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        out = audit_swe(instances, trials, executor=executor, cache=WorldCache(scratch / "worlds"), config=config)
    passing = [t for t in out.trials if t.benchmark_pass]
    assert passing and out.witness_source == "mine"
    for trial in passing:
        assert trial.verdict is Verdict.SOUND
        assert "no mine witness: looked at " in (trial.reason or "") and trial.trial_id in (trial.reason or "")
        assert "witnesses:mine" in trial.evidence.steps
    sys.modules.pop("my_repo_source", None)
    monkeypatch.setitem(SOURCES, "mine", WitnessSource("mine", "function level only", "my_repo_source:search"))
    with pytest.raises(UsageError, match="mine has no repository form; vouch audit swe takes offline, files, agent"):
        audit_swe(instances, trials, executor=None, config=config)  # type: ignore[arg-type]


def test_the_results_accept_as_origin_every_registry_name() -> None:
    for name in SOURCES:
        assert re.fullmatch(REGISTERED_NAME, name), "a source's name is what the results accept as an origin"


def test_names_users_see_come_from_the_registry() -> None:
    option = next(p for p in function_command.params if p.name == "witness_source")
    assert list(option.type.choices) == list(SOURCES)  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="valid sources: offline, files, agent"):
        source("oracle")
    with pytest.raises(ValueError, match="should match pattern"):
        Witness.model_validate(
            {
                "file": "f",
                "source": "s",
                "clause": "c",
                "origin": "Oracle!",
                "defect": "d",
                "why_t0_misses": "w",
                "replay": "r",
                "validation": {
                    "reference_runs": [],
                    "model_runs": [],
                    "fails_by_assertion": True,
                    "rejudged": True,
                    "valid": True,
                },
            }
        )
