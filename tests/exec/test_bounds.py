"""What one run can cost the host, and what it can leave for the next run of its slot.

Host memory is measured as the peak RSS (``VmHWM``) of a child process that holds the
pool, with bounds far from both the figure measured and the figure without the bound.
"""

from __future__ import annotations

import json
from typing import Any

from conftest import run_call, run_in_subprocess, run_script
from vouch.exec import Limits, LocalExecutor, Status

# --- the network namespace of a slot --------------------------------------------------------

_LEAVE_TIME_WAIT = """
import socket
server = socket.create_server(("127.0.0.1", 0))
client = socket.create_connection(server.getsockname())
accepted, _ = server.accept()
client.close()  # the side that closes first keeps the connection in TIME_WAIT for a minute
accepted.close()
print("closed")
"""

_LIST_TCP = """
rows = []
for name in ("tcp", "tcp6"):
    with open(f"/proc/net/{name}") as f:
        rows += f.read().splitlines()[1:]
print(len(rows))
"""


def test_no_run_finds_the_connections_an_earlier_run_of_its_slot_left() -> None:
    """A connection a run closed stays in the kernel (TIME_WAIT) after the run's processes are
    gone; every later run of the slot starts in a network namespace without it."""
    with LocalExecutor(workers=1, warm_pytest=False) as pool:
        results = [
            run_script(pool, source, limits=Limits(timeout_s=10))
            for source in (_LEAVE_TIME_WAIT, _LIST_TCP, _LIST_TCP, _LIST_TCP, _LEAVE_TIME_WAIT, _LIST_TCP, _LIST_TCP)
        ]
    for result in results:
        assert result.ok, (result.reason, result.stderr_tail)
    seen = [r.stdout_tail.strip() for r in results]
    assert seen == ["closed", "0", "0", "0", "closed", "0", "0"], seen


# --- host memory: result records and service requests ---------------------------------------

_HOLD_A_POOL = r"""
import json, resource
from vouch.exec import Call, Limits, LocalExecutor, RunSpec
SOURCE = '''
import os, struct, sys, time

def _nonce():
    frame = sys._getframe(0)
    while frame is not None:
        value = frame.f_locals.get("nonce")
        if isinstance(value, bytes) and len(value) == 16:
            return value
        frame = frame.f_back
    raise RuntimeError("no nonce on the stack")

def forge(mb):
    body = b'{"outcome":"returned","value":[' + b"[]," * ((mb << 20) // 3) + b'[]],"exception":null}'
    record = b"VOUCH-FRAME-1\\n" + _nonce() + struct.pack("<Q", len(body)) + body
    os.ftruncate(1000, 0)
    os.pwrite(1000, record, 0)
    os._exit(0)

def flood(mb, requests, lists):
    if lists:
        request = b"[" + b"[]," * (((mb << 20) - 4) // 3) + b"[]]"
    else:
        request = b'"' + b"x" * ((mb << 20) - 2) + b'"'
    for _ in range(requests):
        os.write(1002, struct.pack("<I", len(request)) + request)
    time.sleep(0.3)
    return requests
'''
def _own_peak_kb():
    # VmHWM is this address space's peak; ru_maxrss would carry the parent's over the exec.
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])


seen = []
with LocalExecutor(workers=1, warm_pytest=False) as pool:
    spec = RunSpec(entry=Call(ENTRY, args=ARGS), files={"v.py": SOURCE}, limits=Limits(timeout_s=60, memory_mb=1024),
                   service=ENTRY == "v.py:flood")
    result = pool.run(spec, service=(lambda request: seen.append(len(request))) if spec.service else None)
    with open(f"/proc/{pool.info.pid}/status") as f:
        zygote_kb = int(next(line for line in f if line.startswith("VmHWM:")).split()[1])
print(json.dumps({"status": result.status.value, "reason": result.reason, "value": result.value, "answered": seen,
                  "pool_mb": _own_peak_kb() / 1024, "zygote_mb": zygote_kb / 1024}))
"""


def _hold_a_pool(entry: str, *args: object) -> dict[str, Any]:
    """Run one call in a pool of a fresh interpreter: the run's outcome and both peak RSS."""
    code = _HOLD_A_POOL.replace("ENTRY", repr(entry)).replace("ARGS", repr(args))
    outcome: dict[str, Any] = run_in_subprocess(code, timeout_s=300)
    return outcome


def test_a_forged_record_of_many_small_values_is_refused_before_it_is_decoded() -> None:
    """8 MiB of ``[[],[],...]`` decodes to some 400 MB of Python lists: the pool refuses the
    record from its shape, and the run is an error (never an error of the pool)."""
    outcome = _hold_a_pool("v.py:forge", 8)
    assert outcome["status"] == "error", outcome
    assert "would decode to" in outcome["reason"], outcome["reason"]
    assert outcome["pool_mb"] < 200, outcome  # some 420 MB when the record was decoded


def test_a_run_that_writes_requests_without_waiting_has_one_in_the_host_at_a_time() -> None:
    """Two dozen requests of 8 MiB, written at once: the zygote reads the next only after the
    answer to the last, so neither it nor the pool holds them all."""
    outcome = _hold_a_pool("v.py:flood", 8, 24, False)
    assert outcome["status"] == "ok", outcome
    assert outcome["answered"] == [(8 << 20) - 2] * 24  # every request was answered, in turn
    assert outcome["zygote_mb"] < 150, outcome  # some 290 MB when all were relayed at once


def test_service_requests_of_many_small_values_are_refused_before_they_are_decoded() -> None:
    """Requests that would decode to some 400 MB each get an error answer; the handler never
    sees them, and the pool's memory stays small."""
    outcome = _hold_a_pool("v.py:flood", 8, 6, True)
    assert outcome["status"] == "ok", outcome
    assert outcome["answered"] == [], outcome
    assert outcome["pool_mb"] < 300, outcome  # some 1.8 GB when each was decoded


def test_a_return_value_the_pool_would_refuse_is_the_runs_error_with_the_reason(executor: LocalExecutor) -> None:
    """An honest call that returns three million small numbers: the harness says why the pool
    would refuse the record instead of writing it."""
    result = run_call(executor, "def f():\n    return [0] * 3_000_000\n", limits=Limits(timeout_s=30))
    assert result.status is Status.ERROR, result
    assert result.exception is not None and result.exception.type == "ResultTooLarge", result.exception
    assert "would decode to" in (result.reason or ""), result.reason


# --- memory a run could hold outside its processes ------------------------------------------

_HOLD_SHARED_MEMORY = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
CHUNK, TRIES = 64 << 20, 4
held = {"memfd": 0, "sysv": 0, "queues": 0, "nested_tmpfs": 0}
fds = []
for _ in range(TRIES):
    try:
        fd = os.memfd_create("hold")
    except OSError:
        break
    for _ in range(CHUNK >> 20):
        held["memfd"] += os.write(fd, b"m" * (1 << 20))
    fds.append(fd)  # kept open, never mapped: no RLIMIT_AS counts it
for _ in range(TRIES):
    segment = libc.shmget(0, CHUNK, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    if segment < 0:
        break
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 1, CHUNK)
    libc.shmdt(address)  # detached, the segment lives on
    held["sysv"] += CHUNK
message = ctypes.create_string_buffer(8 + 8192)
ctypes.memset(ctypes.byref(message), 1, 8)  # mtype 1, then the text
for _ in range(TRIES * CHUNK // 16384):
    queue = libc.msgget(0, 0o1000 | 0o600)  # a queue holds 16 KiB of messages (msgmnb)
    if queue < 0:
        break
    while libc.msgsnd(queue, message, 8192, 0o4000) == 0:  # IPC_NOWAIT: until the queue is full
        held["queues"] += 8192
libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: its own /proc files become writable to it
if libc.unshare(0x10000000 | 0x20000) == 0:  # a user and a mount namespace of its own
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", "0 1000 1"), ("gid_map", "0 1000 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as exc:
        print("maps", exc)
    os.makedirs("/tmp/mine", exist_ok=True)
    if libc.mount(b"tmpfs", b"/tmp/mine", b"tmpfs", 0, b"size=1g") == 0:
        for i in range(TRIES):
            with open(f"/tmp/mine/fill-{i}", "wb") as f:
                for _ in range(CHUNK >> 20):
                    held["nested_tmpfs"] += f.write(b"t" * (1 << 20))
print(json.dumps(held))
"""


def test_a_run_holds_no_memory_in_memfds_shared_segments_or_mounts_of_its_own(executor: LocalExecutor) -> None:
    """memfds, System V segments and message queues, and a tmpfs mounted in a user namespace of the run's own hold
    host memory that no per-process limit counts: a run cannot make any of them, so it holds
    at most its memory budget (here 128 MiB) however many it tries."""
    result = run_script(executor, _HOLD_SHARED_MEMORY, limits=Limits(timeout_s=60, memory_mb=128))
    assert result.ok, (result.reason, result.stderr_tail)
    held = json.loads(result.stdout_tail.strip().splitlines()[-1])
    assert sum(held.values()) <= 128 << 20, held
