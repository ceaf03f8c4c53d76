"""The witness-source registry: one module and one registry line make a new source."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vouch.audit import PRELOAD, AuditConfig, Verdict, audit_humaneval
from vouch.audit._model import Witness
from vouch.audit._sources import SOURCES, WitnessSource, source
from vouch.cli._audit import humaneval
from vouch.errors import UsageError
from vouch.exec import LocalExecutor

MODULE = """
def search(run):
    for job in run.jobs:
        job.note = f"searched by mine ({len(run.contexts[job.task_id].asserts)} T0 asserts seen)"
    return run.on_judged
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
    assert trial.verdict is Verdict.SOUND and "searched by mine (4 T0 asserts seen)" in (trial.reason or "")
    assert results.witness_source == "mine"
    sys.modules.pop("my_source", None)


def test_names_users_see_come_from_the_registry() -> None:
    option = next(p for p in humaneval.params if p.name == "witness_source")
    assert list(option.type.choices) == list(SOURCES)  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="valid sources: offline, files, agent"):
        source("oracle")
    with pytest.raises(ValueError, match="not a witness source"):
        Witness.model_validate(
            {
                "file": "f",
                "source": "s",
                "clause": "c",
                "origin": "oracle",
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
