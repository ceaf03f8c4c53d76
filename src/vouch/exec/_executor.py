"""Executors: where runs happen. Domain code submits ``RunSpec`` batches and never cares which.

``local`` (the default) keeps one warm zygote process on this machine and sends it runs
over a socket; a reader thread turns the zygote's reports into ``RunResult`` futures.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Self

import vouch
from vouch.errors import EngineCrashed, InfrastructureError, IsolationUnavailable, UsageError
from vouch.exec import _protocol, _sandbox
from vouch.exec._frame import load_json
from vouch.exec._hidden import exposed_to_every_run, hidden_in_every_run
from vouch.exec._outcome import build_result
from vouch.exec._spec import Isolation, RunResult, RunSpec, Status
from vouch.exec._values import from_data, to_data

Progress = Callable[[int, int, RunResult], None]
"""Called after each run of a batch finishes: ``(done, total, result)``."""

Service = Callable[[Any], Any]
"""Answers a run's service requests (JSON data in, JSON data out); may start nested runs.
An exception it raises reaches the run as a ServiceError with its message."""

_UID_BASE = 1_000_000_000
_UID_BLOCK = 256  # host uids per pool: 2 per slot, 2 lanes, up to 64 workers
_UID_BLOCKS = 4_000_000
_UID_LOCK_DIR = (
    "/run/vouch-uid-blocks" if os.path.isdir("/run") else os.path.join(tempfile.gettempdir(), "vouch-uid-blocks")
)
"""Root's alone, in root's runtime directory rather than a /tmp another user could have made
first; a pool without root gives its runs the caller's own uid and claims no block."""


def _claim_uid_block() -> tuple[int, int]:
    """Claim a block of host uids no other live pool on this machine holds.

    Each pool holds an flock on one file per block for as long as it lives; the kernel
    drops the lock when the holder dies, so a crashed pool frees its block.
    Returns (first uid, descriptor holding the lock). Only a pool run as root has host uids to
    give out; one without root runs as the caller's uid and needs no block (nor this directory).
    """
    if os.geteuid() != 0:
        return os.geteuid(), -1
    os.makedirs(_UID_LOCK_DIR, mode=0o700, exist_ok=True)
    owner = os.stat(_UID_LOCK_DIR, follow_symlinks=False).st_uid
    if owner != 0 or os.path.islink(_UID_LOCK_DIR):
        raise InfrastructureError(f"{_UID_LOCK_DIR} belongs to uid {owner}, not root: remove it (a pool's uid locks)")
    start = (os.getpid() * 7919 + threading.get_ident()) % _UID_BLOCKS
    for step in range(_UID_BLOCKS):
        block = (start + step) % _UID_BLOCKS
        fd = os.open(os.path.join(_UID_LOCK_DIR, str(block)), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return _UID_BASE + block * _UID_BLOCK, fd
    raise InfrastructureError("no free block of host uids for a new pool")


_START_TIMEOUT_S = 120.0


class Executor(ABC):
    """Runs ``RunSpec``s in isolation and returns what was observed."""

    name: ClassVar[str]
    sealed: bool = False
    """True when runs cannot import the benchmarks whose answers are code (``vouch.bench``'s
    sealed pools): a state task's states then reach a verifier over the service channel."""

    @abstractmethod
    def submit(self, spec: RunSpec, service: Service | None = None) -> Future[RunResult]:
        """Queue one run; the future holds its result, or an InfrastructureError.

        ``service`` answers the run's requests when ``spec.service`` is set.
        """

    @abstractmethod
    def close(self) -> None:
        """Stop the executor; runs still in hand are killed."""

    def run(self, spec: RunSpec, service: Service | None = None) -> RunResult:
        return self.submit(spec, service).result()

    def run_batch(
        self,
        specs: Iterable[RunSpec],
        progress: Progress | None = None,
        services: Sequence[Service | None] | None = None,
    ) -> list[RunResult]:
        """Run every spec (concurrently, up to the executor's width); results in input order.

        ``services``, when given, holds one handler (or None) per spec.
        """
        specs = list(specs)
        if services is not None and len(services) != len(specs):
            raise UsageError(f"run_batch got {len(specs)} specs but {len(services)} services")
        handlers = services if services is not None else [None] * len(specs)
        total = len(specs)
        done = 0
        lock = threading.Lock()
        # A window of runs in flight, not the whole batch: every spec sent ahead waits in the
        # pool's process, whose heap then grows for good (thousands of specs of an audit's
        # inputs), and every run it forks after that pays for the larger heap.
        window = threading.BoundedSemaphore(self._window())

        def finished(future: Future[RunResult]) -> None:
            nonlocal done
            window.release()
            if progress is None or future.exception() is not None:
                return
            with lock:
                done += 1
                progress(done, total, future.result())

        futures = []
        for spec, handler in zip(specs, handlers, strict=True):
            window.acquire()
            try:
                future = self.submit(spec, handler)
            except BaseException:
                window.release()
                raise
            future.add_done_callback(finished)
            futures.append(future)
        return [future.result() for future in futures]

    def _window(self) -> int:
        """How many runs of one batch may be in flight at once."""
        return 1 << 30

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True)
class PoolInfo:
    """What the zygote reported when it came up."""

    pid: int
    preloaded: tuple[str, ...]
    baseline_vm_mb: float
    baseline_rss_mb: float
    hash_seed: str
    workers: int
    isolation_level: str
    weak_reason: str | None


def _scrubbed_environment(hash_seed: str) -> dict[str, str]:
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(vouch.__file__)))
    env = {
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": hash_seed,
        "PYTHONPATH": package_parent,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
    }
    if "TZ" in os.environ:
        env["TZ"] = os.environ["TZ"]
    return env


@dataclass
class _Attempt:
    """A submitted run as the pool got it: sent again, once, if the pool dies under it."""

    spec: RunSpec
    service: Service | None
    future: Future[RunResult]
    retried: bool
    sent: float = 0.0


def _lost(spec: RunSpec, info: PoolInfo | None, reason: str) -> RunResult:
    """The result of a run the pool died under twice: an error with the reason, nothing observed."""
    limits = spec.limits
    isolation = Isolation(
        level=info.isolation_level if info is not None else "full",
        user_namespace=True,
        pid_namespace=True,
        mount_namespace=True,
        network=False,
        readonly_root=True,
        private_tmp=True,
        uid=-1,
        host_uid=-1,
        hidden_paths=tuple(spec.hidden),
        hash_seed=info.hash_seed if info is not None else "",
        cpu_s=limits.effective_cpu_s,
        address_space_mb=0,
        file_size_mb=limits.file_size_mb,
        processes=limits.processes,
        open_files=limits.open_files,
        weak_reason=info.weak_reason if info is not None else None,
        disk_mb=limits.disk_mb,
    )
    return RunResult(
        status=Status.ERROR,
        reason=reason[:500],
        exit_code=None,
        signal=None,
        duration_s=0.0,
        peak_memory_mb=0.0,
        pid=0,
        stdout_tail="",
        stderr_tail="",
        isolation=isolation,
    )


class LocalExecutor(Executor):
    """A warm pool on this machine: one zygote forking a sandboxed child per run.

    Args:
        workers: runs at the same time (default: the number of CPUs).
        preload: modules the zygote imports once so that runs find them warm; an entry
            ``"module:function"`` also calls that function once (to fill caches).
        hash_seed: ``PYTHONHASHSEED`` of the zygote, which every run inherits.
        allow_weak: run with weaker isolation, recorded in every result, when a
            namespace primitive is missing; otherwise starting raises IsolationUnavailable.
        warm_pytest: import pytest's lazily imported parts in the zygote.
        runs_dir: where private working directories are made (default: the temp dir).
    """

    name = "local"

    def __init__(
        self,
        *,
        workers: int | None = None,
        preload: Sequence[str] = (),
        hash_seed: str | int = "0",
        allow_weak: bool = False,
        warm_pytest: bool = True,
        runs_dir: str | None = None,
    ) -> None:
        workers = workers if workers is not None else (os.cpu_count() or 1)
        if not isinstance(workers, int) or not 1 <= workers <= 64:
            raise UsageError(f"workers={workers!r} must be an integer from 1 to 64")
        self._workers = workers
        self._preload = tuple(preload)
        self._hash_seed = str(hash_seed)
        self._allow_weak = allow_weak
        self._warm_pytest = warm_pytest
        self._runs_dir = os.path.abspath(runs_dir) if runs_dir is not None else None
        self._lock = threading.Lock()  # guards the futures and writes to the socket
        self._life = threading.Lock()  # serialises start and close
        self._futures: dict[int, Future[RunResult]] = {}
        self._services: dict[int, Service] = {}
        self._inflight: dict[int, _Attempt] = {}
        """What each pending run needs to be sent again if the pool dies under it."""
        self._closing = False
        self._restarts: queue.SimpleQueue[tuple[list[_Attempt], str] | Callable[[], None] | None] = queue.SimpleQueue()
        """The supervisor's jobs: a zygote to start, runs to send again on a new one, or None to stop."""
        self._supervisor: threading.Thread | None = None
        self._service_pool: ThreadPoolExecutor | None = None
        self._next_id = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._dead: str | None = None
        self.info: PoolInfo | None = None
        self._uid_base = 0
        self._uid_lock: int | None = None
        self._exposed_sent: tuple[str, ...] = ()
        """What the current zygote was last told runs may read (``expose_to_runs``)."""

    def _window(self) -> int:
        # Enough queued for every slot to find its next run waiting, and no more.
        return max(8, 4 * self._workers)

    # --- life cycle ---------------------------------------------------------------------

    def start(self) -> PoolInfo:
        """Start the zygote (submit does this on first use). Raises IsolationUnavailable.

        The zygote dies with the thread that starts it (PR_SET_PDEATHSIG follows the parent
        thread, not the process), so it is always started from the pool's own supervisor thread,
        which lives as long as the pool: a caller's worker thread that submits first and then
        ends (a thread pool's) must not take the pool down with it."""
        with self._life:
            if self._process is not None and self._dead is None:
                assert self.info is not None
                return self.info
            supervisor = self._ensure_supervisor()
        if threading.current_thread() is supervisor:
            return self._start_here()
        started: Future[PoolInfo] = Future()

        def job() -> None:
            try:
                started.set_result(self._start_here())
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                started.set_exception(exc)

        self._restarts.put(job)
        return started.result()

    def _ensure_supervisor(self) -> threading.Thread:
        """The pool's own long-lived thread: it starts and restarts the zygote."""
        with self._lock:
            if self._supervisor is None:
                self._supervisor = threading.Thread(target=self._supervise, name="vouch-pool-restart", daemon=True)
                self._supervisor.start()
            return self._supervisor

    def _start_here(self) -> PoolInfo:
        with self._life:
            if self._process is not None and self._dead is None:
                assert self.info is not None
                return self.info
            self._shutdown_process()
            try:
                self.info = self._spawn(full=True, weak_reason=None)
            except IsolationUnavailable as exc:
                if not self._allow_weak:
                    raise IsolationUnavailable(
                        f"{exc}. To run anyway with weaker isolation (no namespaces; recorded in "
                        "every result), pass allow_weak=True or --allow-weak-isolation."
                    ) from None
                self.info = self._spawn(full=False, weak_reason=str(exc))
            self._dead = None
            return self.info

    def _spawn(self, *, full: bool, weak_reason: str | None) -> PoolInfo:
        if self._uid_lock is None:
            self._uid_base, self._uid_lock = _claim_uid_block()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        config = {
            "full": full,
            "weak_reason": weak_reason,
            "workers": self._workers,
            "preload": list(self._preload),
            "warm_pytest": self._warm_pytest,
            "runs_dir": self._runs_dir,
            "uid_base": self._uid_base,
            "user_private": _sandbox.user_private_dirs() if os.geteuid() != 0 else [],
            "fd": child.fileno(),
        }
        # The zygote gets its end of the socket and no other descriptor of ours. It starts in
        # "/" with -P (no script or working directory prepended to sys.path): the caller's
        # working directory is neither importable in a run nor bound back into one as a path
        # the interpreter needs (it may hold earlier results with labels). Its code and settings
        # come on its standard input, so that its command line (every run's ``sys.orig_argv``
        # and /proc/self/cmdline) is the interpreter's alone and names nothing of vouch's.
        process = subprocess.Popen(
            [sys.executable, "-P", "-"],
            cwd="/",
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=_scrubbed_environment(self._hash_seed),
            pass_fds=(child.fileno(),),
            close_fds=True,
        )
        assert process.stdin is not None
        with process.stdin:
            process.stdin.write(f"from vouch.exec._zygote import main\nmain({json.dumps(config)!r})\n".encode())
        child.close()
        reader = _protocol.MessageReader()
        parent.settimeout(_START_TIMEOUT_S)
        messages: list[Any] = []
        try:
            while not messages:
                data = parent.recv(1 << 16)
                if not data:
                    code = process.wait()
                    raise InfrastructureError(f"the engine's pool process exited with code {code} while starting")
                messages = reader.feed(data)
        except TimeoutError:
            process.kill()
            raise InfrastructureError(
                f"the engine's pool process did not start within {_START_TIMEOUT_S:.0f} s"
            ) from None
        first = messages[0]
        if first[0] == "isolation":
            process.wait()
            raise IsolationUnavailable(first[1])
        if first[0] != "ready":
            process.wait()
            raise InfrastructureError(f"the engine's pool process failed to start: {first[1]}")
        parent.settimeout(None)
        self._process = process
        self._sock = parent
        self._exposed_sent = ()  # a new zygote knows nothing exposed yet
        self._reader = threading.Thread(target=self._read_loop, args=(parent, reader), daemon=True)
        self._reader.start()
        data = first[1]
        return PoolInfo(
            pid=data["pid"],
            preloaded=tuple(data["preloaded"]),
            baseline_vm_mb=data["baseline_vm_mb"],
            baseline_rss_mb=data["baseline_rss_mb"],
            hash_seed=data["hash_seed"],
            workers=data["workers"],
            isolation_level="full" if full else "weak",
            weak_reason=weak_reason,
        )

    def close(self) -> None:
        with self._life:
            self._closing = True
            try:
                self._shutdown_process()
            finally:
                self._closing = False
            supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None and supervisor is not threading.current_thread():
            self._restarts.put(None)
            supervisor.join(timeout=10)

    def _shutdown_process(self) -> None:
        # The reader thread takes self._lock when it sees the socket close: never wait for
        # it while holding that lock.
        with self._lock:
            process, sock = self._process, self._sock
            self._process = self._sock = None
            if sock is not None:
                try:
                    sock.sendall(_protocol.pack_message(("shutdown",)))
                except OSError:
                    pass
                sock.shutdown(socket.SHUT_RDWR)
        if sock is not None:
            sock.close()
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)
            self._reader = None
        if self._service_pool is not None:
            self._service_pool.shutdown(wait=False, cancel_futures=True)
            self._service_pool = None
        if self._uid_lock is not None and process is not None:
            if self._uid_lock >= 0:
                os.close(self._uid_lock)  # the block is free once the zygote and its runs are gone
            self._uid_lock = None

    # --- runs ---------------------------------------------------------------------------

    def submit(self, spec: RunSpec, service: Service | None = None) -> Future[RunResult]:
        if not isinstance(spec, RunSpec):
            raise UsageError(f"submit() takes a RunSpec, not {type(spec).__name__}")
        if spec.service and service is None:
            raise UsageError(f"run {spec.name or spec.entry!r} asks for a service channel but no service was given")
        if self._process is None or self._dead is not None:
            self.start()
        # vouch's own answers (its package data, stores, witnesses, registered outputs) are
        # hidden from every run, whatever the spec asked.
        extra = [p for p in hidden_in_every_run() if p not in spec.hidden]
        if extra:
            spec = dataclasses.replace(spec, hidden=(*spec.hidden, *extra))
        future: Future[RunResult] = Future()
        self._send(_Attempt(spec, service, future, retried=False))
        return future

    def _send(self, attempt: _Attempt) -> None:
        reason = self._send_now(attempt)
        if reason is None:
            return
        if attempt.retried or self._closing:
            raise EngineCrashed(reason)
        # The pool died before the reader saw it (idle, between two submits): a new pool takes
        # the run, once, as it takes the runs a pool dies under.
        self._ensure_supervisor()
        self._restarts.put(([attempt], reason))

    def _send_now(self, attempt: _Attempt) -> str | None:
        """Write the run to the pool; why it could not be written (None when it was)."""
        with self._lock:
            if self._sock is None:
                raise EngineCrashed("the engine's pool is closed")
            run_id = self._next_id
            self._next_id += 1
            attempt.sent = time.monotonic()
            self._futures[run_id] = attempt.future
            self._inflight[run_id] = attempt
            if attempt.service is not None and attempt.spec.service:
                self._services[run_id] = attempt.service
            try:
                exposed = exposed_to_every_run()
                if exposed != self._exposed_sent:
                    self._sock.sendall(_protocol.pack_message(("expose", exposed)))
                    self._exposed_sent = exposed
                self._sock.sendall(_protocol.pack_message(("run", run_id, attempt.spec)))
            except OSError as exc:
                del self._futures[run_id]
                del self._inflight[run_id]
                self._services.pop(run_id, None)
                self._dead = self._dead or f"cannot reach the engine's pool process: {exc}"
                return self._dead
        return None

    def _answer_later(self, run_id: int, payload: bytes) -> None:
        """Answer a run's service request on a worker thread (the handler may wait on runs)."""
        with self._lock:
            handler = self._services.get(run_id)
            if self._service_pool is None:
                # Handlers may block on nested runs and on each other (a verifier's env.call
                # waits for a candidate session's next request): room for all of them.
                self._service_pool = ThreadPoolExecutor(
                    max_workers=4 * self._workers + 4, thread_name_prefix="vouch-service"
                )
            pool = self._service_pool
        pool.submit(self._answer, run_id, handler, payload)

    def _answer(self, run_id: int, handler: Service | None, payload: bytes) -> None:
        try:
            if handler is None:
                raise RuntimeError("this run has no service")
            answer: dict[str, Any] = {"result": to_data(handler(from_data(load_json(payload))))}
            data = json.dumps(answer).encode()
        except Exception as exc:  # noqa: BLE001 - whatever the handler raised goes back to the run
            data = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
        with self._lock:
            if self._sock is None:
                return
            try:
                self._sock.sendall(_protocol.pack_message(("response", run_id, data)))
            except OSError:
                pass

    def _read_loop(self, sock: socket.socket, reader: _protocol.MessageReader) -> None:
        while True:
            try:
                data = sock.recv(1 << 20)
            except OSError:
                data = b""
            if not data:
                break
            for message in reader.feed(data):
                self._deliver(message)
        process = self._process
        code = process.poll() if process is not None else None
        with self._lock:
            pending, self._futures = self._futures, {}
            attempts, self._inflight = self._inflight, {}
            closing = self._closing or self._sock is None
            if pending:
                self._dead = f"the engine's pool process died (exit code {code}); {len(pending)} runs have no result"
            elif not closing and sock is self._sock:
                # Died with nothing in flight: the next submit starts a new pool rather than
                # writing to the dead one's socket.
                self._dead = f"the engine's pool process died while idle (exit code {code})"
        if closing or not pending:
            for future in pending.values():
                future.set_exception(EngineCrashed(self._dead or "the engine's pool process stopped"))
            return
        # The pool died under running work (killed, out of memory): a new pool takes the runs
        # that had no result yet, each at most once more; a run in flight at a second death is
        # an error with the reason. Each future is resolved once, so nothing is decided twice.
        reason = self._dead or "the engine's pool process died"
        # The new zygote dies with the thread that starts it: restarts come from the supervisor,
        # which lives as long as this pool (``start``).
        self._ensure_supervisor()
        self._restarts.put(([attempts[i] for i in sorted(pending) if i in attempts], reason))

    def _supervise(self) -> None:
        while (job := self._restarts.get()) is not None:
            if callable(job):
                job()
            else:
                self._recover(*job)

    def _recover(self, attempts: list[_Attempt], reason: str) -> None:
        retry = [a for a in attempts if not a.retried]
        for attempt in attempts:
            if attempt.retried:
                attempt.future.set_result(_lost(attempt.spec, self.info, f"{reason}; the run was retried once already"))
        if not retry:
            return
        try:
            self.start()
            for attempt in retry:
                self._send(dataclasses.replace(attempt, retried=True))
        except Exception as exc:  # noqa: BLE001 - no pool to retry on: the runs end with the reason
            for attempt in retry:
                if not attempt.future.done():
                    attempt.future.set_exception(EngineCrashed(f"{reason}; restarting the pool failed: {exc}"))

    def _deliver(self, message: Any) -> None:
        kind, run_id = message[0], message[1]
        if kind == "request":
            self._answer_later(run_id, message[2])
            return
        with self._lock:
            future = self._futures.pop(run_id, None)
            self._services.pop(run_id, None)
            attempt = self._inflight.pop(run_id, None)
        if future is None:
            return
        if kind == "done":
            try:
                result = build_result(message[2])
                if attempt is not None:
                    result.phases["round_trip_ms"] = round((time.monotonic() - attempt.sent) * 1000, 3)
                future.set_result(result)
            except Exception as exc:  # noqa: BLE001 - a malformed report must not kill the reader
                future.set_exception(InfrastructureError(f"unreadable report for run {run_id}: {exc}"))
        else:
            future.set_exception(InfrastructureError(str(message[2])))
