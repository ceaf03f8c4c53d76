"""The repository form's store key: a stored verdict answers only for the same P, T0, G, base
commit, trial, options, option files and vouch."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from vouch.audit import SWE_PRELOAD, Verdict
from vouch.audit.repository._audit import _config_key, audit_swe
from vouch.audit.repository._model import SweAuditConfig
from vouch.exec import LocalExecutor
from vouch.store import AuditStore
from vouch.swebench import fixture_files, load_instances, load_predictions, materialise_fixture_repo
from vouch.worlds import WorldCache


def _instance(repo: str = "cookiestore"):  # type: ignore[no-untyped-def]
    return next(i for i in load_instances(fixture_files()[0]) if i.repo == repo)


@pytest.mark.parametrize(
    "change",
    [
        {"patch": "diff --git a/x b/x\n"},
        {"test_patch": ""},
        {"fail_to_pass": ["tests/test_x.py::test_other"]},
        {"pass_to_pass": []},
        {"problem_statement": "another issue"},
        {"base_commit": "0123456789abcdef"},
    ],
    ids=["G", "test-patch", "fail-to-pass", "pass-to-pass", "P", "base-commit"],
)
def test_the_key_covers_the_instance(change: dict[str, object]) -> None:
    spec = _instance()
    config = SweAuditConfig()
    assert _config_key(config, spec) != _config_key(config, spec.model_copy(update=change))
    assert _config_key(config, spec) == _config_key(config, spec.model_copy())


def test_the_key_covers_what_the_option_files_hold(tmp_path: Path) -> None:
    spec = _instance()
    folder = tmp_path / "witnesses" / spec.instance_id
    folder.mkdir(parents=True)
    (folder / "test_a.py").write_text("def test_a():\n    assert 1\n")
    agent = tmp_path / "agent.toml"
    agent.write_text("temperature = 0\n")
    config = SweAuditConfig(witness_source="files", witness_files=tmp_path / "witnesses", agent_config=str(agent))
    before = _config_key(config, spec)
    (folder / "test_a.py").write_text("def test_a():\n    assert 2\n")
    after_witness = _config_key(config, spec)
    agent.write_text("temperature = 1\n")
    assert len({before, after_witness, _config_key(config, spec)}) == 3


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    root = Path(__file__).resolve().parents[1] / ".scratch"
    if str(root).startswith(("/tmp/", "/var/tmp/")):
        root = Path("/var/lib/vouch-test-scratch")
    path = root / f"swe-key-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    materialise_fixture_repo("cookiestore", path / "repos" / "cookiestore")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_instances_that_differ_only_in_g_share_no_stored_verdict(scratch: Path) -> None:
    """The same trial, the same store: refuted against the instance's G; against an instance whose
    G is the trial's own patch, judged anew (no witness can tell the two apart), never the stored
    refutation."""
    spec = _instance()
    [trial] = [t for t in load_predictions(fixture_files()[1]) if t.trial_id == f"{spec.instance_id}#0"]
    other = spec.model_copy(update={"patch": trial.patch})
    config = SweAuditConfig(repo_root=scratch / "repos", mutants=0, k=1)
    store = AuditStore(scratch / "store.sqlite")
    try:
        with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
            runs = [
                audit_swe(
                    [inst], [trial], executor=executor, cache=WorldCache(scratch / "worlds"), config=config, store=store
                )
                for inst in (spec, other)
            ]
    finally:
        store.close()
    first, second = (r.trials[0] for r in runs)
    assert first.verdict is Verdict.REFUTED
    assert second.verdict is Verdict.SOUND and runs[1].config["resumed_programs"] == 0
