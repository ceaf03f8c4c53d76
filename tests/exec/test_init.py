"""The init of a run's PID namespace (``vouch.exec._init``), in a PID namespace of the test's own:
both inits (vouch's init program, taking over from a process whose memory the run keeps, and the
Python init of machines without one) relay the run's end the same way and hold nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from vouch.exec import _init, _linux

_PROGRAM = _init.load_program() if os.geteuid() == 0 else -1


def _inits() -> list[object]:
    program = pytest.param(_PROGRAM, id="program")
    if _PROGRAM < 0:
        program = pytest.param(-1, id="program", marks=pytest.mark.skip(reason="no init program on this machine"))
    return [program, pytest.param(-1, id="python")]


_ALONE = "VOUCH_TEST_INIT_ALONE"


@pytest.fixture(autouse=True)
def here(request: pytest.FixtureRequest) -> bool:
    """Whether the test runs in this process: only in a single-threaded interpreter of its own.
    Cloning a process whose other threads hold locks (a pytest-xdist worker's, an executor's
    reader) leaves the clone waiting on a lock no thread will release, so each test runs again
    in a fresh ``pytest`` process, and passes here only when it passed there."""
    if os.environ.get(_ALONE) == "1":
        return True
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", request.node.nodeid],
        env={**os.environ, _ALONE: "1"},
        cwd=request.config.rootpath,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return False


@pytest.fixture
def pipes() -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    relay, hold = os.pipe(), os.pipe()
    yield relay, hold
    for fd in (*relay, *hold):
        try:
            os.close(fd)
        except OSError:
            continue  # closed by the test


def _namespace(host_last: int, relay_w: int, program: int, hold: tuple[int, int], run: str) -> int:
    """Clone a process into a new PID namespace that becomes its init over a run doing ``run``
    once ``hold`` reads end of file: "exit" (status 7), "signal" (SIGUSR1), "orphan" (leave a
    child behind, then exit 0). Returns the init's pid."""
    try:
        pid = _linux.clone_process(_linux.CLONE_NEWPID)
    except OSError as exc:
        pytest.skip(f"no PID namespace here: {exc}")
    if pid:
        return pid
    try:
        _init.await_init(_init.start_run(host_last, relay_w, program))
        os.close(hold[1])
        os.read(hold[0], 1)
        if run == "signal":
            os.kill(os.getpid(), signal.SIGUSR1)
        if run == "orphan" and os.fork() == 0:
            time.sleep(0.2)
            os._exit(3)
        os._exit(0 if run == "orphan" else 7)
    finally:
        os._exit(99)


def _wait_end(relay_r: int, init: int) -> _init.RunEnd | None:
    _, status = os.waitpid(init, 0)
    assert os.WIFEXITED(status), status
    os.set_blocking(relay_r, False)
    return _init.read_end(relay_r)


pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace of the test's own needs root")


@pytest.mark.parametrize("program", _inits())
@pytest.mark.parametrize(("run", "exit_code"), [("exit", 7), ("signal", -signal.SIGUSR1), ("orphan", 0)])
def test_the_init_relays_the_runs_end_as_the_kernel_gave_it(
    pipes: tuple[tuple[int, int], tuple[int, int]], program: int, run: str, exit_code: int, here: bool
) -> None:
    if not here:
        return
    (relay_r, relay_w), (hold_r, hold_w) = pipes
    init = _namespace(os.getpid(), relay_w, program, (hold_r, hold_w), run)
    os.close(hold_w)
    end = _wait_end(relay_r, init)
    assert end is not None
    assert os.waitstatus_to_exitcode(end.status) == exit_code
    assert end.cpu_s >= 0 and end.maxrss_kb > 1024  # the run's process: an interpreter's memory


@pytest.mark.parametrize("program", _inits())
def test_the_init_holds_the_relay_alone_and_none_of_the_runs_memory(
    pipes: tuple[tuple[int, int], tuple[int, int]], program: int, here: bool
) -> None:
    """While the run goes on, its init holds no descriptor but the relay above the standard
    three (none at all, the program), and the program holds none of the memory the run has."""
    if not here:
        return
    (relay_r, relay_w), (hold_r, hold_w) = pipes
    init = _namespace(0, relay_w, program, (hold_r, hold_w), "exit")
    try:
        deadline = time.monotonic() + 10
        while True:
            held = {int(fd) for fd in os.listdir(f"/proc/{init}/fd")}
            if held - {0, 1, 2} == {relay_w} or time.monotonic() > deadline:
                break
            time.sleep(0.01)  # the init is still starting
        assert held - {0, 1, 2} == {relay_w}, held
        with open(f"/proc/{init}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        if program >= 0:
            assert held == {relay_w}, held
            assert status["Name"].strip() == "init"
            assert int(status["VmRSS"].split()[0]) < 1024, status["VmRSS"]
    finally:
        os.close(hold_w)
    assert _wait_end(relay_r, init) is not None


def test_the_program_exits_lost_run_when_the_run_is_not_its_child(
    pipes: tuple[tuple[int, int], tuple[int, int]], here: bool
) -> None:
    """Told a pid no child has, the program reaps what it has and exits LOST_RUN, relaying
    nothing: the pool then reports the init's own end, never an end the run could choose."""
    if not here:
        return
    if _PROGRAM < 0:
        pytest.skip("no init program on this machine")
    (relay_r, relay_w), (hold_r, hold_w) = pipes
    pid = os.fork()
    if pid == 0:
        try:
            _init.await_init(_init._hand_over(1 << 22, relay_w, _PROGRAM))
            os.close(hold_w)
            os.read(hold_r, 1)
        finally:
            os._exit(0)
    os.close(hold_w)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == _init.LOST_RUN
    os.close(relay_w)
    assert os.read(relay_r, _init.RELAY.size) == b""


def test_without_code_for_the_machine_there_is_no_program_and_runs_keep_a_python_init(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_init, "_PROGRAM_CODE", {})
    assert _init.load_program() == -1
