"""Thin ctypes bindings for the Linux primitives Python 3.11 does not expose.

Only the engine's own code calls these; every function raises ``OSError`` with the
errno on failure, like the ``os`` module does.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import socket
import struct
from collections.abc import Callable
from typing import NamedTuple

# PyDLL keeps the GIL held during the call: a raw clone must not run while another
# thread could hold the GIL, and the child must come back with the GIL still its own.
_libc = ctypes.CDLL(None, use_errno=True)
_libc_gil = ctypes.PyDLL(None, use_errno=True)
_api = ctypes.pythonapi

CLONE_VM = 0x00000100
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

_SYS_CLONE = {"x86_64": 56, "aarch64": 220}
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_CAP_LAST_CAP_FALLBACK = 40

# statvfs f_flag bits (ST_*) and the mount flags they correspond to; a remount inside a
# user namespace must keep every flag the outer mount has locked, so we copy them over.
_ST_TO_MS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}


def _check(result: int, what: str) -> int:
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def clone_process(flags: int) -> int:
    """Fork the calling (single-threaded) interpreter into new namespaces.

    Behaves like ``os.fork()``: returns 0 in the child and the child's pid in the parent,
    running CPython's before/after fork hooks around a raw ``clone`` so that one system
    call creates the process and its namespaces (a second fork would cost another ~1.5 ms).
    """
    machine = os.uname().machine
    if machine not in _SYS_CLONE:
        raise OSError(f"clone: unsupported architecture {machine!r}")
    _api.PyOS_BeforeFork()
    pid = _libc_gil.syscall(
        ctypes.c_long(_SYS_CLONE[machine]),
        ctypes.c_ulong(flags | SIGCHLD),
        ctypes.c_void_p(0),
        ctypes.c_void_p(0),
        ctypes.c_void_p(0),
        ctypes.c_void_p(0),
    )
    if pid == 0:
        _api.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    _api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone: {os.strerror(err)}")
    return int(pid)


_HAND_OVER_CODE = {
    # long hand_over(long clone_flags, long program_fd, char **argv, char **envp), System V ABI.
    # After the clone the parent touches no memory, the stack included: the child has it now.
    "x86_64": b"".join(
        (
            b"\x53",  # push rbx                (the child pops these two again)
            b"\x41\x54",  # push r12
            b"\x48\x89\xd3",  # mov rbx, rdx            argv
            b"\x49\x89\xcc",  # mov r12, rcx            envp
            b"\x49\x89\xf1",  # mov r9, rsi             program_fd
            b"\xb8\x38\x00\x00\x00",  # mov eax, 56         clone(clone_flags, 0, 0, 0, 0)
            b"\x31\xf6",  # xor esi, esi
            b"\x31\xd2",  # xor edx, edx
            b"\x45\x31\xd2",  # xor r10d, r10d
            b"\x45\x31\xc0",  # xor r8d, r8d
            b"\x0f\x05",  # syscall
            b"\x48\x85\xc0",  # test rax, rax
            b"\x7e\x29",  # jle child                the child (0), or no child (-errno)
            b"\x44\x89\xcf",  # mov edi, r9d            execveat(program_fd, "", argv, envp,
            b"\x48\x8d\x35\x23\x00\x00\x00",  # lea rsi, [rip + empty]           AT_EMPTY_PATH)
            b"\x48\x89\xda",  # mov rdx, rbx
            b"\x4d\x89\xe2",  # mov r10, r12
            b"\x41\xb8\x00\x10\x00\x00",  # mov r8d, 0x1000
            b"\xb8\x42\x01\x00\x00",  # mov eax, 322
            b"\x0f\x05",  # syscall
            b"\xbf\x7f\x00\x00\x00",  # mov edi, 127           it came back: exit_group(127)
            b"\xb8\xe7\x00\x00\x00",  # mov eax, 231
            b"\x0f\x05",  # syscall
            b"\x41\x5c",  # child: pop r12
            b"\x5b",  # pop rbx
            b"\xc3",  # ret
            b"\x00",  # empty: ""
        )
    ),
}
_SigSet = ctypes.c_ubyte * 128  # glibc's sigset_t
_EVERY_SIGNAL = _SigSet(*([0xFF] * 128))
_SIG_BLOCK, _SIG_SETMASK = 0, 2
_hand_over_code: Callable[[int, int, int, int], int] | None = None
_hand_over_arguments: list[object] = []
"""The argument arrays of every hand-over: the program's process reads them while its execve
runs, from the memory the child goes on with, so the child never frees them."""


def can_hand_over() -> bool:
    """Whether ``hand_over`` works here (its code exists for this machine, and may be mapped)."""
    try:
        _hand_over_function()
    except OSError:
        return False
    return True


def _hand_over_function() -> Callable[[int, int, int, int], int]:
    """The hand-over code, mapped once (a pool maps it before it clones its spares)."""
    global _hand_over_code
    if _hand_over_code is not None:
        return _hand_over_code
    code = _HAND_OVER_CODE.get(os.uname().machine)
    if code is None:
        raise OSError(errno.ENOSYS, f"hand_over: no code for {os.uname().machine!r}")
    # Never writable and executable at once: the code is written to a memfd, mapped read and execute.
    fd = os.memfd_create("vouch-hand-over")
    try:
        os.write(fd, code)
        _libc.mmap.restype = ctypes.c_void_p
        address = _libc.mmap(
            None,
            ctypes.c_size_t(len(code)),
            mmap.PROT_READ | mmap.PROT_EXEC,
            mmap.MAP_PRIVATE,
            fd,
            ctypes.c_long(0),
        )
    finally:
        os.close(fd)
    if address in (None, ctypes.c_void_p(-1).value):
        err = ctypes.get_errno()
        raise OSError(err, f"hand_over: mmap: {os.strerror(err)}")
    # PYFUNCTYPE keeps the GIL across the call, as clone_process's PyDLL does.
    prototype = ctypes.PYFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
    _hand_over_code = prototype(address)
    return _hand_over_code


def hand_over(program_fd: int, argv: list[bytes], env: list[bytes]) -> int:
    """Make a child that shares this process's memory, and turn this process into the program
    ``program_fd`` (an executable memfd) at once: the child goes on with the memory alone, so
    no page table is copied for it, and the program starts in a small address space of its own.

    Returns 0 in the child, after CPython's after-fork hooks; never returns in this process,
    which exits 127 when the program cannot be executed. Signals are blocked across the clone
    (a handler would run on the stack the two processes share) and unblocked again in the
    child; the program starts with them blocked. The child must not run code it does not trust
    before the program has started (the program's own way of saying so).

    Raises:
        OSError: No child could be made (this process goes on as before), or there is no
            hand-over on this machine.
    """
    function = _hand_over_function()
    argv_array = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
    env_array = (ctypes.c_char_p * (len(env) + 1))(*env, None)
    _hand_over_arguments.append((argv_array, env_array))
    # Through libc, not signal.pthread_sigmask: that one builds an enum member per signal
    # (~0.2 ms for a block and its undoing).
    mask = _SigSet()
    _check(_libc.pthread_sigmask(_SIG_BLOCK, ctypes.byref(_EVERY_SIGNAL), ctypes.byref(mask)), "pthread_sigmask")
    _api.PyOS_BeforeFork()
    pid = function(CLONE_VM | SIGCHLD, program_fd, ctypes.addressof(argv_array), ctypes.addressof(env_array))
    if pid == 0:
        _api.PyOS_AfterFork_Child()
        _libc.pthread_sigmask(_SIG_SETMASK, ctypes.byref(mask), None)
        return 0
    # Only a clone that failed comes back here: this process is still the only one.
    _api.PyOS_AfterFork_Parent()
    _libc.pthread_sigmask(_SIG_SETMASK, ctypes.byref(mask), None)
    _hand_over_arguments.pop()
    raise OSError(-pid, f"clone: {os.strerror(-pid)}")


_SYS_CLOSE_RANGE = 436  # the same number on every architecture (new syscall table)
_CLOSE_RANGE_CLOEXEC = 4


def close_on_exec_from(first: int) -> bool:
    """Mark every descriptor from ``first`` on close-on-exec in one call; False on a kernel
    without ``close_range`` (before 5.11), where nothing was marked."""
    result = _libc.syscall(
        ctypes.c_long(_SYS_CLOSE_RANGE),
        ctypes.c_uint(first),
        ctypes.c_uint(0xFFFFFFFF),
        ctypes.c_uint(_CLOSE_RANGE_CLOEXEC),
    )
    return bool(result == 0)


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, nstype: int) -> None:
    """Move the calling thread into the namespace ``fd`` refers to (os.setns is 3.12+)."""
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode() if source is not None else None,
            target.encode(),
            fstype.encode() if fstype is not None else None,
            ctypes.c_ulong(flags),
            data.encode() if data is not None else None,
        ),
        f"mount {target}",
    )


def locked_mount_flags(path: str) -> int:
    """The mount flags of the mount holding ``path`` that a bind remount must preserve."""
    st_flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if st_flags & st)


_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int


_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """Bring up ``lo`` in the calling process's network namespace (needs CAP_NET_ADMIN over it).

    Raises:
        OSError: The ioctl was refused.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    return _check(_prctl(option, arg2, arg3, arg4, arg5), f"prctl({option})")


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except OSError:
        return _CAP_LAST_CAP_FALLBACK


_LAST_CAP = _last_cap()


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_all_capabilities() -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable capability sets."""
    for cap in range(_LAST_CAP + 1):
        prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def effective_capabilities() -> int:
    """The calling process's effective capability mask, read from /proc."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def map_own_ids(uid: int, gid: int) -> None:
    """In a user namespace this process just entered, map ``uid`` and ``gid`` (its ids outside)
    to themselves: the one map a process without root may write, setgroups denied first."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_RET_K = 0x20, 0x15, 0x06
_X32 = 0x40000000
_UNBUDGETED_SYSCALLS = {
    # AUDIT_ARCH_* -> (memfd_create, memfd_secret, shmget, msgget, msgsnd, msgrcv, msgctl) and,
    # on i386, the ipc() multiplexer
    0xC000003E: (319, 447, 29, 68, 69, 70, 71, *(_X32 | n for n in (319, 29, 68, 69, 70, 71))),  # x86_64, x32
    0x40000003: (356, 447, 395, 399, 400, 401, 402, 117),  # i386, reachable from x86_64 through int 0x80
    0xC00000B7: (279, 447, 194, 186, 189, 188, 187),  # aarch64
}
"""System calls that make memory no per-process limit counts: memfds (RLIMIT_AS counts them only
while mapped), System V shared memory segments (which outlive every process attached) and System V
message queues (whose messages the kernel holds until read, however many queues there are)."""


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _seccomp_program(denied: dict[int, tuple[int, ...]], errno: int) -> list[tuple[int, int, int, int]]:
    """A classic BPF program: the listed system calls of each architecture fail with ``errno``."""
    program: list[tuple[int, int, int, int]] = [(_BPF_LD_W_ABS, 0, 0, 4)]  # seccomp_data.arch
    denials: list[int] = []
    for arch, numbers in denied.items():
        program.append((_BPF_JEQ_K, 0, len(numbers) + 2, arch))  # another arch: skip this block
        program.append((_BPF_LD_W_ABS, 0, 0, 0))  # seccomp_data.nr
        for number in numbers:
            denials.append(len(program))
            program.append((_BPF_JEQ_K, 0, 0, number))
        program.append((_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    program.append((_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    deny = len(program)
    program.append((_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno))
    for index in denials:
        code, _, jf, k = program[index]
        program[index] = (code, deny - index - 1, jf, k)
    return program


def deny_unbudgeted_memory() -> None:
    """Make ``memfd_create``, ``memfd_secret``, ``shmget`` and the message queue calls (``msgget``,
    ``msgsnd``, ``msgrcv``, ``msgctl``) fail with ENOSYS in this process and
    every process it starts (a seccomp filter; needs no_new_privs). Code that uses them then
    sees what it sees on a kernel without them and falls back to files, which a run writes into
    its disk budget.

    Raises:
        OSError: The filter was refused.
    """
    program = _seccomp_program(_UNBUDGETED_SYSCALLS, errno.ENOSYS)
    filters = (_SockFilter * len(program))(*(_SockFilter(*op) for op in program))
    fprog = _SockFprog(len(program), filters)
    prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


_ESRCH = 3
_SIGNAL_SYSCALLS = {
    # AUDIT_ARCH_* -> {system call: (argument naming the target, argument holding the signal or
    # None, targets: "any" for kill(), which also names process groups and -1; "pid" otherwise)}
    0xC000003E: {
        62: (0, 1, "any"),  # kill
        200: (0, 1, "pid"),  # tkill
        234: (0, 2, "pid"),  # tgkill
        129: (0, None, "pid"),  # rt_sigqueueinfo
        297: (0, None, "pid"),  # rt_tgsigqueueinfo
        _X32 | 62: (0, 1, "any"),
        _X32 | 200: (0, 1, "pid"),
        _X32 | 234: (0, 2, "pid"),
        _X32 | 524: (0, None, "pid"),
        _X32 | 536: (0, None, "pid"),
    },
    0x40000003: {
        37: (0, 1, "any"),
        238: (0, 1, "pid"),
        270: (0, 2, "pid"),
        178: (0, None, "pid"),
        335: (0, None, "pid"),
    },
    0xC00000B7: {
        129: (0, 1, "any"),
        130: (0, 1, "pid"),
        131: (0, 2, "pid"),
        138: (0, None, "pid"),
        240: (0, None, "pid"),
    },
}
"""The system calls that send a signal to a process named by its pid."""
_PIDFD_SEND_SIGNAL = {0xC000003E: (424, _X32 | 424), 0x40000003: (424,), 0xC00000B7: (424,)}
"""``pidfd_send_signal``, which names its target by a descriptor (a pidfd, or a ``/proc/PID``
directory) that a filter cannot resolve: refused whatever its target."""


class _Load(NamedTuple):
    offset: int
    """Where in ``seccomp_data`` the 32-bit word is."""


class _JumpIfEqual(NamedTuple):
    value: int
    label: str


class _Return(NamedTuple):
    action: int


class _Label(NamedTuple):
    name: str


_ARCH, _NR = _Load(4), _Load(0)


def _argument(index: int) -> _Load:
    """The low 32 bits of a system call's argument (``seccomp_data.args``, little-endian): what
    the kernel reads of a ``pid_t`` or an ``int`` signal."""
    return _Load(16 + 8 * index)


def _assemble(ops: list[_Load | _JumpIfEqual | _Return | _Label]) -> list[tuple[int, int, int, int]]:
    """Classic BPF from loads, forward jumps to labels and returns."""
    labels: dict[str, int] = {}
    position = 0
    for op in ops:
        if isinstance(op, _Label):
            labels[op.name] = position
        else:
            position += 1
    program: list[tuple[int, int, int, int]] = []
    for op in ops:
        if isinstance(op, _Load):
            program.append((_BPF_LD_W_ABS, 0, 0, op.offset))
        elif isinstance(op, _JumpIfEqual):
            jump = labels[op.label] - len(program) - 1
            if not 0 <= jump <= 255:
                raise OSError(f"seccomp: a jump of {jump} does not fit")
            program.append((_BPF_JEQ_K, jump, 0, op.value))
        elif isinstance(op, _Return):
            program.append((_BPF_RET_K, 0, 0, op.action))
    return program


def _guard_program(pid: int) -> list[tuple[int, int, int, int]]:
    """Signals to ``pid``, its process group or every process fail with ESRCH; the null signal (a
    probe that the process exists) and every other call go through."""
    allow, deny = _Return(_SECCOMP_RET_ALLOW), _Return(_SECCOMP_RET_ERRNO | _ESRCH)
    own, group, every = pid & 0xFFFFFFFF, -pid & 0xFFFFFFFF, 0xFFFFFFFF
    ops: list[_Load | _JumpIfEqual | _Return | _Label] = [_ARCH]
    ops += [_JumpIfEqual(arch, f"arch {arch}") for arch in _SIGNAL_SYSCALLS]
    ops.append(allow)
    for arch, calls in _SIGNAL_SYSCALLS.items():
        ops += [_Label(f"arch {arch}"), _NR]
        ops += [_JumpIfEqual(number, f"call {arch} {number}") for number in calls]
        ops += [_JumpIfEqual(number, "deny") for number in _PIDFD_SEND_SIGNAL[arch]]
        ops.append(allow)
        for number, (target, signal_arg, kind) in calls.items():
            matched = "deny" if signal_arg is None else f"signal {signal_arg}"
            ops += [_Label(f"call {arch} {number}"), _argument(target)]
            ops += [_JumpIfEqual(value, matched) for value in ((own, group, every) if kind == "any" else (own,))]
            ops.append(allow)
    for index in (1, 2):
        ops += [_Label(f"signal {index}"), _argument(index), _JumpIfEqual(0, "allow"), deny]
    ops += [_Label("allow"), allow, _Label("deny"), deny]
    return _assemble(ops)


def guard_parent() -> None:
    """Make every signal this process, or any process it starts, sends to its parent (by pid,
    by the parent's process group, or to every process) fail with ESRCH, as if there were no
    such process (as there is none in a run that has no judge). A seccomp filter (with
    no_new_privs set first, as every run has it). Nothing to guard when the parent is outside
    this process's PID namespace.

    A judge that is not the init of its PID namespace can be killed or stopped by a child of the
    same uid; the child is the judged program, which must not end or stall its judge.

    Raises:
        OSError: The filter was refused.
    """
    parent = os.getppid()
    if parent <= 0:
        return
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    program = _guard_program(parent)
    filters = (_SockFilter * len(program))(*(_SockFilter(*op) for op in program))
    fprog = _SockFprog(len(program), filters)
    prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog))
