"""The executor's contract: batches, results, isolation records, seeds, workdirs, bad input."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from conftest import FAST, KEPT_RUNS_DIRS, ExecutorFactory, call_spec, run_call, run_script, script_spec
from vouch.errors import InfrastructureError, UsageError
from vouch.exec import (
    Call,
    Limits,
    LocalExecutor,
    RunResult,
    RunSpec,
    Script,
    Status,
    _init,
    get_executor,
    hidden_in_every_run,
)

# --- batches -------------------------------------------------------------------------------


def test_run_batch_returns_results_in_input_order(executor: LocalExecutor) -> None:
    # Earlier specs sleep longer, so they finish after later ones: order must still hold.
    specs = [
        call_spec("import time\ndef f(i, delay):\n    time.sleep(delay)\n    return i\n", args=(i, (5 - i) * 0.05))
        for i in range(6)
    ]
    calls: list[tuple[int, int, RunResult]] = []
    lock = threading.Lock()

    def progress(done: int, total: int, result: RunResult) -> None:
        with lock:
            calls.append((done, total, result))

    results = executor.run_batch(specs, progress=progress)

    assert [r.status for r in results] == [Status.OK] * 6
    assert [r.value for r in results] == list(range(6))
    assert [done for done, _, _ in calls] == [1, 2, 3, 4, 5, 6]
    assert {total for _, total, _ in calls} == {6}
    assert sorted(id(r) for _, _, r in calls) == sorted(id(r) for r in results)


def test_run_batch_of_nothing(executor: LocalExecutor) -> None:
    calls = []
    assert executor.run_batch([], progress=lambda *a: calls.append(a)) == []
    assert calls == []


def test_run_batch_mixes_outcomes(executor: LocalExecutor) -> None:
    results = executor.run_batch(
        [
            script_spec("print('fine')\n"),
            script_spec("raise ValueError('nope')\n"),
            call_spec("def f():\n    return 'v'\n"),
        ]
    )
    assert [r.status for r in results] == [Status.OK, Status.ERROR, Status.OK]
    assert results[0].stdout_tail == "fine\n"
    assert results[1].exception is not None and results[1].exception.type == "ValueError"
    assert results[2].value == "v"


def test_submit_refuses_what_is_not_a_runspec(executor: LocalExecutor) -> None:
    with pytest.raises(UsageError):
        executor.submit(Script("main.py"))  # type: ignore[arg-type]


# --- results -------------------------------------------------------------------------------


def test_results_record_their_isolation(executor: LocalExecutor) -> None:
    result = run_script(executor, "import os\nprint(os.getuid(), os.getgid())\n")
    assert result.ok, result
    iso = result.isolation
    assert iso.level == "full"
    assert iso.network is False
    assert iso.user_namespace is True
    assert iso.pid_namespace is True
    assert iso.mount_namespace is True
    assert iso.uid == 1000
    assert iso.host_uid != 0
    assert iso.weak_reason is None
    assert result.stdout_tail == "1000 1000\n"  # what the run sees is what was recorded
    assert iso.cpu_s == FAST.effective_cpu_s
    assert iso.processes == FAST.processes


def test_results_say_where_the_time_went(executor: LocalExecutor) -> None:
    result = run_call(executor, "import time\ndef f():\n    time.sleep(0.05)\n")
    assert result.ok, result
    phases = result.phases
    for name in ("queued", "spare", "clone", "workdir", "handoff", "child", "finish", "enter", "code", "exit"):
        assert phases[f"{name}_ms"] >= 0, name
    assert phases["code_ms"] >= 50  # the sleep is the run's own code
    # The child's split adds up to what the pool saw of it, and the caller waited for all of it.
    assert phases["enter_ms"] + phases["code_ms"] + phases["exit_ms"] == pytest.approx(phases["child_ms"], abs=0.01)
    assert phases["round_trip_ms"] >= phases["child_ms"] + phases["finish_ms"]


def test_a_run_that_forges_its_clock_loses_only_its_split(executor: LocalExecutor) -> None:
    # The harness's clock readings come from the run's process: a run that rewrites the
    # frame with readings out of order gets no enter/code/exit split, and its status stands.
    code = (
        "import os, json, struct\n"
        "from vouch.exec import _frame\n"
        "def f():\n"
        "    real = _frame.encode\n"
        "    def forged(nonce, payload):\n"
        "        payload['clock'] = [1e12, 0.0]\n"
        "        return real(nonce, payload)\n"
        "    import vouch.exec._harness as h\n"
        "    h._encode = forged\n"
        "    return 7\n"
    )
    result = run_call(executor, code)
    assert result.ok and result.value == 7, result
    assert "code_ms" not in result.phases
    assert result.phases["child_ms"] > 0


def test_the_run_is_not_root_on_the_host(executor: LocalExecutor) -> None:
    """The run's host uid is what the kernel says, and it is not 0."""
    result = run_script(executor, "import os\nprint(open('/proc/self/uid_map').read())\n")
    assert result.ok, result
    inside, outside, count = result.stdout_tail.split()
    assert (int(inside), int(outside), int(count)) == (1000, result.isolation.host_uid, 1)


def test_recorded_hidden_paths(executor: LocalExecutor) -> None:
    result = run_script(executor, "pass\n", hidden=("/nonexistent/secret",))
    assert result.ok
    # The spec's own paths first, then what every run is given hidden (vouch's own answers).
    assert result.isolation.hidden_paths[0] == "/nonexistent/secret"
    assert set(result.isolation.hidden_paths[1:]) == set(hidden_in_every_run())


_NOT_DATA = {
    "object": "object()",
    "function": "lambda: 1",
    "class-instance": "type('C', (), {})()",
    "generator": "(i for i in range(3))",
    "complex": "1 + 2j",
    "nested-object": "{'ok': [1, object()]}",
}


@pytest.mark.parametrize("expression", list(_NOT_DATA.values()), ids=list(_NOT_DATA))
def test_non_data_return_value_is_an_error(executor: LocalExecutor, expression: str) -> None:
    """An object never crosses back, only data: a call returning one is an error, never ok."""
    result = run_call(executor, f"def f():\n    return {expression}\n")
    assert result.status is Status.ERROR, result
    assert result.value is None
    assert result.exception is not None
    assert result.exception.type == "ResultNotJSON"


def test_call_value_is_json_data(executor: LocalExecutor) -> None:
    source = "def f(x, *, y):\n    return {'x': x, 'y': y, 'n': [1.5, -2, 'three', True, None]}\n"
    result = executor.run(
        RunSpec(entry=Call("v.py:f", args=([1, "a"],), kwargs={"y": {"k": None}}), files={"v.py": source}, limits=FAST)
    )
    assert result.ok, result
    assert result.value == {"x": [1, "a"], "y": {"k": None}, "n": [1.5, -2, "three", True, None]}


def test_call_of_a_pool_module(executor: LocalExecutor) -> None:
    result = executor.run(RunSpec(entry=Call("json:dumps", args=([1, 2],)), limits=FAST))
    assert result.ok, result
    assert result.value == "[1, 2]"


@pytest.mark.parametrize("target", ["v.py", "v.py:", ":f", "v.py:missing", "v.py:NOT_CALLABLE", "missing.py:f"])
def test_bad_call_targets_are_errors(executor: LocalExecutor, target: str) -> None:
    result = executor.run(
        RunSpec(entry=Call(target), files={"v.py": "NOT_CALLABLE = 3\ndef f():\n    return 1\n"}, limits=FAST)
    )
    assert result.status is Status.ERROR, result
    assert result.value is None


def test_script_argv_and_env(executor: LocalExecutor) -> None:
    result = run_script(
        executor,
        "import os, sys\nprint(sys.argv[1:], os.environ['EXTRA'], os.environ['HOME'] == os.getcwd())\n",
        argv=("a", "b"),
        env={"EXTRA": "yes"},
    )
    assert result.ok, result
    assert result.stdout_tail == "['a', 'b'] yes True\n"


# --- hash seed -----------------------------------------------------------------------------

HASH = "def f():\n    return [hash('abc'), hash(('x', 1))]\n"


def test_hash_seed(make_executor: ExecutorFactory) -> None:
    one, one_again, two = (make_executor(workers=1, hash_seed=seed) for seed in (1, 1, 2))
    values = {}
    for name, pool in (("one", one), ("one_again", one_again), ("two", two)):
        result = run_call(pool, HASH)
        assert result.ok, result
        values[name] = result.value
        assert result.isolation.hash_seed == ("2" if name == "two" else "1")
    assert values["one"] == values["one_again"]
    assert values["one"] != values["two"]
    # and the seed holds from one run to the next of the same pool
    assert run_call(one, HASH).value == values["one"]


# --- working directory ---------------------------------------------------------------------


def test_keep_workdir_leaves_what_the_run_wrote(executor: LocalExecutor) -> None:
    result = run_script(
        executor,
        "import os\nwith open('out.txt', 'w') as f:\n    f.write('written by the run')\nos.mkdir('sub')\n"
        "with open('sub/deep.txt', 'w') as f:\n    f.write('deep')\nprint(os.getcwd())\n",
        keep_workdir=True,
        files={"given.txt": "given"},
    )
    try:
        assert result.ok, result
        assert result.workdir is not None
        assert result.stdout_tail.strip() == result.workdir  # the run saw it at the same path
        with open(os.path.join(result.workdir, "out.txt")) as f:
            assert f.read() == "written by the run"
        with open(os.path.join(result.workdir, "sub", "deep.txt")) as f:
            assert f.read() == "deep"
        with open(os.path.join(result.workdir, "given.txt")) as f:
            assert f.read() == "given"
    finally:
        if result.workdir:
            shutil.rmtree(result.workdir, ignore_errors=True)
            KEPT_RUNS_DIRS.add(os.path.dirname(result.workdir))


def test_workdir_is_removed_by_default(executor: LocalExecutor) -> None:
    result = run_script(executor, "import os\nprint(os.getcwd())\n")
    assert result.ok
    assert result.workdir is None
    assert not os.path.exists(result.stdout_tail.strip())


@dataclass
class Closed:
    reader_alive_after_close: bool
    kept_workdir: str


@pytest.fixture(scope="module")
def closed() -> Iterator[Closed]:
    """An executor that ran one run with keep_workdir=True and was then closed."""
    before = set(threading.enumerate())
    pool = LocalExecutor(workers=1)
    pool.start()
    readers = [t for t in threading.enumerate() if t not in before]
    result = run_script(pool, "with open('out.txt', 'w') as f:\n    f.write('kept')\n", keep_workdir=True)
    assert result.ok and result.workdir
    pool.close()
    yield Closed(reader_alive_after_close=any(t.is_alive() for t in readers), kept_workdir=result.workdir)
    shutil.rmtree(result.workdir, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(result.workdir))  # the pool's runs dir, left for the kept workdir


def test_close_stops_the_reader_thread(closed: Closed) -> None:
    """close() joins the thread that reads the pool's reports; the thread must be gone after.

    (The reader takes the executor's lock on its way out while close() holds that lock and
    waits for it: close() blocks until its join times out, and returns with the thread alive.)
    """
    assert not closed.reader_alive_after_close


def test_kept_workdir_survives_close(closed: Closed) -> None:
    """keep_workdir: 'the caller removes it', so closing the executor must not."""
    assert os.path.isfile(os.path.join(closed.kept_workdir, "out.txt"))


def test_closed_executor_restarts_on_submit(make_executor: ExecutorFactory) -> None:
    pool = make_executor(workers=1)
    first = pool.info
    pool.close()
    result = run_call(pool, "def f():\n    return 'again'\n")
    assert result.ok and result.value == "again"
    assert pool.info is not None and first is not None and pool.info.pid != first.pid


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout_s": -1},
        {"timeout_s": 0},
        {"timeout_s": float("nan")},
        {"timeout_s": float("inf")},
        {"timeout_s": True},
        {"timeout_s": "10"},
        {"memory_mb": 0},
        {"memory_mb": -512},
        {"cpu_s": -1},
        {"file_size_mb": 0},
        {"processes": 0},
        {"open_files": -1},
        {"output_tail_bytes": 0},
    ],
    ids=lambda kw: ",".join(f"{k}={v!r}" for k, v in kw.items()),
)
def test_bad_limits_raise_value_error(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Limits(**kwargs)


def test_good_limits() -> None:
    assert Limits(timeout_s=0.5).effective_cpu_s == 2
    assert Limits(timeout_s=2, cpu_s=0.2).effective_cpu_s == 1


def test_unknown_executor_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError, match="local"):
        get_executor("nope")


def test_get_executor_local() -> None:
    pool = get_executor("local", workers=1)
    assert isinstance(pool, LocalExecutor)  # not started: nothing to close


@pytest.mark.parametrize("workers", [0, -1, 65, 1.5, "2"])
def test_bad_worker_counts(workers: object) -> None:
    with pytest.raises(UsageError):
        LocalExecutor(workers=workers)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "path",
    ["../ESCAPE", "../../ESCAPE", "sub/../../ESCAPE", "/tmp/ESCAPE"],
    ids=["parent", "grandparent", "through-subdir", "absolute"],
)
def test_file_path_escaping_the_workdir(executor: LocalExecutor, path: str) -> None:
    """The engine refuses the run (InfrastructureError from result()) and writes nothing outside."""
    name = f"vouch-escape-{uuid.uuid4().hex}"
    path = path.replace("ESCAPE", name)
    future = executor.submit(
        RunSpec(entry=Script("main.py"), files={"main.py": "print('ran')\n", path: "escaped"}, limits=FAST)
    )
    with pytest.raises(InfrastructureError, match="outside the working directory"):
        future.result()
    written = glob.glob(f"/tmp/{name}") + glob.glob(f"/tmp/*/{name}") + glob.glob(f"/tmp/*/*/{name}")
    assert written == [], f"{path!r} was written outside the working directory"
    # and the pool is fine
    assert run_call(executor, "def f():\n    return 1\n").value == 1


_HEADROOM = """
def f():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * 4096 // 2**20
"""


@pytest.mark.slow
def test_every_run_gets_its_whole_memory_headroom_after_the_pool_has_grown(make_executor: ExecutorFactory) -> None:
    """A batch of large specs grows the zygote's heap; runs cloned after that still get
    ``memory_mb`` on top of what they start with, not on top of the pool's warm-up size (a long
    audit's runs had lost 100s of MB of headroom, and deep recursion died of SIGSEGV)."""
    pool = make_executor(workers=2)
    big = "X = " + repr(list(range(60_000))) + "\n"
    # Submitted all at once (run_batch keeps a window): the zygote holds all 150 specs.
    grown = [pool.submit(call_spec(big + f"def f():\n    return {i}\n")) for i in range(150)]
    assert all(f.result().ok for f in grown)
    limits = Limits(timeout_s=10, memory_mb=256)
    for result in pool.run_batch([call_spec(_HEADROOM, limits=limits) for _ in range(4)]):
        assert result.ok, result.reason
        headroom = result.isolation.address_space_mb - result.value
        assert headroom >= limits.memory_mb - 24, (result.isolation.address_space_mb, result.value)


@pytest.mark.slow
def test_a_batch_keeps_a_window_in_flight_so_the_pool_does_not_grow(make_executor: ExecutorFactory) -> None:
    """run_batch sends a few runs ahead of the free slots, not the whole batch: the pool's
    process does not hold (and keep the heap of) thousands of specs."""
    pool = make_executor(workers=2)
    info = pool.start()
    big = "X = " + repr(list(range(60_000))) + "\n"
    seen = []

    def progress(done: int, total: int, result: RunResult) -> None:
        with open(f"/proc/{info.pid}/statm") as statm:
            seen.append(int(statm.read().split()[0]) * 4096 // 2**20)

    results = pool.run_batch([call_spec(big + f"def f():\n    return {i}\n") for i in range(150)], progress)
    assert [r.value for r in results] == list(range(150))
    assert max(seen) - info.baseline_vm_mb < 24, (info.baseline_vm_mb, max(seen))


def test_a_run_sees_the_hosts_own_name(executor: LocalExecutor) -> None:
    """The host name is the one a run of the same program outside vouch would see: nothing
    in it tells judged code that it is being judged."""
    result = run_script(executor, "import os, socket\nprint(os.uname().nodename, socket.gethostname())\n")
    assert result.ok, result
    assert result.stdout_tail.split() == [socket.gethostname()] * 2
    assert "vouch" not in result.stdout_tail


def test_a_run_has_an_ordinary_pid_and_cannot_reach_its_init(executor: LocalExecutor) -> None:
    """A run is not PID 1 among tiny pids: its pid is near the host's own counter, its own
    process group and session, and the namespace's init (its parent) hides its descriptors."""
    source = (
        "import json, os\n"
        "try:\n    os.listdir('/proc/1/fd')\n    reach = 'fds'\n"
        "except OSError as exc:\n    reach = type(exc).__name__\n"
        "print(json.dumps([os.getpid(), os.getppid(), os.getpgrp(), os.getsid(0), reach]))\n"
    )
    for result in executor.run_batch([script_spec(source) for _ in range(2)]):
        assert result.ok, (result.status, result.reason, result.stderr_tail)
        pid, ppid, pgrp, sid, reach = json.loads(result.stdout_tail)
        assert pid > 64 and pgrp == sid == pid, (pid, pgrp, sid)
        assert ppid == 1 and reach == "PermissionError", (ppid, reach)


def test_a_runs_init_is_a_small_program_holding_none_of_the_pools_memory(executor: LocalExecutor) -> None:
    """The run's process keeps the spare's memory and the spare becomes vouch's init program:
    the pool's heap is mapped by one process per run, not two, and /proc/1 shows an init."""
    program = _init.load_program()
    if program < 0:
        pytest.skip("no init program on this machine: runs keep a Python init")
    os.close(program)
    source = (
        "import json\n"
        "def status(pid):\n"
        "    return dict(line.split(':', 1) for line in open(f'/proc/{pid}/status') if ':' in line)\n"
        "def rss(pid):\n"
        "    return int(status(pid)['VmRSS'].split()[0])\n"
        "cmdline = open('/proc/1/cmdline', 'rb').read().decode()\n"
        "print(json.dumps([cmdline, status(1)['Name'].strip(), rss(1), rss('self')]))\n"
    )
    result = run_script(executor, source)
    assert result.ok, (result.status, result.reason, result.stderr_tail)
    cmdline, name, init_rss_kb, own_rss_kb = json.loads(result.stdout_tail)
    assert (cmdline, name) == ("init\0", "init")
    assert init_rss_kb < 1024 < own_rss_kb, (init_rss_kb, own_rss_kb)


def test_no_name_in_a_runs_environment_speaks_of_vouch(executor: LocalExecutor) -> None:
    result = run_script(executor, "import os\nprint(sorted(os.environ))\n")
    assert result.ok, result
    assert "VOUCH" not in result.stdout_tail.upper(), result.stdout_tail


def test_a_pool_whose_preloaded_modules_hold_thread_pools_still_runs(make_executor: ExecutorFactory) -> None:
    """numpy's BLAS starts threads when imported, and a fork handler that waits for them: the
    spare's process for its run is made by a raw clone, which runs no such handler (threads the
    spare never had would be waited for for ever)."""
    pool = make_executor(workers=1, preload=["numpy"])
    result = pool.run(script_spec("import numpy\nprint(int(numpy.arange(4).sum()))\n", limits=FAST))
    assert result.ok and result.stdout_tail == "6\n", (result.status, result.reason, result.stderr_tail)
