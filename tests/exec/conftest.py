"""Shared fixtures and helpers for the execution-engine tests.

One warm ``LocalExecutor`` serves the whole session. Tests that need a pool of their own
(a different hash seed, a different host environment) get one from ``make_executor``; every
executor made here is closed at the end of the session, all at the same time, so that a slow
``close()`` is paid once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vouch.errors import InfrastructureError
from vouch.exec import Call, Limits, LocalExecutor, RunResult, RunSpec, Script

FAST = Limits(timeout_s=2, memory_mb=256)
"""Small limits, so that runs which hit them end quickly."""


# --- running code --------------------------------------------------------------------------


def _spec(entry: Script | Call, files: dict[str, str | bytes], spec_kwargs: dict[str, Any]) -> RunSpec:
    extra = spec_kwargs.pop("files", None) or {}
    spec_kwargs.setdefault("limits", FAST)
    return RunSpec(entry=entry, files={**files, **extra}, **spec_kwargs)


def script_spec(source: str, *, argv: tuple[str, ...] = (), **spec_kwargs: Any) -> RunSpec:
    """A spec that runs ``source`` as ``main.py`` (``python main.py ARGV``)."""
    return _spec(Script("main.py", argv=argv), {"main.py": source}, spec_kwargs)


def call_spec(source: str, function: str = "f", *, args: tuple[Any, ...] = (), **spec_kwargs: Any) -> RunSpec:
    """A spec that imports ``source`` as ``v.py`` and calls ``function(*args)``."""
    return _spec(Call(f"v.py:{function}", args=args), {"v.py": source}, spec_kwargs)


def run_script(executor: LocalExecutor, source: str, **spec_kwargs: Any) -> RunResult:
    """Run ``source`` as the script ``main.py`` of a fresh run and return its result."""
    return executor.run(script_spec(source, **spec_kwargs))


def run_call(executor: LocalExecutor, source: str, function: str = "f", **spec_kwargs: Any) -> RunResult:
    """Run ``v.py:function`` of ``source`` as a call and return its result."""
    return executor.run(call_spec(source, function, **spec_kwargs))


def assert_executor_works(executor: LocalExecutor) -> None:
    """The executor still answers: trivial calls, as many at once as it has slots, return their values."""
    assert executor.info is not None
    specs = [
        call_spec("def f(a, b):\n    return [a + b, 'fine']\n", args=(20, i)) for i in range(executor.info.workers)
    ]
    try:
        results = executor.run_batch(specs)
    except InfrastructureError as exc:
        pytest.fail(f"the executor no longer works: {exc}")
    for i, result in enumerate(results):
        assert result.ok, (result.status, result.reason, result.stderr_tail)
        assert result.value == [20 + i, "fine"]


# --- host observations ---------------------------------------------------------------------


KEPT_RUNS_DIRS: set[str] = set()
"""Runs dirs of pools that kept a workdir (the pool leaves them): removed, if empty, at the end."""

ZYGOTES: set[int] = set()
"""Pids of the zygotes of every executor the tests started."""


def _user_namespace(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        return None


def _spares(zygotes: set[int], run_pid: int | None) -> set[int]:
    """The zygotes' children other than ``run_pid``: their spares (and inits still exiting)."""
    if not zygotes:
        return set()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == run_pid:
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent in zygotes:
            found.add(int(entry))
    return found


def processes_of_uid(
    uid: int, *, spares_of: set[int] = frozenset(), run_pid: int | None = None
) -> list[tuple[int, str]]:
    """(pid, name) of every host process whose real uid is ``uid``.

    Children of the zygotes in ``spares_of``, other than ``run_pid``, are left out with their
    own children: those are the pools' spare sandboxes (each the init of its PID namespace, with
    the process made ahead for the next run), not something a run left behind. Without root,
    runs have this process's own uid: then only processes in a user namespace other than this
    one's (a run's, or a pool's) count.
    """
    own_ns = os.readlink("/proc/self/ns/user")
    shared = uid == os.geteuid()
    spares = _spares(spares_of, run_pid)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        real_uid = int(fields.get("Uid", "-1 -1").split()[0])
        if int(fields.get("PPid", "0")) in spares_of and int(entry) != run_pid:
            continue
        if int(fields.get("PPid", "0")) in spares:
            continue  # a spare's process made ahead for its next run
        if real_uid != uid:
            continue
        if shared and _user_namespace(entry) in (own_ns, None):
            continue
        if shared and int(entry) in spares_of:
            continue  # a rootless zygote lives in a user namespace of its own
        found.append((int(entry), fields.get("Name", "?").strip()))
    return found


def remaining_processes(result: RunResult, grace_s: float = 3.0) -> list[tuple[int, str]]:
    """Processes of the run's host uid still there after a short grace for reaping.

    Not a timing assertion: a leftover process (a detached ``sleep 1000``) stays for good,
    so the grace only absorbs the reaping of processes that are already dying.
    """
    deadline = time.monotonic() + grace_s
    while True:
        left = processes_of_uid(result.isolation.host_uid, spares_of=ZYGOTES, run_pid=result.pid)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def zygote_children(executor: LocalExecutor) -> list[tuple[int, int]]:
    """(pid, real uid) of every child of the executor's zygote: its runs and spares."""
    assert executor.info is not None
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        if int(fields.get("PPid", "0")) == executor.info.pid:
            found.append((int(entry), int(fields["Uid"].split()[0])))
    return sorted(found)


def snapshot(root: str) -> dict[str, tuple[int, int, int, str]]:
    """Everything about a directory tree a run could have changed: modes, owners, contents."""
    state: dict[str, tuple[int, int, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames, ""]:
            path = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(path)
            digest = ""
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            state[os.path.relpath(path, root)] = (st.st_mode, st.st_uid, st.st_mtime_ns, digest)
    return state


def run_in_subprocess(code: str, timeout_s: float = 120) -> Any:
    """Run ``code`` in a fresh interpreter (own pid, own session); return the JSON it prints last.

    For scenarios that would harm this process's pools if they went wrong: pools of one
    process share host uids and a process group.
    """
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        start_new_session=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- fixtures ------------------------------------------------------------------------------


class ExecutorFactory:
    """Makes executors and closes every one of them at the end of the session, concurrently."""

    def __init__(self) -> None:
        self._made: list[LocalExecutor] = []

    def __call__(self, **options: Any) -> LocalExecutor:
        executor = LocalExecutor(**options)
        self._made.append(executor)
        ZYGOTES.add(executor.start().pid)
        return executor

    def close_all(self) -> None:
        threads = [threading.Thread(target=executor.close) for executor in self._made]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self._made.clear()
        for path in KEPT_RUNS_DIRS:
            with contextlib.suppress(OSError):
                os.rmdir(path)


@pytest.fixture(scope="session")
def make_executor() -> Iterator[ExecutorFactory]:
    """A factory of started LocalExecutors; all are closed when the session ends."""
    factory = ExecutorFactory()
    yield factory
    factory.close_all()


@pytest.fixture(scope="session")
def executor(make_executor: ExecutorFactory) -> LocalExecutor:
    """The session's warm pool: two workers."""
    return make_executor(workers=2)


@pytest.fixture
def exposed_dir(visible_tmp: Path) -> str:
    """A host directory a run can see (not under /tmp, which a run sees privately): what is
    put here is what a run would read of the host, unless the engine hides it."""
    path = visible_tmp / "exposed"
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def sentinel(tmp_path_factory: pytest.TempPathFactory, visible_tmp: Path) -> Callable[[], None]:
    """Host directories with a file each; call the fixture's value to assert they are unchanged.

    One sits in the test's temp dir; the other is world-writable and visible to a run, so a
    run that could write anywhere it can reach (a writable root) would change it.
    """
    private = str(tmp_path_factory.mktemp("sentinel"))
    with open(os.path.join(private, "keep.txt"), "w") as f:
        f.write("sentinel: leave me alone\n")
    exposed = str(visible_tmp / "sentinel")
    os.mkdir(exposed)
    os.chmod(exposed, 0o777)
    with open(os.path.join(exposed, "keep.txt"), "w") as f:
        f.write("sentinel: leave me alone\n")
    os.chmod(os.path.join(exposed, "keep.txt"), 0o666)
    before = {private: snapshot(private), exposed: snapshot(exposed)}

    def check() -> None:
        for root, state in before.items():
            assert snapshot(root) == state, f"sentinel directory {root} changed"

    check.private = private  # type: ignore[attr-defined]
    check.exposed = exposed  # type: ignore[attr-defined]
    return check
