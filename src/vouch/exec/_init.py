"""The init of a run's PID namespace: the spare stays PID 1 and the run is its child.

A process that is PID 1, with pids below 64 around it and no parent it can see, is a sandbox's
(``getpid() < 64`` told the judged code so). So the spare, once its sandbox is prepared, makes
the run's process (a fork) at an ordinary pid (the host's own next pids: the PID counter of
the new namespace is set from the host's before the fork, ``/proc/sys/kernel/ns_last_pid``), and
stays the namespace's init. That is done ahead of time, off the run's path.

The init is vouch's code and the run cannot reach it: it is non-dumpable (no ``ptrace``, none of
its ``/proc`` files, descriptors or memory), it holds no handler for any signal, and the kernel
does not deliver a signal without one to a namespace's init from inside the namespace (``kill``,
``kill(-1)``, the run's process group). It reaps every process of the namespace, and when the
run's process ends it writes the wait status the kernel gave it, and the time and memory of the
run's processes, on a pipe only it holds (``RELAY``), then exits: the kernel then kills whatever
the run left, as it did when the run was PID 1 itself. The pool reads the run's end from that
pipe, never from the run.
"""

from __future__ import annotations

import os
import resource
import secrets
import signal
import struct
from typing import NamedTuple, NoReturn

from vouch.exec import _linux

RELAY = struct.Struct("<iddq")
"""The run's end as its init saw it: wait status, user and system CPU seconds, peak RSS (KiB)."""
_LAST_PID = "/proc/sys/kernel/ns_last_pid"
_PID_MAX = "/proc/sys/kernel/pid_max"
_JITTER = 48
"""Up to this many pids are skipped past the host's counter, as other processes would take them."""
_LOWEST = 300
"""Where the kernel starts again when pids wrap past ``pid_max``."""


class RunEnd(NamedTuple):
    """What a run's init relayed about the run's process."""

    status: int
    """The wait status (``os.waitstatus_to_exitcode`` reads it)."""
    cpu_s: float
    maxrss_kb: int


def host_last_pid() -> int:
    """The host's PID counter now (0 when it cannot be read): the pid a run should be near."""
    try:
        with open(_LAST_PID) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def _ordinary_pid(last: int) -> int:
    """A PID counter for the run's namespace: past the host's ``last`` by a few, wrapping as the
    kernel does below ``pid_max``."""
    try:
        with open(_PID_MAX) as f:
            pid_max = int(f.read())
    except (OSError, ValueError):
        pid_max = 32768
    chosen = last + 1 + secrets.randbelow(_JITTER)
    if chosen >= pid_max - 2:
        chosen = _LOWEST + secrets.randbelow(_JITTER)
    return chosen


def start_run(host_last: int, relay_w: int) -> int:
    """In a prepared spare (PID 1 of its namespace): fork the run's process at an ordinary pid.

    Returns 0 in the run's process (which no longer holds ``relay_w``); the spare itself becomes
    the namespace's init and never returns. Without a host counter (0), the run gets the
    namespace's next pid.
    """
    if host_last > 0:
        try:
            with open(_LAST_PID, "w") as f:
                f.write(str(_ordinary_pid(host_last)))
        except OSError:
            pass  # a kernel that refuses it: the run gets pid 2, which tells but harms nothing
    # Non-dumpable before the fork: the run's process sets itself dumpable again, so there is no
    # moment when the init is dumpable while the run's process exists.
    _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
    # A raw clone, not os.fork(): C libraries' fork handlers (a BLAS thread pool's, say) would
    # wait for threads this process never had, since it was itself cloned from the pool's.
    pid = _linux.clone_process(0)
    if pid == 0:
        os.close(relay_w)
        _linux.prctl(_linux.PR_SET_DUMPABLE, 1)
        _linux.prctl(_linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        # Its own session and process group, as a program started on its own has: kill(0) and
        # killpg(getpgrp()) reach the run's processes, and its ids are ordinary pids, not 1.
        os.setsid()
        return 0
    _init(pid, relay_w)


def _init(run: int, relay_w: int) -> NoReturn:
    """Reap the namespace's processes until the run's ends; relay its end; exit."""
    try:
        for number in range(1, signal.NSIG):
            if number in (signal.SIGKILL, signal.SIGSTOP):
                continue
            try:
                signal.signal(number, signal.SIG_DFL)
            except (OSError, ValueError):
                continue  # not a signal this platform lets a handler be set for
        os.closerange(3, relay_w)
        os.closerange(relay_w + 1, 1 << 20)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == run:
                usage = resource.getrusage(resource.RUSAGE_CHILDREN)
                os.write(relay_w, RELAY.pack(status, usage.ru_utime, usage.ru_stime, usage.ru_maxrss))
                break
    finally:
        os._exit(0)


def read_end(relay_r: int) -> RunEnd | None:
    """The run's end its init relayed, or None when the init ended without relaying it."""
    try:
        data = os.read(relay_r, RELAY.size)
    except BlockingIOError:
        return None
    if len(data) != RELAY.size:
        return None
    status, utime, stime, maxrss = RELAY.unpack(data)
    return RunEnd(status=status, cpu_s=utime + stime, maxrss_kb=maxrss)
