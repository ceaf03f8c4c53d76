"""What a caller asks the engine to run, and what comes back.

These are internal values (frozen dataclasses): they travel from the caller to the
zygote pickled (caller and zygote are both trusted code) and back as plain data.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class Status(enum.StrEnum):
    """How a run ended, as observed by its parent (never as claimed by the run)."""

    OK = "ok"
    """The harness saw the code complete (a script ran to its end, a call returned)."""
    ERROR = "error"
    """The code raised, exited with a non-zero code, or exited before completing."""
    TIMEOUT = "timeout"
    """The wall-clock timeout or the CPU-time limit was hit; the process tree was killed."""
    MEMORY = "memory"
    """The code ran out of its memory headroom."""
    KILLED = "killed"
    """The run died from a signal that was not the engine's timeout."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run. Memory is headroom above what the pool pre-imported."""

    timeout_s: float = 10.0
    cpu_s: float | None = None
    """CPU seconds per process; defaults to the wall-clock timeout rounded up, plus one."""
    memory_mb: int = 512
    file_size_mb: int = 64
    """Largest file the run may write, its captured stdout and stderr included."""
    disk_mb: int = 512
    """One budget for all the run writes: its working directory (unless kept for the caller) and
    its private /tmp, /var/tmp and /dev/shm share one tmpfs of this size (full isolation)."""
    processes: int = 64
    open_files: int = 256
    output_tail_bytes: int = 8192
    """How much of the end of stdout and stderr comes back with the result."""

    def __post_init__(self) -> None:
        checks = {
            "timeout_s": self.timeout_s,
            "memory_mb": self.memory_mb,
            "file_size_mb": self.file_size_mb,
            "disk_mb": self.disk_mb,
            "processes": self.processes,
            "open_files": self.open_files,
            "output_tail_bytes": self.output_tail_bytes,
        }
        if self.cpu_s is not None:
            checks["cpu_s"] = self.cpu_s
        for name, value in checks.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{name}={value!r} must be a positive number")
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name}={value!r} must be finite")

    @property
    def effective_cpu_s(self) -> int:
        if self.cpu_s is not None:
            return max(1, math.ceil(self.cpu_s))
        return math.ceil(self.timeout_s) + 1


@dataclass(frozen=True)
class Script:
    """Run a Python file of the workdir as ``__main__``, as ``python FILE`` would."""

    path: str
    argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    """Call a function and carry its return value back as JSON data.

    ``target`` is ``"file.py:function"`` for a file in the workdir (untrusted code) or
    ``"package.module:function"`` for a module importable in the pool.
    """

    target: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


Entry = Script | Call


@dataclass(frozen=True)
class RunSpec:
    """One run: what to execute, the files it starts with, its limits and what it may see."""

    entry: Entry
    files: Mapping[str, bytes | str] = field(default_factory=dict)
    """Relative path -> content, written into the run's private working directory."""
    limits: Limits = field(default_factory=Limits)
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to the scrubbed environment (the allowlist), after it."""
    hidden: tuple[str, ...] = ()
    """Absolute paths the run must not read, whatever their modes: they appear empty."""
    keep_workdir: bool = False
    """Leave the working directory on disk and report its path (the caller removes it)."""
    name: str = ""
    """A label for progress display and error messages."""
    service: bool = False
    """Give the run a channel to the service handler passed to ``Executor.submit``."""
    nested: bool = False
    """A run requested by another run's service handler (``env.call``): it takes a lane of its
    own, so that runs waiting on nested runs can never hold every lane."""
    preload: tuple[str, ...] = ()
    """What the run wants its pool to have pre-imported (``LocalExecutor``'s ``preload`` entries).
    A ``PoolSet`` sends the run to the pool of exactly that set; any other executor runs it in
    the pool it has (a module the pool lacks is imported by the run itself)."""

    def __post_init__(self) -> None:
        relative = [p for p in self.hidden if not p.startswith("/")]
        if relative:
            raise ValueError(f"hidden={relative!r}: hidden paths must be absolute")


@dataclass(frozen=True)
class Isolation:
    """The isolation actually in force for a run."""

    level: str
    """``full`` (all namespaces) or ``weak`` (the caller opted out of a missing primitive)."""
    user_namespace: bool
    pid_namespace: bool
    mount_namespace: bool
    network: bool
    """True when the run could reach a network (no network namespace)."""
    readonly_root: bool
    private_tmp: bool
    uid: int
    """The run's uid as the run sees it."""
    host_uid: int
    """The unprivileged uid the run has on the host."""
    hidden_paths: tuple[str, ...]
    hash_seed: str
    cpu_s: int
    address_space_mb: int
    """Address-space limit: the pool's own size after pre-importing, plus the headroom."""
    file_size_mb: int
    processes: int
    open_files: int
    weak_reason: str | None = None
    disk_mb: int | None = None
    """The run's one disk budget (working directory and private temp dirs); None when it had none."""
    rootless: bool = False
    """The pool ran without root: ``host_uid`` is the caller's own uid, and what the caller owns
    (home, runtime directory, vouch's outputs) was hidden from the run by mounts."""

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__} | {
            "hidden_paths": list(self.hidden_paths)
        }


@dataclass(frozen=True)
class ExceptionInfo:
    """An exception the run's code raised, as the harness recorded it."""

    type: str
    message: str
    traceback_tail: str


@dataclass(frozen=True)
class RunResult:
    """What the engine observed of one run."""

    status: Status
    reason: str | None
    """One line on why the status is not ``ok`` (None when it is)."""
    exit_code: int | None
    signal: int | None
    duration_s: float
    peak_memory_mb: float
    pid: int
    """The run's sandbox's pid on the host: under full isolation the init of the run's PID
    namespace, whose child the run's process is; 0 when the pool lost the run before it started."""
    stdout_tail: str
    stderr_tail: str
    isolation: Isolation
    value: Any = None
    """A call's return value (JSON data), when the status is ``ok``."""
    exception: ExceptionInfo | None = None
    workdir: str | None = None
    """The kept working directory, when the spec asked to keep it."""
    phases: dict[str, float] = field(default_factory=dict, compare=False)
    """Where the run's time went, in ms: the pool's steps (``queued``, ``spare``, ``workdir``,
    ``handoff``, ``child``, ``finish``), the child's split of ``child`` (``enter``: its sandbox
    and the entry's hand-off, ``code``, ``exit``: the frame and the process's end; from the
    run's own clock readings), and the caller's ``round_trip``. For profiling only."""
    judged: bool = False
    """Judged code may have run in this run: the harness said so to the pool, on a pipe it
    closed before any code but vouch's own ran (a script, a call's target, vouch's in-run entry
    once loaded). False when the run ended before (its sandbox or vouch's entry could not be
    loaded) or never started. What the run reports after that point is the judged code's word."""

    @property
    def ok(self) -> bool:
        return self.status is Status.OK
