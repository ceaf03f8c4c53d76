"""The init of a run's PID namespace: the spare stays PID 1 and the run is its child.

A process that is PID 1, with pids below 64 around it and no parent it can see, is a sandbox's
(``getpid() < 64`` told the judged code so). So the spare, once its identity is set, makes the
run's process at an ordinary pid (the host's own next pids: the PID counter of the new
namespace is set from the host's before the clone, ``/proc/sys/kernel/ns_last_pid``), and stays
the namespace's init. That is done ahead of time, off the run's path.

The run's process keeps the spare's memory, and the init gets none of it: the spare makes the
run's process sharing its memory and at once executes a small init program of vouch's own
(``hand_over``, ``load_program``), so no page table is copied for the run and none is left for
the init to hold (copying and then faulting the pool's ~30 MB heap a second time cost a trivial
run ~40% of its time). Where there is no such program (another architecture, a machine that
will not execute it), the spare makes the run's process by a raw clone and stays a Python init
(``_python_init``), at that cost.

The init is vouch's code and the run cannot reach it: it is non-dumpable (no ``ptrace``, none of
its ``/proc`` files, descriptors or memory) before the run's process goes on, it holds no handler
for any signal, and the kernel does not deliver a signal without one to a namespace's init from
inside the namespace (``kill``, ``kill(-1)``, the run's process group). It reaps every process of
the namespace, and when the run's process ends it writes the wait status the kernel gave it, and
the time and memory of the namespace's processes, on a pipe only it holds (``RELAY``), then
exits: the kernel then kills whatever the run left, as it did when the run was PID 1 itself. The
pool reads the run's end from that pipe, never from the run.
"""

from __future__ import annotations

import fcntl
import os
import resource
import secrets
import signal
import struct
from typing import NamedTuple, NoReturn

from vouch.exec import _linux

RELAY = struct.Struct("<i4x5q104x")
"""The run's end as its init saw it: the wait status, then the kernel's ``struct rusage`` of the
namespace's reaped processes (user and system CPU as seconds and microseconds, peak RSS in KiB,
the rest unread)."""
LOST_RUN = 125
"""The init program's exit code when no process of its namespace is left and none was the run's."""
_LAST_PID = "/proc/sys/kernel/ns_last_pid"
_PID_MAX = "/proc/sys/kernel/pid_max"
_JITTER = 48
"""Up to this many pids are skipped past the host's counter, as other processes would take them."""
_LOWEST = 300
"""Where the kernel starts again when pids wrap past ``pid_max``."""
_MFD_EXEC = 0x10

_PROGRAM_CODE = {
    # The init program, started as argv ["init"] with the environment "R=<the run's pid in the
    # namespace>", "O=<the relay's descriptor>", "G=<the gate's descriptor>", signals blocked.
    "x86_64": b"".join(
        (
            b"\xbf\x04\x00\x00\x00",  # mov edi, 4               prctl(PR_SET_DUMPABLE, 0)
            b"\x31\xf6",  # xor esi, esi
            b"\xb8\x9d\x00\x00\x00",  # mov eax, 157
            b"\x0f\x05",  # syscall
            b"\xbf\x0f\x00\x00\x00",  # mov edi, 15              prctl(PR_SET_NAME, argv[0])
            b"\x48\x8b\x74\x24\x08",  # mov rsi, [rsp + 8]
            b"\xb8\x9d\x00\x00\x00",  # mov eax, 157
            b"\x0f\x05",  # syscall
            b"\x48\x8b\x74\x24\x18",  # mov rsi, [rsp + 24]      envp[0]: the run's pid
            b"\xe8\x7f\x00\x00\x00",  # call parse
            b"\x49\x89\xc4",  # mov r12, rax
            b"\x48\x8b\x74\x24\x20",  # mov rsi, [rsp + 32]      envp[1]: the relay
            b"\xe8\x72\x00\x00\x00",  # call parse
            b"\x49\x89\xc5",  # mov r13, rax
            b"\x48\x8b\x74\x24\x28",  # mov rsi, [rsp + 40]      envp[2]: the gate
            b"\xe8\x65\x00\x00\x00",  # call parse
            b"\x89\xc7",  # mov edi, eax             close(gate): the run's process goes on
            b"\xb8\x03\x00\x00\x00",  # mov eax, 3
            b"\x0f\x05",  # syscall
            b"\x48\x81\xec\x00\x01\x00\x00",  # sub rsp, 256     [rsp] status, [rsp + 8] rusage
            b"\xbf\xff\xff\xff\xff",  # reap: mov edi, -1        wait4(-1, &status, __WALL, NULL)
            b"\x48\x89\xe6",  # mov rsi, rsp
            b"\xba\x00\x00\x00\x40",  # mov edx, 0x40000000
            b"\x45\x31\xd2",  # xor r10d, r10d
            b"\xb8\x3d\x00\x00\x00",  # mov eax, 61
            b"\x0f\x05",  # syscall
            b"\x4c\x39\xe0",  # cmp rax, r12
            b"\x74\x0d",  # je done
            b"\x48\x83\xf8\xf6",  # cmp rax, -ECHILD
            b"\x75\xde",  # jne reap                 another process of the namespace
            b"\xbf\x7d\x00\x00\x00",  # mov edi, 125             LOST_RUN
            b"\xeb\x25",  # jmp quit
            b"\xbf\xff\xff\xff\xff",  # done: mov edi, -1        getrusage(RUSAGE_CHILDREN, rsp + 8)
            b"\x48\x8d\x74\x24\x08",  # lea rsi, [rsp + 8]
            b"\xb8\x62\x00\x00\x00",  # mov eax, 98
            b"\x0f\x05",  # syscall
            b"\x44\x89\xef",  # mov edi, r13d            write(relay, rsp, RELAY.size)
            b"\x48\x89\xe6",  # mov rsi, rsp
            b"\xba\x98\x00\x00\x00",  # mov edx, 152
            b"\xb8\x01\x00\x00\x00",  # mov eax, 1
            b"\x0f\x05",  # syscall
            b"\x31\xff",  # xor edi, edi
            b"\xb8\xe7\x00\x00\x00",  # quit: mov eax, 231       exit_group(edi)
            b"\x0f\x05",  # syscall
            b"\x48\x83\xc6\x02",  # parse: add rsi, 2        skip "X=", read decimal digits
            b"\x31\xc0",  # xor eax, eax
            b"\x0f\xb6\x0e",  # digit: movzx ecx, byte [rsi]
            b"\x83\xe9\x30",  # sub ecx, '0'
            b"\x83\xf9\x09",  # cmp ecx, 9
            b"\x77\x0c",  # ja end
            b"\x48\x6b\xc0\x0a",  # imul rax, rax, 10
            b"\x48\x01\xc8",  # add rax, rcx
            b"\x48\xff\xc6",  # inc rsi
            b"\xeb\xe9",  # jmp digit
            b"\xc3",  # end: ret
        )
    ),
}
_ELF_MACHINE = {"x86_64": 62}


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


def _elf(machine: int, code: bytes) -> bytes:
    """A static executable of one read-and-execute segment holding ``code``, entered at its start."""
    base = 0x400000
    headers = 64 + 2 * 56
    size = headers + len(code)
    ident = b"\x7fELF" + bytes((2, 1, 1, 0)) + bytes(8)  # 64-bit, little-endian, version 1, System V
    file_header = struct.pack("<16sHHIQQQIHHHHHH", ident, 2, machine, 1, base + headers, 64, 0, 0, 64, 56, 2, 64, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)  # PT_LOAD, R+X
    stack = struct.pack("<IIQQQQQQ", 0x6474E551, 6, 0, 0, 0, 0, 0, 16)  # PT_GNU_STACK, R+W
    return file_header + load + stack + code


def load_program() -> int:
    """The init program for this machine in a sealed memfd, checked to start and reap: its
    descriptor (close-on-exec), or -1 when there is none or it cannot run here."""
    machine = os.uname().machine
    code = _PROGRAM_CODE.get(machine)
    if code is None or not _linux.can_hand_over():
        return -1
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    try:
        fd = os.memfd_create("init", flags | _MFD_EXEC)
    except OSError:
        fd = os.memfd_create("init", flags)  # before Linux 6.3 there is no MFD_EXEC; every memfd may run
    try:
        os.write(fd, _elf(_ELF_MACHINE[machine], code))
        seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
        if _program_runs(fd):
            return fd
    except OSError:
        pass  # no sealed memfd: no program
    os.close(fd)
    return -1


def _program_runs(program_fd: int) -> bool:
    """Hand a throw-away process over to the program: its child must go on past the gate, and
    the program must reap it and, told another pid for the run, exit ``LOST_RUN``."""
    check_r, check_w = os.pipe()
    pid = _linux.clone_process(0)
    if pid == 0:
        try:
            _, relay_w = os.pipe()
            await_init(_hand_over(0, relay_w, program_fd))
            os.write(check_w, b"k")
        finally:
            os._exit(0)
    os.close(check_w)
    _, status = os.waitpid(pid, 0)
    went_on = os.read(check_r, 1) == b"k"
    os.close(check_r)
    return went_on and os.waitstatus_to_exitcode(status) == LOST_RUN


def start_run(host_last: int, relay_w: int, program_fd: int = -1) -> int:
    """In a spare (PID 1 of its namespace, its uid set): make the run's process at an ordinary
    pid, and become the namespace's init (the program ``program_fd``, or ``_python_init`` when -1).

    Returns in the run's process only, which no longer holds ``relay_w``: the gate to pass to
    ``await_init`` before anything but vouch's own code runs (-1 for a Python init, which is
    non-dumpable already). Without a host counter (0), the run gets the namespace's next pid.
    """
    run_pid = 2  # the namespace's next pid after its init
    if host_last > 0:
        chosen = _ordinary_pid(host_last)
        try:
            with open(_LAST_PID, "w") as f:
                f.write(str(chosen))
            run_pid = chosen + 1
        except OSError:
            pass  # a kernel that refuses it: the run gets pid 2, which tells but harms nothing
    gate = -1
    if program_fd >= 0:
        gate = _hand_over(run_pid, relay_w, program_fd)
    else:
        _clone_run(relay_w)
    os.close(relay_w)
    _linux.prctl(_linux.PR_SET_DUMPABLE, 1)
    _linux.prctl(_linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    # Its own session and process group, as a program started on its own has: kill(0) and
    # killpg(getpgrp()) reach the run's processes, and its ids are ordinary pids, not 1.
    os.setsid()
    return gate


def await_init(gate: int) -> None:
    """Wait until the init program is non-dumpable (it closes the gate then); -1: nothing to wait for."""
    if gate < 0:
        return
    while os.read(gate, 1):
        pass
    os.close(gate)


def _hand_over(run_pid: int, relay_w: int, program_fd: int) -> int:
    """Become the init program over a child that keeps this process's memory; returns in the
    child, with the gate's read end: it reads end of file once the program is non-dumpable."""
    gate_r, gate_w = os.pipe()
    # The program keeps the relay and the gate; every other descriptor closes when it starts.
    if not _linux.close_on_exec_from(0):
        for name in os.listdir("/proc/self/fd"):
            try:
                os.set_inheritable(int(name), False)
            except OSError:
                continue  # the listing's own descriptor, closed already
    os.set_inheritable(relay_w, True)
    os.set_inheritable(gate_w, True)
    env = [f"R={run_pid}".encode(), f"O={relay_w}".encode(), f"G={gate_w}".encode()]
    _linux.hand_over(program_fd, [b"init"], env)
    os.close(gate_w)
    return gate_r


def _clone_run(relay_w: int) -> None:
    """Make the run's process by a raw clone (a copy of this one) and stay its Python init."""
    # Non-dumpable before the clone: the run's process sets itself dumpable again, so there is no
    # moment when the init is dumpable while the run's process exists.
    _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
    # A raw clone, not os.fork(): C libraries' fork handlers (a BLAS thread pool's, say) would
    # wait for threads this process never had, since it was itself cloned from the pool's.
    pid = _linux.clone_process(0)
    if pid != 0:
        _python_init(pid, relay_w)


def _python_init(run: int, relay_w: int) -> NoReturn:
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
                relayed = RELAY.pack(status, *_timeval(usage.ru_utime), *_timeval(usage.ru_stime), usage.ru_maxrss)
                os.write(relay_w, relayed)
                break
    finally:
        os._exit(0)


def _timeval(seconds: float) -> tuple[int, int]:
    whole = int(seconds)
    return whole, round((seconds - whole) * 1_000_000)


def read_end(relay_r: int) -> RunEnd | None:
    """The run's end its init relayed, or None when the init ended without relaying it."""
    try:
        data = os.read(relay_r, RELAY.size)
    except BlockingIOError:
        return None
    if len(data) != RELAY.size:
        return None
    status, user_s, user_us, system_s, system_us, maxrss = RELAY.unpack(data)
    cpu_s = user_s + system_s + (user_us + system_us) / 1_000_000
    return RunEnd(status=status, cpu_s=cpu_s, maxrss_kb=maxrss)
