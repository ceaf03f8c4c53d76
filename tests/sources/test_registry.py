"""The source registry: one entry per benchmark source, read by every path that needs the source.

``vouch data build`` (its pool's preload), the pools that decide a source's cases
(``vouch.bench.preload_for``), the sealed pools (``vouch.bench.sealed_paths``) and the hidden
answers (``answer_data_paths``) all read ``SOURCES``; a source known there alone is enough.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from vouch import corpora
from vouch.bench import PRELOAD, SEALED_PACKAGES, preload_for, sealed_paths
from vouch.cli import _data
from vouch.errors import UsageError
from vouch.sources import SOURCES, AnswerFiles, SourceEntry, answer_data_paths, build_source, source_entry

TOY = SourceEntry(
    "vouch.sources._probe",
    (),
    "nothing to install",
    build_preload=("vouch.sources._probe",),
    decide_preload=("vouch.sources._probe", "vouch.sources._probe:probe"),
    sealed_packages=("email",),
    answers=(AnswerFiles("email", "mime"),),
)
"""A source that is in the registry and nowhere else."""


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(SOURCES, "toy", TOY)
    return TOY


def _task(benchmark: str, replay: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(spec=SimpleNamespace(replay=replay, source=SimpleNamespace(benchmark=benchmark)))


@pytest.mark.parametrize("name", ["", "nosuch", "HumanEval", "swebench", "agentdojo-injection", " tau2"])
def test_an_unknown_source_is_one_error_that_lists_the_valid_ones(name, tmp_path):
    for call in (lambda: source_entry(name), lambda: build_source(name, tmp_path / "out")):
        with pytest.raises(UsageError) as raised:
            call()
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith(f"unknown source {name!r}; valid sources: ")
        assert message.endswith(", ".join(sorted(SOURCES)))
    assert not (tmp_path / "out").exists()


def _has_function(module: str, function: str) -> bool:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    tree = ast.parse(Path(spec.origin).read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == function for n in tree.body)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_entry_names_what_exists(name):
    entry = SOURCES[name]
    assert entry.install and all(entry.packages), name
    assert _has_function(entry.module, "build"), f"{entry.module} has no build()"
    for target in (*entry.build_preload, *entry.decide_preload):
        module, _, function = target.partition(":")
        assert importlib.util.find_spec(module) is not None, target
        assert not function or _has_function(module, function), target
    for answers in entry.answers:
        assert answers.directory, name


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_data_build_preloads_what_each_entry_says(name, tmp_path, monkeypatch):
    assert _build_pool_preload(name, tmp_path, monkeypatch) == [*PRELOAD, *SOURCES[name].build_preload]


def test_a_source_in_the_registry_alone_is_enough_for_data_build(toy, tmp_path, monkeypatch):
    assert _build_pool_preload("toy", tmp_path, monkeypatch) == [*PRELOAD, "vouch.sources._probe"]


class _Started(Exception):
    """Raised by the stand-in pool: the build got as far as starting its pool."""


def _build_pool_preload(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The preload ``vouch data build SOURCE`` starts its pool with, through the command's own code."""
    started: list[list[str]] = []

    def pool(*, preload, allow_weak):
        started.append(list(preload))
        raise _Started

    monkeypatch.setattr(_data, "LocalExecutor", pool)
    monkeypatch.setattr(corpora, "hide_data_from_runs", lambda: None)
    unset = "suite_version subset limit domains split db_blind_attacks instances_file predictions_file"
    unset += " problems_file labels_file repo_root environments_file cache_dir env_dir timeout workers progress_mode"
    options = dict.fromkeys(unset.split())
    assert _data.build.callback is not None
    with pytest.raises(_Started):
        _data.build.callback(
            source=source,
            out_dir=tmp_path / "out",
            seed=0,
            categories=(),
            force=False,
            no_check=True,
            allow_weak_isolation=False,
            repo_map=(),
            python_paths=(),
            only=(),
            **options,
        )
    return started[0]


def test_data_build_offers_every_registered_source():
    (source,) = [p for p in _data.build.params if p.name == "source"]
    assert list(source.type.choices) == sorted([*SOURCES, "swebench"])  # type: ignore[attr-defined]


def test_deciding_pools_preload_what_the_entries_say(toy):
    assert preload_for([_task("toy")]) == [*PRELOAD, *TOY.decide_preload]
    # A task of another builder whose replay entry is in the source's module gets it too.
    assert preload_for([_task("other", "vouch.sources._probe:replay")]) == [*PRELOAD, *TOY.decide_preload]
    # Then the modules of the tasks' replay entries, once each.
    both = preload_for([_task("toy"), _task("tau2", "vouch.sources.tau2._replay:replay")])
    assert both == [*PRELOAD, *TOY.decide_preload, "vouch.sources.tau2._replay"]
    assert preload_for([_task("nobody's", "vouch.sources._x:replay")]) == [*PRELOAD, "vouch.sources._x"]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_source_decide_preload_comes_first_for_its_tasks(name):
    assert preload_for([_task(name)])[: len(PRELOAD) + len(SOURCES[name].decide_preload)] == [
        *PRELOAD,
        *SOURCES[name].decide_preload,
    ]


def test_agentdojo_is_decided_in_a_lean_pool():
    lean = "vouch.sources.agentdojo._lean"
    assert preload_for([_task("agentdojo")]) == [
        *PRELOAD,
        f"{lean}:install",
        "vouch.sources.agentdojo._source",
        "vouch.sources.agentdojo._world:warm",
        f"{lean}:restore",
    ]


def test_sealed_packages_and_answers_come_from_the_entries(toy):
    assert SEALED_PACKAGES == ("agentdojo", "tau2")
    email = importlib.util.find_spec("email")
    assert email is not None and email.submodule_search_locations
    (where,) = [str(Path(p).resolve()) for p in email.submodule_search_locations]
    assert where in sealed_paths()
    assert str(Path(where, "mime").resolve()) in answer_data_paths()
