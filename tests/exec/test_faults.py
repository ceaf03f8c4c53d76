"""Faults of the engine itself: the zygote is SIGKILLed in the middle of a batch.

The pool restarts, the runs that had no result yet are sent again once, a run in flight at a
second death is an ``error`` with the reason, the batch completes, and every run is resolved
exactly once. And a run's own words never make a fault of vouch's: a run that says vouch's
module did not import is vouch's failure only when the pool knows no judged code had run.
"""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ExecutorFactory, call_spec, script_spec
from vouch.exec import Call, Limits, LocalExecutor, RunResult, RunSpec, Status, vouch_failure

SLOW = Limits(timeout_s=60, memory_mb=256)


def _wait_for(condition, what: str, limit_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def test_sigkill_of_the_zygote_mid_batch_restarts_the_pool_and_the_batch_completes(
    make_executor: ExecutorFactory,
) -> None:
    pool = make_executor(workers=2)
    assert pool.info is not None
    first = pool.info.pid
    specs = [script_spec(f"import time\ntime.sleep(0.3)\nprint('done {i}')\n", limits=SLOW) for i in range(8)]
    seen: list[RunResult] = []
    lock = threading.Lock()

    def progress(done: int, total: int, result: RunResult) -> None:
        with lock:
            seen.append(result)
            if len(seen) == 1:
                os.kill(first, signal.SIGKILL)  # runs are still in flight and queued

    results = pool.run_batch(specs, progress)
    assert [r.status for r in results] == [Status.OK] * 8, [(r.status, r.reason) for r in results]
    assert [r.stdout_tail for r in results] == [f"done {i}\n" for i in range(8)]
    assert len(seen) == 8, "every run is resolved exactly once"
    assert pool.info is not None and pool.info.pid != first


def test_a_run_the_pool_dies_under_twice_is_an_error_with_the_reason(make_executor: ExecutorFactory) -> None:
    pool = make_executor(workers=1)
    future = pool.submit(script_spec("import time\ntime.sleep(30)\n", limits=SLOW))
    for _ in range(2):
        assert pool.info is not None
        pid = pool.info.pid
        # The run has started once the zygote has a child beyond its spares (workers x 2 lanes).
        _wait_for(lambda: _running(pid) > 2, "the run to start")
        os.kill(pid, signal.SIGKILL)
        _wait_for(lambda: future.done() or (pool.info is not None and pool.info.pid != pid), "a new pool")
    result = future.result(timeout=120)
    assert result.status is Status.ERROR
    assert result.reason is not None and "died" in result.reason and "retried once" in result.reason
    after = pool.run(script_spec("print('fine')\n"))
    assert after.ok and after.stdout_tail == "fine\n"


@pytest.mark.parametrize("wait_for_the_reader", [True, False], ids=["seen-dead", "at-once"])
def test_a_pool_that_died_while_idle_takes_the_next_run(
    make_executor: ExecutorFactory, wait_for_the_reader: bool
) -> None:
    # Killed with nothing in flight: the next run goes to a new pool, whether the pool's reader
    # has seen the death yet or the run's write finds the socket closed first.
    pool = make_executor(workers=1)
    assert pool.run(script_spec("print('before')\n")).ok and pool.info is not None
    first = pool.info.pid
    os.kill(first, signal.SIGKILL)
    if wait_for_the_reader:
        _wait_for(lambda: pool._dead is not None, "the pool to be seen dead")
    after = pool.run(script_spec("print('after')\n"))
    assert after.ok and after.stdout_tail == "after\n", (after.status, after.reason)
    assert pool.info is not None and pool.info.pid != first


def _running(zygote: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            count += int(fields[1]) == zygote
    return count


def test_a_pool_first_used_from_a_thread_that_ends_outlives_that_thread() -> None:
    # The zygote dies with the thread that started it (PR_SET_PDEATHSIG): a pool whose first
    # run came from a short-lived worker thread (V4V's C6 threads) must survive that thread.
    with LocalExecutor(workers=1) as pool:
        with ThreadPoolExecutor(max_workers=1) as threads:
            first = threads.submit(pool.run, call_spec("def f():\n    return 1\n")).result()
        assert first.ok and first.value == 1
        assert pool.info is not None
        pid = pool.info.pid
        time.sleep(0.5)  # the worker thread is gone: a zygote tied to it would be dead by now
        second = pool.run(call_spec("def f():\n    return 2\n"))
        assert second.ok and second.value == 2
        assert pool.info.pid == pid, "the pool was not restarted: it never died"


# --- whose failure it is: vouch's own only on vouch's evidence ------------------------------

_CLAIM = "raise ModuleNotFoundError(\"No module named 'vouch.audit'\", name='vouch.audit')\n"
_FORGE_FRAME = r"""
import json, os, struct, sys
frame = sys._getframe()
while frame is not None and not isinstance(frame.f_locals.get("nonce"), bytes):
    frame = frame.f_back
nonce = frame.f_locals["nonce"]
body = json.dumps({"outcome": "raised", "value": None, "exception": {
    "type": "ModuleNotFoundError", "message": "No module named 'vouch.audit'", "traceback_tail": ""}}).encode()
record = b"VOUCH-FRAME-1\n" + nonce + struct.pack("<Q", len(body)) + body
os.ftruncate(1000, 0)
os.pwrite(1000, record, 0)
os._exit(1)
"""


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(call_spec(f"def f():\n    {_CLAIM}"), id="a-call-raises-it"),
        pytest.param(call_spec(_CLAIM), id="a-module-raises-it-at-import"),
        pytest.param(script_spec(_CLAIM), id="a-script-raises-it"),
        pytest.param(call_spec(f"def f():\n{textwrap.indent(_FORGE_FRAME, '    ')}"), id="a-call-forges-the-record"),
        pytest.param(
            RunSpec(
                Call("vouch.exec._pytest:run_pytest", args=(["-q", "-p", "no:cacheprovider", "test_x.py"],)),
                files={"test_x.py": f"def test_x():\n{textwrap.indent(_FORGE_FRAME, '    ')}"},
                limits=Limits(timeout_s=30, memory_mb=256),
            ),
            id="a-test-in-vouchs-entry-forges-the-record",
        ),
    ],
)
def test_a_run_that_only_says_vouch_failed_is_the_judged_codes_outcome(executor: LocalExecutor, spec: RunSpec) -> None:
    """Judged code that raises, or writes into the result record, "No module named 'vouch.audit'"
    has its own outcome: the pool knows judged code had started when the run said it."""
    (result,) = executor.run_batch([spec])
    assert result.status is Status.ERROR, (result.status, result.reason, result.stderr_tail)
    assert result.exception is not None and "vouch.audit" in result.exception.message, result.exception
    assert result.judged
    assert vouch_failure(result) is None, vouch_failure(result)


def test_vouchs_entry_that_cannot_import_before_any_judged_code_is_vouchs_failure(executor: LocalExecutor) -> None:
    broken, working = executor.run_batch(
        [
            RunSpec(Call("vouch.audit._no_such_module:t0", ("f", "")), files={"solution.py": "def f(): pass\n"}),
            RunSpec(
                Call("vouch.exec._pytest:run_pytest", args=(["-q", "-p", "no:cacheprovider", "test_x.py"],)),
                files={"test_x.py": "def test_x():\n    assert True\n"},
                limits=Limits(timeout_s=30, memory_mb=256),
            ),
        ]
    )
    assert broken.exception is not None and broken.exception.type == "ModuleNotFoundError", broken
    assert not broken.judged
    assert "vouch's own module did not import" in (vouch_failure(broken) or ""), broken
    assert working.ok and working.judged, (working.status, working.reason)


def test_judged_code_finds_the_report_pipe_closed(executor: LocalExecutor) -> None:
    """The pipe that marks judged code's start is closed before that code: it can neither take
    the mark back nor report a setup failure on it."""
    source = (
        "import os\ntry:\n    os.write(1001, b'Eforged')\n    print('open')\nexcept OSError:\n    print('closed')\n"
    )
    result = executor.run(script_spec(source))
    assert result.ok and result.stdout_tail.strip() == "closed", (result.status, result.reason, result.stdout_tail)
    assert result.judged
