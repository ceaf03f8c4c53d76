"""SWE-bench environment specs, recipes, log parsing and grading, on the shared data and on
repositories the tests build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _shared_data import SWEBENCH_DATA
from vouch.errors import UsageError
from vouch.swebench import (
    EnvSpec,
    RepoEnvs,
    grade,
    harness_arguments,
    harness_options,
    load_environments,
    load_instances,
    load_predictions,
    parse_log,
    parser_for,
    spec_recipe,
    touched_test_files,
)
from vouch.worlds import git

DATA = SWEBENCH_DATA

LOG = """\
============================= test session starts ==============================
collected 6 items

tests/test_a.py ..F.sx                                                    [100%]

=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[/tmp/pytest-of-x/pytest-3/location]
PASSED tests/test_a.py::test_spaces[a b]
FAILED tests/test_a.py::test_three - AssertionError: assert 1 == 2
SKIPPED [1] tests/test_a.py:40: needs a network
XFAIL tests/test_a.py::test_expected - reason
ERROR tests/test_a.py::test_fixture - ConnectionError
========= 1 failed, 3 passed, 1 skipped, 1 xfailed, 1 error in 0.12s ==========
"""


def test_pytest_parser_reads_the_short_summary() -> None:
    statuses = parse_log(LOG, "parse_log_pytest")
    assert statuses["tests/test_a.py::test_one"] == "PASSED"
    assert statuses["tests/test_a.py::test_three"] == "FAILED"
    assert statuses["tests/test_a.py::test_expected"] == "XFAIL"
    assert statuses["tests/test_a.py::test_fixture"] == "ERROR"
    # The harness's ids are its parser's: a parameter with a space is cut at the space.
    assert "tests/test_a.py::test_spaces[a" in statuses
    # "SKIPPED [1] file:line" names no test: its second word is the count.
    assert statuses.get("[1]") == "SKIPPED"


def test_options_parser_cuts_absolute_path_parameters() -> None:
    statuses = parse_log(LOG, "parse_log_requests")
    assert statuses["tests/test_a.py::test_param[/location]"] == "PASSED"
    assert "tests/test_a.py::test_param[/tmp/pytest-of-x/pytest-3/location]" not in statuses


def test_seaborn_parser_takes_passed_lines_either_way() -> None:
    statuses = parse_log("tests/test_x.py::test_a PASSED [ 10%]\nPASSED tests/test_x.py::test_b\n", "parse_log_seaborn")
    assert statuses == {"tests/test_x.py::test_a": "PASSED", "tests/test_x.py::test_b": "PASSED"}


def test_unknown_parser_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="parse_log_pytest"):
        parser_for("parse_log_cobol")


@pytest.mark.parametrize(
    ("statuses", "resolved", "failed"),
    [
        ({"a": "PASSED", "b": "PASSED"}, True, ()),
        ({"a": "XFAIL", "b": "PASSED"}, True, ()),
        ({"a": "FAILED", "b": "PASSED"}, False, ("a",)),
        ({"b": "PASSED"}, False, ("a",)),  # missing from the log counts as failed
        ({"a": "SKIPPED", "b": "PASSED"}, True, ()),  # skipped counts neither way
        ({"a": "PASSED", "b": "ERROR"}, False, ("b",)),
    ],
)
def test_grading_follows_the_harness(statuses: dict[str, str], resolved: bool, failed: tuple[str, ...]) -> None:
    graded = grade(statuses, ["a"], ["b"])
    assert graded.resolved is resolved
    assert graded.failed == failed


def test_shared_environments_file_loads() -> None:
    specs = load_environments(DATA / "environments.json")
    assert set(specs) == {
        "psf/requests",
        "pallets/flask",
        "pytest-dev/pytest",
        "pylint-dev/pylint",
        "mwaskom/seaborn",
        "pydata/xarray",
    }
    assert sum(len(s.versions) for s in specs.values()) == 28
    assert specs["pylint-dev/pylint"].log_parser == "parse_log_pylint"
    assert harness_options(specs["mwaskom/seaborn"].versions["0.12"]) == ["--no-header", "-rA"]
    # Every parser the file names is one vouch has.
    for repo in specs.values():
        parser_for(repo.log_parser)


def test_shared_instances_and_predictions_carry_version_and_verdict() -> None:
    instances = load_instances(DATA / "instances.jsonl")
    trials = load_predictions(DATA / "predictions.jsonl", instances)
    assert len(instances) == 62 and all(i.version for i in instances)
    assert sum(t.harness_resolved is True for t in trials) == 41
    flask = next(i for i in instances if i.instance_id == "pallets__flask-5014")
    assert touched_test_files(flask.test_patch) == ["tests/test_blueprints.py"]


def test_test_files_leave_out_non_test_extensions() -> None:
    patch = "".join(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-x\n+y\n"
        for p in ("tests/test_a.py", "tests/data/expected.json", "tests/fixtures/page.txt", "tests/conftest.py")
    )
    assert touched_test_files(patch) == ["tests/test_a.py", "tests/conftest.py"]
    spec = EnvSpec(python="3.9", test_cmd="pytest --no-header -rA")
    assert harness_arguments(spec, patch) == ["--no-header", "-rA", "tests/test_a.py", "tests/conftest.py"]


@pytest.mark.parametrize("command", ["tox -e py39", "", "python -m unittest"])
def test_non_pytest_commands_are_refused(command: str) -> None:
    with pytest.raises(UsageError, match="only pytest"):
        harness_options(EnvSpec(python="3.9", test_cmd=command))


ENVIRONMENT_YML = """\
name: tests
channels:
  - conda-forge
dependencies:
  - numpy
  - matplotlib-base
  - cdms2
  - netcdf4
  - pandas=1.5
  - sparse
  - pip
  - pip:
      - numbagg
"""


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    (root / "ci").mkdir(parents=True)
    (root / "ci" / "environment.yml").write_text(ENVIRONMENT_YML)
    (root / "requirements_test.txt").write_text("pytest==7.0\n")
    git(["init", "--quiet", "--initial-branch=main"], cwd=root)
    git(["add", "--all"], cwd=root)
    git(["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "base"], cwd=root)
    return root, git(["rev-parse", "HEAD"], cwd=root).stdout.strip()


def test_conda_environment_maps_to_pip_with_the_pins(repo: tuple[Path, str]) -> None:
    root, commit = repo
    envs = RepoEnvs(
        env_yml_paths=["ci/environment.yml"],
        versions={
            "1.0": EnvSpec(
                python="3.10",
                packages="environment.yml",
                pip_packages=["numpy==1.23.0"],
                install="python -m pip install -e .",
            )
        },
    )
    recipe = spec_recipe("o/r", "1.0", envs, root, commit)
    assert "matplotlib" in recipe.packages and "netCDF4" in recipe.packages and "numbagg" in recipe.packages
    assert "pandas==1.5" in recipe.packages
    # The pin replaces the unpinned conda name, and is in the same pip call.
    assert "numpy" not in recipe.packages and "numpy==1.23.0" in recipe.packages
    assert "cdms2" not in recipe.packages and "pip" not in recipe.packages
    # An unpinned package is bounded to the release line of the harness's image where a later
    # release breaks a test the image passed with the gold patch.
    assert "sparse<0.16" in recipe.packages
    assert any("cdms2: left out" in n for n in recipe.notes)
    assert recipe.install == (".",), "editable installs become non-editable"
    assert any("non-editable" in n for n in recipe.notes)


def test_requirement_files_enter_the_recipe_hash(repo: tuple[Path, str]) -> None:
    root, commit = repo
    envs = RepoEnvs(
        reqs_paths=["requirements_test.txt"],
        versions={"2.0": EnvSpec(python="3.9", packages="requirements.txt", install="python -m pip install -e .[dev]")},
    )
    first = spec_recipe("o/r", "2.0", envs, root, commit)
    assert first.requirement_files == ("requirements_test.txt",) and first.install == (".[dev]",)
    (root / "requirements_test.txt").write_text("pytest==8.0\n")
    git(["-c", "commit.gpgsign=false", "commit", "--quiet", "-am", "bump"], cwd=root)
    second = spec_recipe("o/r", "2.0", envs, root, git(["rev-parse", "HEAD"], cwd=root).stdout.strip())
    assert first.key("3.9.18") != second.key("3.9.18")


@pytest.mark.parametrize(
    ("version", "spec", "message"),
    [
        ("9.9", EnvSpec(python="3.9"), "no environment spec for version '9.9'"),
        ("1.0", EnvSpec(python="3.9", packages="requirements.txt"), "none of"),
        ("1.0", EnvSpec(python="3.9", packages="environment.yml"), "none of"),
        ("1.0", EnvSpec(python="3.9", install="make install"), "a pip install command"),
    ],
)
def test_bad_specs_are_one_line(repo: tuple[Path, str], version: str, spec: EnvSpec, message: str) -> None:
    root, commit = repo
    envs = RepoEnvs(reqs_paths=["nope.txt"], env_yml_paths=["nope.yml"], versions={"1.0": spec})
    with pytest.raises(UsageError, match=message):
        spec_recipe("o/r", version, envs, root, commit)


def test_environments_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "environments.json"
    bad.write_text("{")
    with pytest.raises(UsageError, match="not JSON"):
        load_environments(bad)
    bad.write_text(json.dumps({"environments": {"o/r": {"versions": {"1": {"pip_packages": "x"}}}}}))
    with pytest.raises(UsageError, match="o/r"):
        load_environments(bad)
