"""The engine without root: full isolation in a user namespace of the caller's own.

Run as root (as CI runs), these tests take a fresh uid with no passwd entry and no groups and
run the engine as it: ``vouch exec`` on a file that looks for what the user owns, and the
adversarial suite whole. Run by a user without root, the same runs as that user.

The user needs an interpreter it may execute and the packages: the interpreter is this one's
when other users can reach it, else the machine's own Python of the same version (a pyenv
build under /root is not theirs to run), in a venv whose ``.pth`` names this checkout's
packages. A checkout other users cannot read is copied for them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _scratch import scratch_root
from vouch.exec import _executor, _zygote

ROOT = Path(__file__).resolve().parents[2]
_TEST_UID = 4242
"""The uid the tests take when run as root: unused on these machines, with no passwd entry."""


@dataclass(frozen=True)
class User:
    uid: int
    gid: int
    python: str
    repo: Path
    home: Path
    work: Path
    env: dict[str, str]

    def run(self, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        as_user: dict[str, Any] = {"user": self.uid, "group": self.gid, "extra_groups": []} if os.geteuid() == 0 else {}
        # A session of its own: on a timeout the whole tree goes (pools, their spares), so that
        # a hang fails this test instead of holding the pipes open.
        proc = subprocess.Popen(
            [self.python, *args],
            cwd=self.work,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            **as_user,
        )
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            if os.geteuid() == 0:  # what left the session (the runs' own sessions) goes too
                subprocess.run(["pkill", "-9", "-u", str(self.uid)], check=False)
            out, err = proc.communicate()
            pytest.fail(f"timed out after {timeout_s} s: {out[-3000:]} {err[-2000:]}")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _others_can_reach(path: str | Path, *, execute: bool = False) -> bool:
    """Whether a user with no relation to the owner can read ``path`` (every ancestor searchable)."""
    real = Path(os.path.realpath(path))
    if not real.exists():
        return False
    mode = real.stat().st_mode
    if not mode & (0o001 if execute or real.is_dir() else 0o004):
        return False
    return all(parent.stat().st_mode & 0o001 for parent in real.parents)


def _python_for_others() -> str:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [os.path.join(sys.base_prefix, "bin", version), f"/usr/bin/{version}", f"/usr/local/bin/{version}"]
    for candidate in candidates:
        # The interpreter and its standard library (PREFIX/lib/pythonX.Y) both.
        stdlib = Path(candidate).resolve().parent.parent / "lib" / version
        if _others_can_reach(candidate, execute=True) and _others_can_reach(stdlib):
            return candidate
    pytest.fail(f"no {version} that other users may run (tried {', '.join(candidates)}): install the system's python3")


def _chown(path: Path, uid: int, gid: int) -> None:
    if os.geteuid() == 0:
        os.chown(path, uid, gid)


@pytest.fixture(scope="module")
def user() -> Iterator[User]:
    uid, gid = (_TEST_UID, _TEST_UID) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    base = scratch_root() / f"rootless-{uuid.uuid4().hex[:12]}"
    base.mkdir(parents=True)
    base.chmod(0o755)
    try:
        paths = sysconfig.get_paths()
        site = [paths["purelib"], paths["platlib"]]
        repo = ROOT
        needed: list[str | Path] = [*site, ROOT / "src", ROOT / "tests"]
        if not all(_others_can_reach(p) for p in needed):
            repo = base / "repo"
            for name in ("src", "tests"):
                shutil.copytree(ROOT / name, repo / name, symlinks=True, ignore=shutil.ignore_patterns(".scratch"))
            shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
            shutil.copytree(site[0], base / "site", symlinks=True)
            site = [str(base / "site")]
        python = _python_for_others()
        venv = base / "venv"
        subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
        purelib = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
        (purelib / "vouch-checkout.pth").write_text("\n".join([*dict.fromkeys(site), str(repo / "src")]) + "\n")
        home, work, scratch = base / "home", base / "work", base / "scratch"
        for path, mode in ((home, 0o700), (work, 0o700), (scratch, 0o755)):
            path.mkdir()
            path.chmod(mode)
            _chown(path, uid, gid)
        env = {
            "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(home),
            "USER": "vouch-rootless",
            "LANG": "C.UTF-8",
            "VOUCH_TEST_SCRATCH": str(scratch),
            "VOUCH_DATA_DIR": os.environ.get("VOUCH_DATA_DIR", ""),
        }
        yield User(uid=uid, gid=gid, python=str(venv / "bin" / "python"), repo=repo, home=home, work=work, env=env)
    finally:
        shutil.rmtree(base, ignore_errors=True)


_LOOK_AROUND = """
import json, os
seen = {}
for label, path in json.loads(os.environ.get("PATHS", "{}")).items():
    try:
        seen[label] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path).read()
    except OSError as exc:
        seen[label] = type(exc).__name__
print(json.dumps({"uid": os.getuid(), "groups": os.getgroups(), "seen": seen}))
"""


def _user_files(user: User) -> dict[str, str]:
    """Files the user owns that a run must not read: in its home, and vouch's store in its cwd."""
    secret = user.home / "secret.txt"
    secret.write_text("the user's own secret\n")
    store = user.work / ".vouch" / "store.sqlite"
    store.parent.mkdir(exist_ok=True)
    store.write_text("labels\n")
    for path in (secret, store.parent, store):
        _chown(path, user.uid, user.gid)
    return {"home file": str(secret), "home": str(user.home), "store": str(store)}


def test_a_run_without_root_is_fully_isolated_and_sees_nothing_the_user_owns(user: User) -> None:
    if os.geteuid() == 0:
        # A root pool's uid-block directory (root's alone) must not stop the user.
        os.makedirs(_executor._UID_LOCK_DIR, mode=0o700, exist_ok=True)
    paths = _user_files(user)
    script = user.work / "look.py"
    script.write_text(_LOOK_AROUND.replace('os.environ.get("PATHS", "{}")', repr(json.dumps(paths))))
    _chown(script, user.uid, user.gid)
    done = user.run("-m", "vouch", "exec", "--json", str(script))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["status"] == "ok", report
    isolation = report["isolation"]
    assert isolation["level"] == "full" and isolation["rootless"] is True
    assert isolation["host_uid"] == user.uid
    assert isolation["user_namespace"] and isolation["pid_namespace"] and isolation["mount_namespace"]
    assert isolation["network"] is False and isolation["readonly_root"] and isolation["private_tmp"]
    seen = json.loads(report["stdout_tail"].strip().splitlines()[-1])
    assert seen["uid"] == 1000
    assert seen["seen"]["home file"] in ("FileNotFoundError", "PermissionError"), seen
    assert seen["seen"]["home"] in ([], "PermissionError"), seen
    assert seen["seen"]["store"] in ("FileNotFoundError", "PermissionError", ""), seen


@pytest.mark.slow
def test_the_adversarial_suite_holds_without_root(user: User) -> None:
    """The whole adversarial suite, as a user without root."""
    assert " passed" in _pytest_as(user, "test_adversarial.py", timeout_s=900)


def _pytest_as(user: User, test_file: str, *, timeout_s: float) -> str:
    """Run one file of tests/exec as the user, in a session of its own; its output."""
    tests = user.repo / "tests" / "exec"
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={user.repo}", str(tests / test_file)]
    done = user.run(*args, timeout_s=timeout_s)
    assert done.returncode == 0, (done.stdout[-6000:], done.stderr[-2000:])
    return done.stdout


@pytest.mark.parametrize(
    ("settings", "unprivileged", "named"),
    [
        ({"kernel/unprivileged_userns_clone": "0"}, True, "kernel.unprivileged_userns_clone = 0"),
        ({"kernel/unprivileged_userns_clone": "0"}, False, None),
        (
            {"kernel/apparmor_restrict_unprivileged_userns": "1"},
            True,
            "kernel.apparmor_restrict_unprivileged_userns = 1",
        ),
        ({"user/max_user_namespaces": "0"}, False, "user.max_user_namespaces = 0"),
        ({"user/max_user_namespaces": "63000", "kernel/unprivileged_userns_clone": "1"}, True, None),
        ({}, True, None),
    ],
)
def test_a_restricted_machine_names_the_setting(
    tmp_path: Path, settings: dict[str, str], unprivileged: bool, named: str | None
) -> None:
    for rel, value in settings.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(value + "\n")
    assert _zygote.userns_restriction(str(tmp_path), unprivileged=unprivileged) == named


_EXPOSE = """
import json, os, sys
from vouch.exec import LocalExecutor, RunSpec, Script, expose_to_runs, hide_in_runs
home = os.environ["HOME"]
world = os.path.join(home, "cache", "world")
os.makedirs(world)
open(os.path.join(world, "module.py"), "w").write("VALUE = 'from the exposed world'\\n")
open(os.path.join(world, "answers.txt"), "w").write("gold\\n")
open(os.path.join(home, "cache", "beside.txt"), "w").write("not exposed\\n")
look = '''
import json, os, sys
sys.path.insert(0, WORLD)
seen = {}
import module
seen["module"] = module.VALUE
for name in ("answers.txt", "../beside.txt"):
    try:
        seen[name] = open(os.path.join(WORLD, name)).read()
    except OSError as exc:
        seen[name] = type(exc).__name__
print(json.dumps(seen))
'''.replace("WORLD", repr(world))
with LocalExecutor(workers=1, warm_pytest=False) as pool:
    before = pool.run(RunSpec(entry=Script("look.py"), files={"look.py": look}))
    expose_to_runs(world)
    hide_in_runs(os.path.join(world, "answers.txt"))
    after = pool.run(RunSpec(entry=Script("look.py"), files={"look.py": look}))
print(json.dumps({"before": [before.status.value, before.reason or ""], "after": after.stdout_tail}))
"""


def test_a_path_exposed_in_the_users_home_is_readable_and_what_is_hidden_in_it_stays_hidden(user: User) -> None:
    """``expose_to_runs`` (a world cache or environment directory in the home): bound back in every
    later run of the same pool; a hidden file inside stays hidden, the rest of the home too."""
    done = user.run("-c", _EXPOSE)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["before"][0] == "error" and "ModuleNotFoundError" in outcome["before"][1], outcome
    seen = json.loads(outcome["after"].strip().splitlines()[-1])
    assert seen["module"] == "from the exposed world"
    assert seen["answers.txt"] in ("", "PermissionError", "FileNotFoundError"), seen
    assert seen["../beside.txt"] in ("FileNotFoundError", "PermissionError"), seen


@pytest.mark.slow
def test_the_engines_faults_hold_without_root(user: User) -> None:
    """A SIGKILLed zygote mid-batch, as a user without root: the pool restarts and the batch
    completes. (Once, under load, a killed rootless zygote's spare outlived it, holding the pool's
    socket, and the pool waited: a spare now closes its own job pipe's write end, so it sees end
    of file when its zygote is gone.)"""
    assert " passed" in _pytest_as(user, "test_faults.py", timeout_s=300)
