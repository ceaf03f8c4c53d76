"""Environments: interpreters found and copied where runs can start them, venvs built once and
found by hash, failures as one line, and another interpreter run inside an engine run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _scratch import scratch_root
from vouch.audit import SWE_PRELOAD
from vouch.exec import LocalExecutor
from vouch.swebench import Runner, WorldEnv, fixture_files, grade, load_instances, materialise_fixture_repo, parse_log
from vouch.worlds import (
    EnvCache,
    EnvFailure,
    Environment,
    EnvRecipe,
    Patch,
    World,
    WorldCache,
    find_python,
    generated_files,
    git,
    import_root,
)
from vouch.worlds._env import _version_of, scm_version

BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def env_root() -> Iterator[Path]:
    """One environment directory for the module: the interpreter is copied into it once."""
    path = scratch_root() / uuid.uuid4().hex
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _repo(root: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(["init", "--quiet", "--initial-branch=main"], cwd=root)
    git(["add", "--all"], cwd=root)
    git(["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "base"], cwd=root)
    git(["tag", "v1.2"], cwd=root)
    return git(["rev-parse", "HEAD"], cwd=root).stdout.strip()


class _WhereCall:
    """A call of ``mod.where()`` in a world (a ``vouch.swebench.CallProbe``)."""

    def as_call(self) -> dict[str, Any]:
        return {"module": "mod", "qualname": "where", "args": [], "kwargs": {}}


def test_find_python_prefers_explicit_then_newest_pyenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("3.9.1", "3.9.10", "3.10.2"):
        binary = tmp_path / "versions" / name / "bin" / f"python{name.rsplit('.', 1)[0]}"
        binary.parent.mkdir(parents=True)
        binary.write_text("")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")  # no uv either
    assert find_python("3.9") == tmp_path / "versions" / "3.9.10" / "bin" / "python3.9"
    assert find_python("3.9", {"3.9": "/opt/py39"}) == Path("/opt/py39")
    assert find_python("3.7", {"*": "/opt/any"}) == Path("/opt/any")
    assert find_python("3.7") is None


def test_import_root_and_generated_version_file(tmp_path: Path) -> None:
    world = tmp_path / "world"
    world.mkdir()
    _repo(
        world, {"setup.py": 'setup(use_scm_version={"write_to": "src/pkg/_version.py"})\n', "src/pkg/__init__.py": ""}
    )
    assert import_root(world) == world / "src"
    assert generated_files(world) == ["src/pkg/_version.py"]
    assert "version = __version__ = '1.2'" in (world / "src/pkg/_version.py").read_text()
    assert generated_files(world) == [], "an existing file is left alone"
    flat = tmp_path / "flat"
    (flat / "pkg").mkdir(parents=True)
    assert import_root(flat) == flat and generated_files(flat) == []


@pytest.mark.parametrize(
    ("described", "version"),
    [
        ("7.2.0.dev0-157-gaa55975c7", "7.2.0.dev157+gaa55975c7"),
        ("5.4.1-593-ge6e300e72", "5.4.1.dev593+ge6e300e72"),
        ("v1.2-0-gabc1234", "1.2"),
        ("6.0.0rc1-12-gabc1234", "6.0.0rc1.post12.dev0+gabc1234"),
        ("abc1234", "0.0.dev0"),
    ],
)
def test_scm_version(described: str, version: str) -> None:
    from packaging.version import Version

    assert scm_version(described) == version
    Version(version)  # valid PEP 440: pytest's minversion check parses it


@pytest.mark.slow
def test_environment_built_once_and_started_inside_a_run(visible_tmp: Path, env_root: Path) -> None:
    repo = visible_tmp / "repo"
    repo.mkdir()
    commit = _repo(repo, {"README": "x\n"})
    envs = EnvCache(env_root, python={VERSION: str(BASE_PYTHON)})
    # No registry here: a recipe with nothing to download (ensurepip's pip, no packages).
    recipe = EnvRecipe(name="o/r 1", python=VERSION, pip=None, install=(), tools=())
    first = envs.get(recipe, repo, commit)
    assert isinstance(first, Environment), first
    assert first.built and first.installs == 0 and (first.root / "vouch-env.json").exists()
    assert _version_of(first.python) == first.python_version
    # Runs cannot search /root: the interpreter is a copy under the environment directory.
    assert str(first.library_path).startswith(str(env_root))
    again = EnvCache(env_root, python={VERSION: str(BASE_PYTHON)}).get(recipe, repo, commit)
    assert isinstance(again, Environment) and not again.built and again.root == first.root

    world_dir = visible_tmp / "world"
    world_dir.mkdir()
    _repo(world_dir, {"mod.py": "import sys\ndef where():\n    return sys.prefix\n"})
    world = World(path=world_dir, key="w1", commit="x", patches=())
    with LocalExecutor(workers=1, preload=SWE_PRELOAD) as executor:
        runner = Runner(executor, timeout_s=60)
        runner.attach(world, WorldEnv(env=first, harness=(), test_files=(), parser=None))
        (outcome,) = runner.call(world, [_WhereCall()])
    assert outcome["ok"], outcome
    assert str(first.root) in outcome["value"], "the call ran in the environment's interpreter"


@pytest.mark.slow
def test_failed_build_is_one_line_and_not_cached(visible_tmp: Path, env_root: Path) -> None:
    repo = visible_tmp / "repo"
    repo.mkdir()
    commit = _repo(repo, {"README": "x\n"})
    envs = EnvCache(env_root, python={VERSION: str(BASE_PYTHON)})
    recipe = EnvRecipe(name="o/r 2", python=VERSION, pip=None, requirement_files=("missing.txt",), install=(), tools=())
    failure = envs.get(recipe, repo, commit)
    assert isinstance(failure, EnvFailure)
    assert failure.step == "requirements missing.txt" and "missing.txt" in failure.reason
    assert "\n" not in failure.reason
    assert not (envs.root / failure.key).exists()
    missing = EnvCache(env_root).get(EnvRecipe(name="o/r 3", python="2.1"), repo, commit)
    assert isinstance(missing, EnvFailure) and missing.step == "python" and "--python 2.1" in missing.reason


@pytest.mark.slow
def test_harness_t0_through_another_interpreter(visible_tmp: Path) -> None:
    """T0 as the harness runs it (test_cmd on the test patch's files, -rA log, parser, grading),
    in an environment whose interpreter is started inside the run (vouch's own venv here)."""
    inst = next(i for i in load_instances(fixture_files()[0]) if i.repo == "unitconv")
    commit = materialise_fixture_repo("unitconv", visible_tmp / "repo")
    worlds = WorldCache(visible_tmp / "worlds")
    gold = worlds.materialise(
        str(visible_tmp / "repo"), commit, [Patch("patch", inst.patch), Patch("t", inst.test_patch, True)]
    )
    null = worlds.materialise(str(visible_tmp / "repo"), commit, [Patch("t", inst.test_patch, True)])
    assert isinstance(gold, World) and isinstance(null, World)
    own = _own_environment()
    files = tuple(dict.fromkeys(t.split("::", 1)[0] for t in inst.t0))  # the fixture's T0 spans two files
    env = WorldEnv(env=own, harness=("-rA",), test_files=files, parser="parse_log_pytest")
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        runner = Runner(executor, timeout_s=120)
        runner.attach(gold, env)
        runner.attach(null, env)
        gold_run, null_run = runner.t0_batch([(gold, None, None), (null, None, None)], [])
    assert gold_run.ok and null_run.ok, (gold_run.reason, null_run.reason)
    assert "short test summary info" in gold_run.value["log"]
    gold_grade = grade(parse_log(gold_run.value["log"], env.parser), inst.fail_to_pass, inst.pass_to_pass)
    null_grade = grade(parse_log(null_run.value["log"], env.parser), inst.fail_to_pass, inst.pass_to_pass)
    assert gold_grade.resolved and not null_grade.resolved
    assert set(null_grade.f2p_failed) == set(inst.fail_to_pass)


def _own_environment() -> Environment:
    return Environment(
        key="own",
        root=Path(sys.prefix),
        python=Path(sys.executable),
        library_path=Path(sys.base_prefix) / "lib",
        python_version=VERSION,
        built=False,
        build_s=0.0,
        installs=0,
    )


def test_harness_t0_may_write_into_its_world_and_the_world_stays_as_it_was(visible_tmp: Path) -> None:
    """The harness's container gives tests a writable checkout (pylint's write modules and .dot
    files into the repository); T0 gets a copy of the world, and the world itself is untouched.
    The host's cgroups are not the container's: the run sees none."""
    world_dir = visible_tmp / "world"
    world_dir.mkdir()
    test = (
        "import os\n"
        "def test_writes_beside_itself():\n"
        "    path = os.path.join(os.path.dirname(__file__), 'made.txt')\n"
        "    with open(path, 'w') as handle:\n"
        "        handle.write('x')\n"
        "    assert open(path).read() == 'x'\n"
        "def test_sees_no_host_cgroups():\n"
        "    assert not os.path.isdir('/sys/fs/cgroup') or not os.listdir('/sys/fs/cgroup')\n"
    )
    _repo(world_dir, {"test_write.py": test})
    world = World(path=world_dir, key="w-writable", commit="x", patches=())
    env = WorldEnv(env=_own_environment(), harness=("-rA",), test_files=("test_write.py",), parser="parse_log_pytest")
    with LocalExecutor(workers=1, preload=SWE_PRELOAD) as executor:
        runner = Runner(executor, timeout_s=60)
        runner.attach(world, env)
        (run,) = runner.t0_batch([(world, None, None)], [])
    assert run.ok, run.reason
    statuses = parse_log(run.value["log"], env.parser)
    assert statuses.get("test_write.py::test_writes_beside_itself") == "PASSED", run.value["log"][-2000:]
    # pylint counts one CPU from a cgroup v1 host's cpu.shares and skips its two-core tests.
    assert statuses.get("test_write.py::test_sees_no_host_cgroups") == "PASSED", run.value["log"][-2000:]
    assert not (world_dir / "made.txt").exists()
    assert "/world/" not in run.value["log"].replace(str(world_dir), "<the world>"), "paths name the world"


def _wheel(directory: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A minimal pure wheel, so that pip installs it with no registry and no build backend."""
    import zipfile

    directory.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: vouch-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(directory / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)


@pytest.mark.slow
def test_other_commits_of_a_version_are_installed_once(visible_tmp: Path, env_root: Path) -> None:
    """Each base commit of the version is installed once (what only it needed stays), the main
    commit last; a second call with the same commits installs nothing. Offline: each commit of
    the repository carries the wheel it installs."""
    repo = visible_tmp / "repo"
    repo.mkdir()
    _wheel(repo / "dist", "tinypkg", "1.0", requires=("oldonly",))
    _wheel(repo / "dist", "oldonly", "0.1")
    old = _repo(repo, {"README": "old\n"})
    git(["rm", "--quiet", "dist/tinypkg-1.0-py3-none-any.whl", "dist/oldonly-0.1-py3-none-any.whl"], cwd=repo)
    _wheel(repo / "dist", "tinypkg", "1.1")
    git(["add", "--all"], cwd=repo)
    git(["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "newer"], cwd=repo)
    new = git(["rev-parse", "HEAD"], cwd=repo).stdout.strip()
    envs = EnvCache(env_root, python={VERSION: str(BASE_PYTHON)})
    offline = ("--no-index", "--force-reinstall", "--find-links", "dist", "tinypkg")
    recipe = EnvRecipe(name="o/tiny 1", python=VERSION, pip=None, install=offline, tools=())
    first = envs.get(recipe, repo, new, others=[old, new])
    assert isinstance(first, Environment), first
    assert first.built and first.installs == 3  # the build's install, the old commit's, the new one's again
    manifest = (first.root / "vouch-env.json").read_text()
    assert old in manifest and new in manifest
    assert "tinypkg==1.1" in manifest and "oldonly==0.1" in manifest
    again = envs.get(recipe, repo, new, others=[old, new])
    assert isinstance(again, Environment) and not again.built and again.installs == 0


@pytest.mark.slow
def test_a_gold_patch_that_adds_a_dependency_is_installed_once(visible_tmp: Path, env_root: Path) -> None:
    """A commit's tree with a patch applied (a gold patch adding a dependency, pylint-4661's
    appdirs) is installed once after the build, so the dependency is in the environment as in
    the harness's, built after the fix; a patch that does not apply is noted, not raised."""
    repo = visible_tmp / "repo"
    repo.mkdir()
    _wheel(repo / "dist", "tinypkg", "1.0")
    base = _repo(repo, {"README": "base\n"})
    git(["checkout", "--quiet", "-b", "fix"], cwd=repo)
    _wheel(repo / "dist", "tinypkg", "1.0", requires=("fixdep",))
    _wheel(repo / "dist", "fixdep", "0.2")
    git(["add", "--all"], cwd=repo)
    git(["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "fix"], cwd=repo)
    patch = git(["diff", "--binary", base, "fix"], cwd=repo).stdout
    git(["checkout", "--quiet", "main"], cwd=repo)
    envs = EnvCache(env_root, python={VERSION: str(BASE_PYTHON)})
    offline = ("--no-index", "--force-reinstall", "--find-links", "dist", "tinypkg")
    recipe = EnvRecipe(name="o/tiny-fixed 1", python=VERSION, pip=None, install=offline, tools=())
    first = envs.get(recipe, repo, base, others=[base], patched={base: patch})
    assert isinstance(first, Environment), first
    assert first.installs == 3  # the build's install, the patched tree's, the base's again
    manifest = (first.root / "vouch-env.json").read_text()
    assert "fixdep==0.2" in manifest and f"{base}+" in manifest
    again = envs.get(recipe, repo, base, others=[base], patched={base: patch})
    assert isinstance(again, Environment) and again.installs == 0
    stale = "--- a/nothing\n+++ b/nothing\n@@ -1 +1 @@\n-x\n+y\n"
    broken = envs.get(recipe, repo, base, others=[base], patched={base: stale})
    assert isinstance(broken, Environment)
    assert "the patch does not apply" in (broken.root / "vouch-env.json").read_text()


@pytest.mark.slow
def test_a_commit_that_pins_a_dependency_otherwise_gets_a_variant(
    visible_tmp: Path, env_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version's environment follows its newest commit (dep 2.0); an older commit that pins
    dep 1.0 (pylint-7080's astroid) runs in a variant with dep 1.0, asked of pip once; the
    newest commit runs in the environment itself."""
    wheels = visible_tmp / "wheels"
    _wheel(wheels, "dep", "1.0")
    _wheel(wheels, "dep", "2.0")
    empty = visible_tmp / "no-index"
    empty.mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_INDEX_URL", empty.as_uri())
    repo = visible_tmp / "repo"
    repo.mkdir()
    _wheel(repo / "dist", "tinyproj", "0.1", requires=("dep==1.0",))
    old = _repo(repo, {"README": "old\n"})
    git(["rm", "--quiet", "dist/tinyproj-0.1-py3-none-any.whl"], cwd=repo)
    _wheel(repo / "dist", "tinyproj", "0.2", requires=("dep==2.0",))
    git(["add", "--all"], cwd=repo)
    git(["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "dep 2"], cwd=repo)
    new = git(["rev-parse", "HEAD"], cwd=repo).stdout.strip()
    envs = EnvCache(env_root, python={VERSION: str(BASE_PYTHON)})
    install = ("--force-reinstall", "--find-links", "dist", "tinyproj")
    recipe = EnvRecipe(name="o/pinned 1", python=VERSION, pip=None, install=install, tools=())
    env = envs.get(recipe, repo, new, others=[old, new])
    assert isinstance(env, Environment), env

    def dep_version(e: Environment) -> str:
        done = subprocess.run([str(e.python), "-c", "import dep; print(dep.VERSION)"], capture_output=True, text=True)
        return done.stdout.strip()

    assert dep_version(env) == "2.0"
    assert envs.for_commit(env, recipe, repo, new) == env
    variant = envs.for_commit(env, recipe, repo, old)
    assert variant.key == f"{env.key}+{old[:12]}" and variant.root != env.root
    assert dep_version(variant) == "1.0" and dep_version(env) == "2.0"
    assert '"dep==1.0"' in (env.root / "vouch-env.json").read_text()
    again = envs.for_commit(env, recipe, repo, old)
    assert again.root == variant.root and dep_version(again) == "1.0"


def test_a_world_with_httpbin_reaches_it_on_the_runs_loopback(visible_tmp: Path) -> None:
    """requests' tests call the httpbin HTTPBIN_URL names (httpbin.org by default, which the
    harness reached over the network): a world whose environment lists the service gets a
    local httpbin on its run's loopback for its tests' lifetime; one without it does not."""
    world_dir = visible_tmp / "world"
    world_dir.mkdir()
    test = (
        "import json, os, urllib.request\n"
        "def test_httpbin_echoes():\n"
        "    url = os.environ['HTTPBIN_URL'] + 'get?probe=1'\n"
        "    with urllib.request.urlopen(url, timeout=10) as answer:\n"
        "        assert json.load(answer)['args'] == {'probe': '1'}\n"
    )
    _repo(world_dir, {"test_net.py": test})
    world = World(path=world_dir, key="w-httpbin", commit="x", patches=())
    offline = World(path=world_dir, key="w-offline", commit="x", patches=())
    common = {
        "env": _own_environment(),
        "harness": ("-rA",),
        "test_files": ("test_net.py",),
        "parser": "parse_log_pytest",
    }
    with LocalExecutor(workers=2, preload=SWE_PRELOAD) as executor:
        runner = Runner(executor, timeout_s=60)
        runner.attach(world, WorldEnv(**common, services=("httpbin",)))
        runner.attach(offline, WorldEnv(**common))
        served, unserved = runner.t0_batch([(world, None, None), (offline, None, None)], [])
    assert served.ok, served.reason
    assert parse_log(served.value["log"], "parse_log_pytest") == {"test_net.py::test_httpbin_echoes": "PASSED"}
    assert parse_log(unserved.value["log"], "parse_log_pytest") == {"test_net.py::test_httpbin_echoes": "FAILED"}
