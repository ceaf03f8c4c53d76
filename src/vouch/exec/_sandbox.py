"""Turns a freshly cloned child of the zygote into a sandbox, then hands it to the harness.

The zygote keeps one *spare* child per worker slot, cloned ahead of time into new user,
PID, mount, network, IPC and UTS namespaces, with its uid map written (run uid 1000 = an
unprivileged host uid of that slot). Building the sandbox is split so that the spare does
all it can before a run is assigned to it:

``hold`` (ahead of time, as the spare):
1. a session of its own; descriptors of what the sandbox binds back, opened while the child
   can still search every directory;
2. the child becomes uid/gid 1000 with no supplementary groups.

Then the spare stays PID 1 of its namespace, its init, and the run's process is its child, at
an ordinary pid (``_init``).

``prepare`` (ahead of time, in the run's process in full isolation):
3. directories the run cannot search but whose insides it needs (an interpreter under
   /root) are covered by a tmpfs with just those insides bound back;
4. the whole mount tree turns read-only and private; fresh tmpfs mounts cover /tmp,
   /var/tmp and /dev/shm; /proc is the new PID namespace's own; the host name stays the host's.

``enter`` (once the zygote sends the run, in the run's process):
5. hidden paths are covered (an empty read-only tmpfs over a directory, /dev/null over a
   file), and the run's working directory is bound in read-write;
6. stdio on the capture files and every other descriptor closed, rlimits, an empty
   capability set, no_new_privs, the scrubbed environment.

Weak isolation (only when the caller opted in) keeps what needs no namespace: the
unprivileged uid when the pool runs as root, rlimits, a session of its own, the
scrubbed environment and the private working directory.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import resource
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from vouch.exec import _hidden, _linux
from vouch.exec._harness import REPORT_FD, RESULT_FD
from vouch.exec._service import SERVICE_FD
from vouch.exec._spec import Limits

RUN_UID = 1000
READY_FD = REPORT_FD
"""Where the child reports a setup failure, and the harness that judged code starts
(``_harness.judged_code_starts``, which closes it before any such code runs)."""
assert SERVICE_FD == READY_FD + 1
PRIVATE_IN_RUNS = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - these are the dirs we cover
"""Directories every run gets a private, empty copy of: the host's are invisible in a run."""
_PRIVATE_TMP = PRIVATE_IN_RUNS
_PRIVATE_TMP_MB = 256
_ENV_ALLOWLIST = ("LANG", "LC_ALL", "TZ")

_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (new syscall table)
_libc = ctypes.CDLL(None, use_errno=True)


def visible_in_runs(path: str | os.PathLike[str]) -> str | None:
    """Why a run cannot read ``path`` (None when it can): under a directory every run gets a
    private copy of, or behind a directory other users cannot search (a home such as /root)."""
    real = os.path.realpath(path)
    for private in PRIVATE_IN_RUNS:
        if real == private or real.startswith(private + "/"):
            return f"{real} is under {private}, which is private in every run"
    if os.geteuid() != 0:
        exposed = _hidden.exposed_to_every_run()
        for own in user_private_dirs():
            if (real == own or _inside(real, own)) and not any(real == e or _inside(real, e) for e in exposed):
                return (
                    f"{real} is in {own}, which runs cannot see when vouch runs without root "
                    "(vouch.exec.expose_to_runs lets them)"
                )
        if any(real == e or _inside(real, e) for e in exposed):
            return None
    current = os.path.dirname(real)
    while True:
        try:
            mode = os.stat(current).st_mode
        except OSError:
            mode = 0o755  # not made yet: its parents decide
        if not mode & 0o001:
            return f"{current} cannot be searched by other users (runs run as one), so {real} is hidden from runs"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def user_private_dirs() -> tuple[str, ...]:
    """What the caller owns that a run must not see when it has the caller's uid: the home
    directory (by ``$HOME`` and by the password database) and the per-user runtime directory.

    Read in the caller's process (the pool's zygote starts with a scrubbed environment)."""
    candidates = [os.environ.get("HOME", ""), os.environ.get("XDG_RUNTIME_DIR", ""), f"/run/user/{os.geteuid()}"]
    try:
        candidates.append(pwd.getpwuid(os.geteuid()).pw_dir)
    except KeyError:
        pass  # a uid with no passwd entry: $HOME is all there is
    dirs = []
    for raw in candidates:
        if not raw:
            continue
        path = os.path.realpath(raw)
        private_already = any(path == t or path.startswith(t + "/") for t in PRIVATE_IN_RUNS)
        if path != "/" and os.path.isdir(path) and not private_already:
            dirs.append(path)
    return tuple(dict.fromkeys(dirs))


@dataclass(frozen=True)
class Exposure:
    """A directory the run cannot traverse, covered by a tmpfs with some paths bound back.

    The interpreter may live under a private home (``/root/.pyenv``); the run needs its
    standard library but nothing else of that home.
    """

    cover: str
    keep: tuple[str, ...]


def under_private_tmp(needed: list[str]) -> tuple[str, ...]:
    """The outermost of ``needed`` that a run's private tmpfs would cover."""
    inside = sorted(
        {os.path.realpath(p) for p in needed if os.path.realpath(p).startswith(tuple(t + "/" for t in _PRIVATE_TMP))}
    )
    return tuple(p for p in inside if not any(p != q and p.startswith(q + os.sep) for q in inside))


def plan_exposures(needed: list[str], covers: tuple[str, ...] = ()) -> tuple[Exposure, ...]:
    """For each needed path behind a directory others cannot search, or inside one of
    ``covers`` (directories hidden from runs whatever their mode: a rootless caller's home),
    say what to re-expose. Each of ``covers`` is covered even when nothing in it is needed."""
    forced = {os.path.realpath(c) for c in covers}
    by_cover: dict[str, list[str]] = {c: [] for c in sorted(forced) if not any(_inside(c, o) for o in forced)}
    for raw in needed:
        path = os.path.realpath(raw)
        if not os.path.exists(path):
            continue
        parts = path.split(os.sep)
        for depth in range(2, len(parts) + 1):
            ancestor = os.sep.join(parts[:depth])
            if ancestor in forced or (depth < len(parts) and not os.stat(ancestor).st_mode & 0o001):
                by_cover.setdefault(ancestor, []).append(path)
                break
    exposures = []
    for cover, keep in by_cover.items():
        # A kept path inside another kept path is already re-exposed by the outer one.
        unique = sorted(set(keep))
        outer = [p for p in unique if not any(p != q and p.startswith(q + os.sep) for q in unique)]
        exposures.append(Exposure(cover=cover, keep=tuple(outer)))
    return tuple(exposures)


def _inside(path: str, other: str) -> bool:
    """Whether ``path`` lies strictly inside ``other``."""
    return path != other and path.startswith(other.rstrip("/") + "/")


@dataclass(frozen=True)
class SpareSetup:
    """What a spare child needs before any run is assigned to it."""

    runs_dir: str
    host_uid: int
    exposures: tuple[Exposure, ...]
    stdout_fd: int
    stderr_fd: int
    result_fd: int
    ready_fd: int
    service_fd: int
    full: bool
    under_private_tmp: tuple[str, ...] = ()
    """Interpreter paths below /tmp, /var/tmp or /dev/shm, bound back over the private tmpfs."""
    switch_uid: bool = True
    relay_fd: int = -1
    """Full isolation: the write end of the pipe on which the spare, the namespace's init once it
    has made the run's process (``_init``), relays the run's end; -1 when the spare runs the run
    itself (weak isolation)."""
    host_last_pid: int = 0
    """The host's PID counter when the spare was cloned: the run's pid is made near it."""
    init_program_fd: int = -1
    """Full isolation: the namespace's init program (``_init.load_program``) the spare becomes,
    leaving its memory to the run's process; -1 when the spare stays a Python init."""
    rootless: bool = False
    """The pool has no root: the run's uid is the caller's, its groups cannot be dropped, and a
    visible runs directory is covered so that a run sees only its own working directory."""


@dataclass(frozen=True)
class JobSetup:
    """What the zygote sends a spare when it assigns it a run."""

    workdir: str
    hidden: tuple[str, ...]
    limits: Limits
    address_space_bytes: int
    env: Mapping[str, str]
    service: bool
    files: Mapping[str, bytes] | None = None
    """The working directory's files, for the run to write into its disk budget; None when the
    zygote wrote them into the directory on the host (a kept working directory)."""
    disk_mb: int | None = None
    exposed: tuple[str, ...] = ()
    """Paths the run may read although they lie in a covered directory (``expose_to_runs``)."""


@dataclass(frozen=True)
class Held:
    """A spare's state between ``hold`` and ``prepare``: its session and uid set, and what it
    opened while it could still search every directory."""

    setup: SpareSetup
    runs_dir_fd: int
    exposed: tuple[tuple[Exposure, tuple[tuple[str, int], ...]], ...] = ()
    """Each exposure with an O_PATH descriptor of each path it keeps."""
    covered: tuple[tuple[str, int], ...] = ()
    under_tmp: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Prepared:
    """A spare's state between ``prepare`` and ``enter``."""

    setup: SpareSetup
    runs_dir_fd: int
    covered: tuple[tuple[str, int], ...] = ()
    """Each covered directory with an O_PATH descriptor of what it covers, opened before the
    cover: the way to bind back a path the caller exposes later (without root only)."""
    under_tmp: tuple[tuple[str, int], ...] = ()
    """Each interpreter path under /tmp, /var/tmp or /dev/shm with an O_PATH descriptor of it,
    opened before the private tmpfs covered it: bound back over the run's own /tmp."""


class SetupError(Exception):
    """The sandbox could not be built; the run never started."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _make_tree_readonly_private() -> None:
    attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, _linux.MS_PRIVATE, 0)
    rc = _libc.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        b"/",
        ctypes.c_uint(_AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    if rc == 0:
        return
    # Kernels before 5.12 have no mount_setattr: remount each mount on its own.
    _linux.mount(None, "/", None, _linux.MS_REC | _linux.MS_PRIVATE)
    with open("/proc/self/mountinfo") as f:
        targets = [line.split()[4] for line in f]
    for target in targets:
        try:
            flags = _linux.locked_mount_flags(target)
            _linux.mount(None, target, None, _linux.MS_BIND | _linux.MS_REMOUNT | _linux.MS_RDONLY | flags)
        except OSError:
            # A mount we cannot remount (covered, or gone) is one the run cannot reach either.
            continue


def _hold(path: str) -> int | None:
    """An O_PATH descriptor for ``path``, opened while the child can still search any directory."""
    try:
        return os.open(path, os.O_PATH | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SetupError(f"cannot reach {path!r} to set up the sandbox: {exc}") from None


def _bind_held(fd: int, path: str) -> None:
    """Bind what ``fd`` holds (a directory or a file) at ``path``, making the mount point first."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(path, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    _linux.mount(f"/proc/self/fd/{fd}", path, None, _linux.MS_BIND | _linux.MS_REC)


def _expose(held: tuple[tuple[Exposure, tuple[tuple[str, int], ...]], ...]) -> None:
    for exposure, paths in held:
        _linux.mount("tmpfs", exposure.cover, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, "size=64k,mode=0755")
        for path, fd in paths:
            _bind_held(fd, path)
            os.close(fd)


def _bind_exposed(covered: tuple[tuple[str, int], ...], exposed: tuple[str, ...]) -> None:
    """Bind each exposed path that lies in a covered directory back in place, read-only, through
    the descriptor of what the cover hides (the covering tmpfs is made writable for the mount
    points, then read-only again). Hidden paths are covered after, so they win inside."""
    for cover, held in covered:
        inside = [p for p in exposed if _inside(p, cover)]
        if not inside:
            continue
        _linux.mount(None, cover, None, _linux.MS_REMOUNT | _NO_DEV_SUID)
        try:
            for path in inside:
                try:
                    fd = os.open(os.path.relpath(path, cover), os.O_PATH, dir_fd=held)
                except OSError:
                    continue  # gone, or not the caller's to read: nothing to bind
                try:
                    _bind_held(fd, path)
                    flags = _linux.locked_mount_flags(path)
                    _linux.mount(None, path, None, _linux.MS_BIND | _linux.MS_REMOUNT | _linux.MS_RDONLY | flags)
                finally:
                    os.close(fd)
        finally:
            _linux.mount(None, cover, None, _linux.MS_REMOUNT | _NO_DEV_SUID | _linux.MS_RDONLY)


def _cover_hidden(paths: tuple[str, ...]) -> None:
    for path in paths:
        try:
            is_dir = os.path.isdir(path)
            exists = os.path.lexists(path)
        except OSError:
            continue
        if not exists:
            continue  # absent, or behind a directory the run cannot search: hidden already
        if is_dir:
            _linux.mount(
                "tmpfs", path, "tmpfs", _linux.MS_RDONLY | _linux.MS_NOSUID | _linux.MS_NODEV, "size=4k,mode=0555"
            )
        else:
            _linux.mount("/dev/null", path, None, _linux.MS_BIND)
            _linux.mount(None, path, None, _linux.MS_BIND | _linux.MS_REMOUNT | _linux.MS_RDONLY)


_NO_DEV_SUID = _linux.MS_NOSUID | _linux.MS_NODEV


def _cover_runs_dir(runs_dir: str) -> bool:
    """Cover a runs directory the run can see with an empty tmpfs (its own working directory is
    bound onto it next). Without root every run has the caller's uid, so the other runs' working
    directories are not kept apart by their owners. Returns whether it covered (False when the
    directory is under the run's private /tmp, where the run cannot see it anyway)."""
    if not os.path.isdir(runs_dir):
        return False
    _linux.mount("tmpfs", runs_dir, "tmpfs", _NO_DEV_SUID, "size=64k,mode=0711")
    return True


def _bind_workdir(prepared: Prepared, workdir: str) -> None:
    # The workdir may sit under a path a tmpfs now covers: recreate the path, then bind the
    # directory (reached through the runs directory held open since before) onto it.
    name = os.path.relpath(workdir, prepared.setup.runs_dir)
    work_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=prepared.runs_dir_fd)
    os.makedirs(workdir, exist_ok=True)
    _linux.mount(f"/proc/self/fd/{work_fd}", workdir, None, _linux.MS_BIND)
    flags = _linux.locked_mount_flags(workdir)
    _linux.mount(None, workdir, None, _linux.MS_BIND | _linux.MS_REMOUNT | flags)
    os.close(work_fd)


_DISK_STAGE = "/tmp/.vouch-disk"  # noqa: S108 - inside the spare's own tmpfs, covered below


def _mount_disk_budget(job: JobSetup) -> int | None:
    """One tmpfs of ``disk_mb`` for everything the run writes: its /tmp, /var/tmp, /dev/shm and
    (unless kept for the caller) its working directory are directories of it, bound in place.
    Returns an O_PATH descriptor of the working directory's part, or None for a kept one."""
    os.mkdir(_DISK_STAGE, 0o700)
    _linux.mount("tmpfs", _DISK_STAGE, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, f"size={job.disk_mb}m,mode=0700")
    held = {}
    for target in _PRIVATE_TMP:
        if os.path.isdir(target):
            part = os.path.join(_DISK_STAGE, target.strip("/").replace("/", "-"))
            os.mkdir(part)
            os.chmod(part, 0o1777)  # noqa: S103 - the run's own /tmp, sticky as a /tmp is
            held[target] = os.open(part, os.O_PATH | os.O_DIRECTORY)
    work_fd = None
    if job.files is not None:
        work = os.path.join(_DISK_STAGE, "work")
        os.mkdir(work, 0o700)
        for rel, data in job.files.items():
            path = os.path.join(work, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        work_fd = os.open(work, os.O_PATH | os.O_DIRECTORY)
    # /tmp last: the stage lives in the spare's /tmp, which the bind then covers for good.
    for target in sorted(held, key=lambda t: t == _PRIVATE_TMP[0]):
        _linux.mount(f"/proc/self/fd/{held[target]}", target, None, _linux.MS_BIND)
        os.close(held[target])
    return work_fd


def _bind_under_tmp(held: tuple[tuple[str, int], ...]) -> None:
    for path, fd in held:
        os.makedirs(path, exist_ok=True)
        _linux.mount(f"/proc/self/fd/{fd}", path, None, _linux.MS_BIND | _linux.MS_REC)
        flags = _linux.locked_mount_flags(path)
        _linux.mount(None, path, None, _linux.MS_BIND | _linux.MS_REMOUNT | _linux.MS_RDONLY | flags)
        os.close(fd)


def _bind_budgeted_workdir(work_fd: int, job: JobSetup) -> None:
    # The working directory's path may lie under /tmp, now the budget's: recreate it there.
    os.makedirs(job.workdir, exist_ok=True)
    _linux.mount(f"/proc/self/fd/{work_fd}", job.workdir, None, _linux.MS_BIND)
    os.close(work_fd)


def _set_limits(job: JobSetup, own_init: bool) -> None:
    limits = job.limits
    cpu = limits.effective_cpu_s
    file_size = limits.file_size_mb * 1024 * 1024
    # The namespace's init (``_init``) has the run's uid too: it does not take one of the run's processes.
    processes = limits.processes + (1 if own_init else 0)
    for which, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (job.address_space_bytes, job.address_space_bytes)),
        (resource.RLIMIT_FSIZE, (file_size, file_size)),
        (resource.RLIMIT_NPROC, (processes, processes)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(which, value)


def _set_stdio(setup: SpareSetup, service: bool) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(setup.stdout_fd, 1)
    os.dup2(setup.stderr_fd, 2)
    os.dup2(setup.result_fd, RESULT_FD)
    os.dup2(setup.ready_fd, READY_FD)
    last_kept = READY_FD
    if service:
        os.dup2(setup.service_fd, SERVICE_FD)
        last_kept = SERVICE_FD
    os.closerange(3, RESULT_FD)
    os.closerange(last_kept + 1, 1 << 20)


def _set_environment(job: JobSetup) -> None:
    keep = {name: os.environ[name] for name in _ENV_ALLOWLIST if name in os.environ}
    hash_seed = os.environ.get("PYTHONHASHSEED", "0")
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update(
        {
            "PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
            "HOME": job.workdir,
            "TMPDIR": "/tmp",  # noqa: S108 - a private tmpfs in full isolation
            "PYTHONHASHSEED": hash_seed,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    os.environ.update(job.env)


def hold(setup: SpareSetup) -> Held:
    """As the spare: a session of its own, the descriptors of what the sandbox binds back, then
    the run's uid. Raises SetupError."""
    try:
        _linux.prctl(_linux.PR_SET_PDEATHSIG, 9)
        # A session of its own: kill(0, ...) from the run then reaches only its own group,
        # never the zygote's (where the spares of other slots are).
        os.setsid()
        runs_dir_fd = os.open(setup.runs_dir, os.O_PATH | os.O_DIRECTORY)
        if not setup.full:
            if setup.switch_uid:
                os.setgroups([])
                os.setresgid(setup.host_uid, setup.host_uid, setup.host_uid)
                os.setresuid(setup.host_uid, setup.host_uid, setup.host_uid)
                _linux.prctl(_linux.PR_SET_PDEATHSIG, 9)  # a uid change clears it
            return Held(setup=setup, runs_dir_fd=runs_dir_fd)
        # Hold what must be bound back while every directory is still searchable; files made
        # inside the user namespace need the mapped uid, so the mounts come after the switch.
        exposed = tuple((e, tuple((p, fd) for p in e.keep if (fd := _hold(p)) is not None)) for e in setup.exposures)
        covered = tuple((e.cover, fd) for e in setup.exposures if setup.rootless and (fd := _hold(e.cover)) is not None)
        under_tmp = tuple((p, fd) for p in setup.under_private_tmp if (fd := _hold(p)) is not None)
        if not setup.rootless:
            os.setgroups([])  # denied in a user namespace made without root (see _zygote)
        # The user namespace has no root (only the run's uid is mapped): the switch keeps the
        # capabilities the mounts need, and the run drops them all in ``enter``.
        os.setresgid(RUN_UID, RUN_UID, RUN_UID)
        os.setresuid(RUN_UID, RUN_UID, RUN_UID)
        _linux.prctl(_linux.PR_SET_PDEATHSIG, 9)
        return Held(setup=setup, runs_dir_fd=runs_dir_fd, exposed=exposed, covered=covered, under_tmp=under_tmp)
    except OSError as exc:
        raise SetupError(str(exc)) from None


def prepare(held: Held) -> Prepared:
    """Build everything of the sandbox that does not depend on the run: the mounts (in full
    isolation the run's process does it, in the namespaces its init shares). Raises SetupError."""
    setup = held.setup
    if not setup.full:
        return Prepared(setup=setup, runs_dir_fd=held.runs_dir_fd)
    try:
        _expose(held.exposed)
        _make_tree_readonly_private()
        for target in _PRIVATE_TMP:
            if os.path.isdir(target):
                options = f"size={_PRIVATE_TMP_MB}m,mode=1777"
                _linux.mount("tmpfs", target, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, options)
        _linux.mount("proc", "/proc", "proc", _linux.MS_NOSUID | _linux.MS_NODEV | _linux.MS_NOEXEC)
        # No user namespace inside the run: in one it could mount a tmpfs or make an IPC
        # namespace of its own, memory that no limit of the run counts.
        with open("/proc/sys/user/max_user_namespaces", "w") as f:
            f.write("0")
        # The UTS namespace keeps the host's own name, as a run outside vouch would see it: a
        # name of vouch's own would tell judged code that it is being judged.
        return Prepared(setup=setup, runs_dir_fd=held.runs_dir_fd, covered=held.covered, under_tmp=held.under_tmp)
    except OSError as exc:
        raise SetupError(str(exc)) from None


def enter(prepared: Prepared, job: JobSetup) -> None:
    """Finish the sandbox for one run. Raises SetupError."""
    setup = prepared.setup
    try:
        if setup.full:
            if job.exposed and prepared.covered:
                _bind_exposed(prepared.covered, job.exposed)
            alone = setup.rootless and _cover_runs_dir(setup.runs_dir)
            work_fd = _mount_disk_budget(job) if job.disk_mb is not None else None
            # An interpreter or an install of vouch under /tmp would vanish under the run's own
            # /tmp (the disk budget's, just mounted): bind its paths back, read-only, in place.
            _bind_under_tmp(prepared.under_tmp)
            # Hidden paths last: what was bound back under /tmp (an install's package data)
            # must be covered as it is everywhere else.
            _cover_hidden(job.hidden)
            if work_fd is not None:
                _bind_budgeted_workdir(work_fd, job)
            else:
                _bind_workdir(prepared, job.workdir)
            if alone:
                _linux.mount(None, setup.runs_dir, None, _linux.MS_REMOUNT | _NO_DEV_SUID | _linux.MS_RDONLY)
        # Descriptors before limits: dup2 cannot reach RESULT_FD once RLIMIT_NOFILE is lower.
        _set_stdio(setup, job.service)
        _set_limits(job, own_init=setup.relay_fd >= 0)
        if setup.full:
            _linux.drop_all_capabilities()
        _linux.prctl(_linux.PR_SET_NO_NEW_PRIVS, 1)
        _linux.deny_unbudgeted_memory()
        os.chdir(job.workdir)
        _set_environment(job)
    except OSError as exc:
        raise SetupError(str(exc)) from None
