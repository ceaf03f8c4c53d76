"""The repository form's regression stage: the repository's own tests beyond T0.

The import graph's choice of test files on its own; then the whole per-trial audit on a small
repository the test builds, where T0 (the test patch's file) checks the fix, and another test
file, which SWE-bench never runs, checks a caller of the fixed function: a trial that passes T0
and breaks that caller is refuted by the repository's own test, a trial that keeps it stands, a
test the fix changes on purpose or that fails without any patch is left out and counted.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from _gitrepo import commit_tree, diff_of, git, write_tree
from _scratch import scratch_root
from vouch.audit import AuditResults, TrialResult, Verdict
from vouch.audit.repository._audit import SWE_PRELOAD, audit_swe
from vouch.audit.repository._model import RegressionSuite, SweAuditConfig
from vouch.audit.repository._regression import REGRESSION_CLAUSE, _one_line, _probe_mutants, related_tests
from vouch.audit.repository._witness import Probe
from vouch.core import WITNESS_STAGES, Witness
from vouch.exec import LocalExecutor
from vouch.export._repository import TOUCH_LINE, WorldRuns, append_diff, export_repository
from vouch.mutation import Location, Mutant
from vouch.swebench import Runner, SweInstance, SweTrial
from vouch.worlds import WorldCache

# --- the import graph ---------------------------------------------------------------------


def test_related_tests_follow_the_import_graph_nearest_first(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "from .api import run\n",
            "pkg/core.py": "def f():\n    return 1\n",
            "pkg/api.py": "from . import core\n\ndef run():\n    return core.f()\n",
            "pkg/other.py": "def g():\n    return 2\n",
            "tests/test_core.py": "from pkg.core import f\n",
            "tests/test_api.py": "from pkg import api\n",
            "tests/test_top.py": "import pkg\n",  # pkg/__init__ imports api, which imports core
            "tests/test_other.py": "from pkg.other import g\n",
            "tests/test_t0.py": "from pkg.core import f\n",
            "tests/data/test_input.py": "from pkg.core import f\n",  # data, not a test
            "docs/test_example.py": "from pkg.core import f\n",
            "tests/test_broken.py": "def (:\n",
        },
    )
    chosen = related_tests(root, ["pkg/core.py"], exclude={"tests/test_t0.py"}, limit=10)
    assert chosen[0] == "tests/test_core.py"  # imports the changed module, and names it
    assert set(chosen) == {"tests/test_core.py", "tests/test_api.py", "tests/test_top.py"}
    assert chosen.index("tests/test_api.py") < chosen.index("tests/test_top.py")  # nearer the change first
    assert related_tests(root, ["pkg/core.py"], exclude=set(), limit=2) == ["tests/test_core.py", "tests/test_t0.py"]
    assert related_tests(root, ["pkg/missing.py"], exclude=set(), limit=10) == []


def test_at_one_depth_the_files_naming_the_changed_functions_come_first(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "lib/__init__.py": "from .core import shift, scale\n",
            "lib/core.py": "def shift(x):\n    return x + 1\n\n\ndef scale(x):\n    return 2 * x\n",
            "tests/test_a.py": "import lib\n\n\ndef test_scale():\n    assert lib.scale(1) == 2\n",
            "tests/test_b.py": "import lib\n\n\ndef test_shift():\n    assert lib.shift(1) == lib.shift(0) + 1\n",
            "tests/test_c.py": "import lib\n",
        },
    )
    assert related_tests(root, ["lib/core.py"], set(), 3) == ["tests/test_a.py", "tests/test_b.py", "tests/test_c.py"]
    assert related_tests(root, ["lib/core.py"], set(), 2, mentions={"shift"}) == ["tests/test_b.py", "tests/test_a.py"]


def test_relative_imports_and_src_layouts_are_read(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "src/lib/__init__.py": "",
            "src/lib/sub/__init__.py": "from ..base import B\n",
            "src/lib/base.py": "class B:\n    pass\n",
            "lib_tests/test_sub.py": "import lib.sub\n",  # no test folder: not a test file
            "tests/unit/test_sub.py": "from lib import sub\n",
        },
    )
    assert related_tests(root, ["src/lib/base.py"], exclude=set(), limit=5) == ["tests/unit/test_sub.py"]


def test_a_mutants_edit_is_shown_on_one_line() -> None:
    """Dropping a literal shows the whole literal: the census keeps its start and what was done."""
    edit = '(\n    "enable-all-extensions",\n    {"help": "' + "x" * 200 + '"},\n) dropped from tuple literal'
    shown = _one_line(edit)
    assert "\n" not in shown and len(shown) <= 100
    assert shown.startswith('( "enable-all-extensions", {') and shown.endswith(") dropped from tuple literal")
    assert _one_line("42 -> 43") == "42 -> 43"


class _ScriptedRunner:
    """``Runner.call`` answering from a script: each call pops the next list of outcomes."""

    def __init__(self, *answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.overlays: list[dict[str, str] | None] = []

    def call(self, world: Any, probes: Sequence[Any], stage: str = "calls", overlay: Any = None) -> Any:
        self.overlays.append(overlay)
        answer = self.answers.pop(0)
        assert len(answer) == len(probes)
        return answer


def _answer(value: str) -> dict[str, Any]:
    return {"ok": True, "value": value, "literal": value, "exception": None}


def test_a_probe_tells_a_mutant_from_g_only_when_g_answers_it_the_same_again() -> None:
    """Under the mutant, both probes answer otherwise than R[G] did; run again without it, R[G]
    answers the first as before and the second otherwise (a nonce): only the first counts."""
    steady, nonce = (Probe("m.py", "m", "f", (repr(n),)) for n in (1, 2))
    inst = SimpleNamespace(reference=object(), probes=[(steady, _answer("'a'")), (nonce, _answer("'x1'"))])
    suite = RegressionSuite(files=[])
    mutant = Mutant("op:3:0:0", "op", Location(3, 0, 3, 1), "> -> <", "source of the mutant", "")
    runner = _ScriptedRunner([_answer("'b'"), _answer("'x2'")], [_answer("'a'"), _answer("'x3'")])
    _probe_mutants(inst, suite, runner, [("m.py", mutant)])  # type: ignore[arg-type]
    assert runner.overlays == [{"m.py": "source of the mutant"}, None]
    assert suite.gold_probed == 1
    [killer] = suite.probe_killers
    assert killer.probe is steady and killer.actual == "'b'" and killer.notes == ("m.py:3 > -> <",)
    # Only the nonce differs: the mutant is not counted.
    again = RegressionSuite(files=[])
    runner = _ScriptedRunner([_answer("'a'"), _answer("'x2'")], [_answer("'x3'")])
    _probe_mutants(inst, again, runner, [("m.py", mutant)])  # type: ignore[arg-type]
    assert again.gold_probed == 0 and again.probe_killers == []


def test_a_regression_witness_is_a_stage_and_an_origin_is_a_registry_name() -> None:
    assert WITNESS_STAGES == ("regression",)
    with pytest.raises(ValueError, match="should match pattern"):
        Witness.model_validate(
            {
                "file": "f",
                "source": "s",
                "clause": "c",
                "origin": "Made up!",
                "defect": "d",
                "why_t0_misses": "w",
                "replay": "r",
                "validation": {
                    "reference_runs": [],
                    "model_runs": [],
                    "fails_by_assertion": False,
                    "rejudged": True,
                    "valid": False,
                },
            }
        )


# --- the repository -----------------------------------------------------------------------

TEXT = """\
def slug(title, limit=80):
    return title.lower().replace(" ", "-")[:limit]


def words(text):
    return text.split()
"""
CATALOG = 'from shelf.text import slug\n\n\ndef key(author, title):\n    return f"{slug(author)}/{slug(title)}"\n'
CATALOG_TESTS = """\
from shelf.catalog import key


def test_key():
    assert key("Ann Lee", "My Book") == "ann-lee/my-book"


def test_key_keeps_digits():
    assert key("A1", "Vol 2") == "a1/vol-2"


def test_key_is_lower_case():
    made = key("ANN", "Room 101")
    assert made == made.lower()


def test_a_long_title_is_cut():
    assert key("A", "x" * 100) == "a/" + "x" * 80
"""
WORDS_TESTS = """\
import os

from shelf.text import words


def test_words():
    assert words("a b") == ["a", "b"]


def test_needs_a_service():
    assert os.environ.get("SHELF_SERVICE_URL"), "no service here"
"""
LEGACY_TESTS = """\
from shelf.text import slug


def test_double_space_gives_double_dash():
    assert slug("a  b") == "a--b"
"""
T0_TESTS = """\
from shelf.text import slug


def test_slug_collapses_spaces():
    assert slug("Big  Red   Book") == "big-red-book"


def test_slug_simple():
    assert slug("A B") == "a-b"
"""
PROBLEM = (
    "`shelf.text.slug(title)` turns each space into a dash, so `slug('a  b')` gives `'a--b'`. "
    "A run of spaces must become one dash: `slug('Big  Red   Book')` must give `'big-red-book'`."
)
GOLD = TEXT.replace(
    '    return title.lower().replace(" ", "-")[:limit]',
    '    text = "-".join(title.lower().split())\n    return text[:limit] if len(text) > limit else text',
)
# Passes T0, and drops the digits: the catalog's keys, which only tests/test_catalog.py checks, change.
DROPS_DIGITS = TEXT.replace(
    'title.lower().replace(" ", "-")', '"-".join("".join(c for c in w if c.isalpha()) for w in title.lower().split())'
)
# Passes T0 and every test of the repository, and drops numbers above 99: only the call
# slug("Room 101") that test_key_is_lower_case makes, probed against G, shows it.
DROPS_BIG_NUMBERS = TEXT.replace(
    'title.lower().replace(" ", "-")',
    '"-".join(w for w in title.lower().split() if not (w.isdigit() and int(w) > 99))',
)
KEEPS_DIGITS = "import re\n\n" + TEXT.replace(
    'title.lower().replace(" ", "-")', 're.sub(r"\\s+", "-", title.strip().lower())'
)
# Fixes the slug and drops the cut: T0's short titles never reach it; one of G's mutants does the same.
DROPS_THE_CUT = TEXT.replace('title.lower().replace(" ", "-")[:limit]', '"-".join(title.lower().split())')
# Fixes the slug and renames words(): tests/test_words.py, which imports it, no longer collects.
RENAMES_WORDS = KEEPS_DIGITS.replace("def words(text):", "def split_words(text):")


def _make_repo(root: Path, extra: dict[str, str] | None = None, drop: Collection[str] = ()) -> tuple[Path, str]:
    repo = root / "repos" / "shelf"
    files = {
        "shelf/__init__.py": "",
        "shelf/text.py": TEXT,
        "shelf/catalog.py": CATALOG,
        "tests/__init__.py": "",
        "tests/test_catalog.py": CATALOG_TESTS,
        "tests/test_words.py": WORDS_TESTS,
        "tests/test_legacy.py": LEGACY_TESTS,
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
    }
    kept = {path: text for path, text in files.items() if path not in drop}
    return repo, commit_tree(repo, (extra or {}) | kept, "shelf")


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    path = scratch_root() / f"swe-regression-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as pool:
        yield pool


@dataclass
class Audited:
    results: AuditResults
    row: dict[str, Any]
    """The instance as an instances file holds it."""
    instance: SweInstance
    trials: list[SweTrial]
    cache: WorldCache


def _audit(
    scratch: Path,
    executor: LocalExecutor,
    name: str,
    regression_files: int,
    extra: dict[str, str] | None = None,
    timeout_s: float = 120.0,
    patches: Sequence[str] = (DROPS_DIGITS, KEEPS_DIGITS, DROPS_BIG_NUMBERS, RENAMES_WORDS),
    drop: Collection[str] = (),
    **options: Any,
) -> Audited:
    repo, commit = _make_repo(scratch / name, extra, drop)
    row: dict[str, Any] = {
        "instance_id": "vouch-tests__shelf-1",
        "repo": str(repo),
        "base_commit": commit,
        "problem_statement": PROBLEM,
        "patch": diff_of(repo, {"shelf/text.py": GOLD}),
        "test_patch": diff_of(repo, {"tests/test_slug.py": T0_TESTS}),
        "FAIL_TO_PASS": ["tests/test_slug.py::test_slug_collapses_spaces"],
        "PASS_TO_PASS": ["tests/test_slug.py::test_slug_simple"],
    }
    instance = SweInstance.model_validate(row)
    trials = [
        SweTrial(
            trial_id=f"{instance.instance_id}#{n}",
            instance_id=instance.instance_id,
            model=f"agent-{n}",
            patch=diff_of(repo, {"shelf/text.py": text}),
        )
        for n, text in enumerate(patches)
    ]
    config = SweAuditConfig(
        mutants=0, k=1, repeats=2, regression_files=regression_files, timeout_s=timeout_s, **options
    )
    cache = WorldCache(scratch / name / "worlds")
    results = audit_swe([instance], trials, executor=executor, cache=cache, config=config)
    return Audited(results, row, instance, trials, cache)


@pytest.fixture(scope="module")
def audited(scratch: Path, executor: LocalExecutor) -> Audited:
    return _audit(scratch, executor, "with", regression_files=8)


def _result(audited: Audited, n: int) -> TrialResult:
    return next(t for t in audited.results.trials if t.trial_id == f"vouch-tests__shelf-1#{n}")


def _census(result: TrialResult) -> str:
    return next(s for s in result.evidence.steps if s.startswith("regression:"))


@pytest.mark.slow
def test_a_trial_that_breaks_the_repositorys_own_test_is_refuted(audited: Audited) -> None:
    wrong = _result(audited, 0)
    assert wrong.benchmark_pass and wrong.verdict is Verdict.REFUTED, (wrong.reason, wrong.evidence.discarded)
    [witness] = [w for w in wrong.witnesses if w.origin == "regression"]
    assert witness.input == "tests/test_catalog.py::test_key_keeps_digits"
    assert witness.clause == REGRESSION_CLAUSE and witness.file == "tests/test_catalog.py"
    assert "def test_key_keeps_digits" in witness.source
    validation = witness.validation
    assert validation.valid and validation.fails_by_assertion
    assert [r.outcome for r in validation.reference_runs] == ["pass", "pass"]
    assert [r.outcome for r in validation.model_runs] == ["fail", "fail"]
    assert "'a/vol-'" in (witness.actual or "")  # the trial's key, in the assertion's message
    assert wrong.reason == witness.defect and "tests/test_catalog.py::test_key_keeps_digits" in wrong.reason
    # test_key still passes: only the failing test is a witness.
    assert "in R[s]: 1 kept tests do not pass" in _census(wrong)


@pytest.mark.slow
def test_the_stage_counts_what_it_leaves_out(audited: Audited) -> None:
    census = _census(_result(audited, 0))
    assert "3 related test files" in census and "tests/test_slug.py" not in census  # T0's file is never chosen
    assert "5 tests in 2 files pass in R[G] and R" in census  # test_words and test_catalog's four
    assert "1 fails in R[G] and passes in R (changed on purpose)" in census  # the double dash G removes
    assert "1 fails in R[G] and in R (network, this machine)" in census  # the service this machine lacks


@pytest.mark.slow
def test_gs_mutants_that_t0_misses_are_run_under_the_kept_tests(audited: Audited) -> None:
    """G's added lines have four mutants: "-" -> "" (T0 kills it), and three on the cut of a long
    slug, which T0's short titles never reach; test_a_long_title_is_cut kills two of them (the
    third, ``>=``, differs only at exactly 80 characters)."""
    census = _census(_result(audited, 0))
    assert "G's mutants: 4 run, 3 pass T0, 2 of those fail a kept test" in census
    # The census names what T0 lets through (the cut's line of G's shelf/text.py).
    assert "(T0 lets through: shelf/text.py:3 " in census and census.count("shelf/text.py:3 ") == 3


@pytest.mark.slow
def test_a_trial_that_keeps_them_stands(audited: Audited) -> None:
    sound = _result(audited, 1)
    assert sound.verdict is Verdict.SOUND, (sound.reason, sound.witnesses, sound.evidence.discarded)
    assert "in R[s]: 0 kept tests do not pass" in _census(sound)
    # It fails the legacy test G fails too: behaviour the fix changes on purpose is no witness.
    assert not any(w.origin == "regression" for w in sound.evidence.discarded)


@pytest.mark.slow
def test_a_trial_that_breaks_a_files_collection_is_an_error_with_why(audited: Audited) -> None:
    """No test of the file ran in R[s]: that decides nothing by the validation rule (an assertion
    failure), so the trial is not sound either, and the reason names the file and the error."""
    broken = _result(audited, 3)
    assert broken.benchmark_pass and broken.verdict is Verdict.ERROR, (broken.reason, broken.witnesses)
    assert "files that collect in R[G] and not in R[s]: tests/test_words.py" in _census(broken)
    assert "tests/test_words.py does not collect" in (broken.reason or "")
    assert "words" in (broken.reason or "")  # the import error's message
    assert not broken.witnesses


@pytest.mark.slow
def test_the_suites_calls_are_probed_against_g(audited: Audited) -> None:
    census = _census(_result(audited, 2))
    assert "probes from their calls into the changed modules" in census
    assert int(census.split(" probes from their calls")[0].rsplit(" ", 1)[-1]) > 0
    wrong = _result(audited, 2)
    assert wrong.verdict is Verdict.REFUTED, (wrong.reason, wrong.evidence.discarded)
    assert not any(w.origin == "regression" for w in wrong.witnesses)  # every repository test passes
    witness = next(w for w in wrong.witnesses if w.validation.valid)
    assert witness.origin == "offline" and witness.input.startswith("slug('Room 101'")
    assert witness.why_t0_misses.startswith("the repository's own tests beyond T0 make this call")
    assert (witness.validation.rejudge_note or "").startswith("the input is one the repository's own tests make")


@pytest.mark.slow
def test_without_the_stage_the_trial_passes_unseen(scratch: Path, executor: LocalExecutor) -> None:
    audited = _audit(scratch, executor, "without", regression_files=0)
    wrong = _result(audited, 0)
    assert not any(s.startswith("regression:") for s in wrong.evidence.steps)
    assert not any(w.origin == "regression" for w in wrong.witnesses)
    assert audited.results.config["regression_files"] == 0
    # Nor are the suite's calls probed: the trial that drops numbers above 99 stands.
    assert _result(audited, 2).verdict is Verdict.SOUND


@pytest.mark.slow
def test_a_related_file_that_hangs_is_left_out_with_why_and_the_audit_goes_on(
    scratch: Path, executor: LocalExecutor
) -> None:
    hangs = {"tests/test_stalls.py": "import time\n\nfrom shelf.text import words\n\n\ndef test_stalls():\n"
             "    time.sleep(600)\n"}  # fmt: skip
    audited = _audit(scratch, executor, "hangs", regression_files=8, extra=hangs, timeout_s=20)
    census = _census(_result(audited, 0))
    # It shares a run with one other file (two to a run); the other run's tests are kept.
    assert "1 run did not complete" in census and "runs that did not complete: tests/test_" in census
    assert "timeout" in census
    assert _result(audited, 0).verdict is Verdict.REFUTED  # test_catalog still runs, and still catches it
    assert _result(audited, 1).verdict is Verdict.SOUND


@pytest.mark.slow
def test_a_related_file_that_does_not_collect_in_rg_is_named_and_the_next_one_runs(
    scratch: Path, executor: LocalExecutor
) -> None:
    """A file importing what the environment lacks collects in no world: it is no test failing in
    R[G] and R (the network), it is a file the stage could not use, said with pytest's error, and
    the next related file runs in its place. Two files asked: test_legacy and test_plots (they
    name slug), then test_words in test_plots' place."""
    optional = {"tests/test_plots.py": "import shelf_plotting\n\nfrom shelf.text import slug\n\n\ndef test_plot():\n"
                "    assert slug\n"}  # fmt: skip
    audited = _audit(scratch, executor, "uncollected", regression_files=2, extra=optional, patches=[KEEPS_DIGITS])
    census = _census(_result(audited, 0))
    assert "3 related test files (tests/test_legacy.py, tests/test_plots.py, tests/test_words.py)" in census
    assert "1 tests in 1 files pass in R[G] and R" in census  # test_words; its service test fails in both
    assert "1 files do not collect in R[G] (tests/test_plots.py; tests/test_plots.py:" in census
    assert "shelf_plotting" in census and "1 more related files run in their place" in census
    assert "2 fails in R[G] and in R" not in census  # the file is not counted as a failing test


@pytest.mark.slow
def test_in_lightweight_mode_the_tests_that_kill_gs_mutants_join_t1(scratch: Path, executor: LocalExecutor) -> None:
    """Task analysis alone (no rounds): test_a_long_title_is_cut kills two of G's mutants T0
    misses, so it runs in every passing trial's world and refutes the trial that drops the cut."""
    audited = _audit(
        scratch, executor, "lightweight", regression_files=8, patches=[KEEPS_DIGITS, DROPS_THE_CUT],
        mode="lightweight", rounds=0,
    )  # fmt: skip
    keeps, drops = _result(audited, 0), _result(audited, 1)
    assert keeps.verdict is Verdict.SOUND, (keeps.reason, keeps.witnesses)
    assert drops.verdict is Verdict.REFUTED, (drops.reason, drops.evidence.steps)
    # The probes that tell G's mutants from G (the next test) refute it too.
    [witness] = [w for w in drops.witnesses if w.origin == "regression"]
    assert witness.input == "tests/test_catalog.py::test_a_long_title_is_cut"
    assert witness.found_on == "task analysis" and witness.validation.valid
    [report] = audited.results.tasks
    assert "T1 also holds 1 of the repository's own tests that kill mutants of G's" in (report.note or "")


@pytest.mark.slow
def test_in_lightweight_mode_the_probes_that_kill_gs_mutants_join_t1(scratch: Path, executor: LocalExecutor) -> None:
    """No test of the repository's own reaches slug, and T0's titles are short: G's mutants of the
    cut pass T0. Variations of T0's calls with a limit of 0 tell them (``>`` turned ``<``, ...)
    from G, so they join T1 and refutes the trial that drops the cut (task analysis alone,
    no rounds); without G's mutants, that trial stands."""
    others = ("tests/test_catalog.py", "tests/test_words.py", "tests/test_legacy.py")
    setting: dict[str, Any] = {"patches": [KEEPS_DIGITS, DROPS_THE_CUT], "drop": others, "mode": "lightweight"}
    audited = _audit(scratch, executor, "probes-t1", regression_files=8, rounds=0, **setting)
    keeps, drops = _result(audited, 0), _result(audited, 1)
    assert keeps.verdict is Verdict.SOUND, (keeps.reason, keeps.witnesses)
    assert drops.verdict is Verdict.REFUTED, (drops.reason, drops.evidence.steps)
    assert drops.witnesses, drops.evidence.steps
    for witness in drops.witnesses:
        assert witness.origin == "offline" and witness.found_on == "task analysis" and witness.validation.valid
        assert witness.why_t0_misses.startswith("T0 does not tell G from its mutant on this call of slug")
        # A limit of 0: the mutant returns the whole slug, as the trial does; G returns ''.
        assert witness.input.startswith("slug(") and witness.input.endswith(", 0)") and witness.expected == "''"
    [report] = audited.results.tasks
    # G's added lines have four mutants; T0 kills one, and two of the three left answer a probe
    # otherwise than G (the third, ``>=``, differs only at exactly 80 characters).
    census = (
        "regression: no test file beyond T0's reaches the changed modules; "
        "G's mutants: 4 run, 3 pass T0, 0 of those fail a kept test, 2 answer a probe otherwise than G"
    )
    assert census in (report.note or ""), report.note
    unseen = _audit(scratch, executor, "probes-t1-without", regression_files=8, rounds=0, gold_mutants=0, **setting)
    assert _result(unseen, 1).verdict is Verdict.SOUND, _result(unseen, 1).witnesses


# --- the export -----------------------------------------------------------------------------


def test_an_appended_line_applies_withgit(tmp_path: Path) -> None:
    git(tmp_path, "init", "--quiet")
    for text in ("def test_a():\n    assert 1\n", "a\nb\nc\nd\ne\n", ""):
        (tmp_path / "t.py").write_text(text)
        diff = append_diff("t.py", text, TOUCH_LINE)
        assert diff is not None
        (tmp_path / "d.diff").write_text(diff)
        git(tmp_path, "apply", "--include=t.py", "d.diff")
        assert (tmp_path / "t.py").read_text() == text + "\n" + TOUCH_LINE
    assert append_diff("t.py", "x = 1", TOUCH_LINE) is None  # no newline at the end: not touched


@pytest.mark.slow
def test_the_export_names_the_repositorys_own_test_and_runs_its_file(audited: Audited, executor: LocalExecutor) -> None:
    inst = audited.instance
    runs = WorldRuns(Runner(executor), audited.cache, inst.repo, None)
    built = export_repository(audited.results, [audited.row], {inst.instance_id: inst}, audited.trials, lambda _: runs)
    [row] = built.instances
    assert "tests/test_catalog.py::test_key_keeps_digits" in row["PASS_TO_PASS"]  # it passes in R
    # The offline source's witnesses of the same trial are new files beside T0's.
    assert row["FAIL_TO_PASS"][:1] == audited.row["FAIL_TO_PASS"]
    assert not any(t.startswith("tests/test_catalog.py") for t in row["FAIL_TO_PASS"])
    assert "+++ b/tests/test_catalog.py" in row["test_patch"] and TOUCH_LINE in row["test_patch"]
    check = built.check
    assert (check.refuted, check.refuted_failing, check.standing, check.standing_passing) == (2, 2, 1, 1)
    assert check.holds and not built.left_out
    assert {t.origin for t in built.tests} >= {"regression"}
