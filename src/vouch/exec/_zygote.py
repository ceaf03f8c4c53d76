"""The zygote: a warm interpreter that forks one sandboxed child per run.

Started by ``LocalExecutor`` as ``python -m vouch.exec._zygote CONFIG_JSON`` with a
scrubbed environment and one socket to the pool (its descriptor number is in the config).
It pre-imports what runs need (pytest, the harness, caller-named modules), runs pytest
once so that its lazy imports are done, and freezes the heap so that children share it.
Then it serves requests. It keeps one spare child per slot, cloned ahead of time into new
namespaces with its uid map written and the generic part of its sandbox built, which stays
the init of its PID namespace with the run's process made as its child at an ordinary pid
(``_init``); a request gets a private working directory and is handed to a spare, whose end is
watched against the run's deadline. A run's status comes from the kernel's wait status (the
init's relay of it, or ``wait4`` here), never from anything the run says. No untrusted code
ever runs in this process.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import secrets
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, NoReturn

import vouch
from vouch.exec import _frame, _harness, _init, _linux, _pytest, _sandbox, _service
from vouch.exec._protocol import MessageReader, pack_message, send_message
from vouch.exec._spec import RunSpec

SETUP_EXIT = 121
_CLONE_FLAGS = (
    _linux.CLONE_NEWUSER | _linux.CLONE_NEWPID | _linux.CLONE_NEWNS | _linux.CLONE_NEWIPC | _linux.CLONE_NEWUTS
)
"""What each spare gets new; its network namespace is one of its slot's (see ``Zygote.slot_netns``)."""
_FULL_FLAGS = (
    _linux.CLONE_NEWUSER
    | _linux.CLONE_NEWPID
    | _linux.CLONE_NEWNS
    | _linux.CLONE_NEWNET
    | _linux.CLONE_NEWIPC
    | _linux.CLONE_NEWUTS
)
_MAX_FRAME_READ = _frame.MAX_FRAME_BYTES + _frame.HEADER_BYTES


@dataclass
class _Spare:
    """A child cloned ahead of time into its namespaces, waiting for a run."""

    slot: int
    uid: int
    pid: int
    pidfd: int
    job_w: int
    stdout_fd: int
    stderr_fd: int
    result_fd: int
    ready_r: int
    service: socket.socket
    relay_r: int = -1
    """Full isolation: where the namespace's init relays the run's end (``_init``)."""
    netns: tuple[int, int] = (0, 0)
    """Which of ``Zygote.slot_netns`` the spare (and so its run) lives in."""
    vm: int = 0
    """The zygote's address-space size when it cloned this spare: what the child starts with."""
    clone_s: float = 0.0
    """How long cloning this spare took the zygote (off a run's path when made ahead)."""


@dataclass
class _Running:
    run_id: int
    spec: RunSpec
    child: _Spare
    workdir: str
    nonce: bytes
    started: float
    deadline: float
    isolation: dict[str, Any]
    phases: dict[str, float] = field(default_factory=dict)
    """Where the zygote's share of the run's time went, in ms (``RunResult.phases``)."""
    timed_out: bool = False
    service_open: bool = False
    service_pending: bool = False
    """A request of the run is with the pool: its socket is not read until the answer comes,
    so that a run that writes requests without waiting holds at most one in the host."""
    service_in: _service.Splitter = field(default_factory=_service.Splitter)
    service_out: bytearray = field(default_factory=bytearray)


@dataclass
class Zygote:
    config: dict[str, Any]
    sock: socket.socket
    runs_dir: str = ""
    baseline_vm: int = 0
    exposures: tuple[_sandbox.Exposure, ...] = ()
    under_private_tmp: tuple[str, ...] = ()
    queues: dict[bool, deque[tuple[int, RunSpec, float]]] = field(
        default_factory=lambda: {False: deque(), True: deque()}
    )
    """Waiting runs by lane (``True`` for nested runs), each with the time it arrived."""
    running: dict[int, _Running] = field(default_factory=dict)
    spares: dict[int, _Spare] = field(default_factory=dict)
    spare_errors: dict[int, str] = field(default_factory=dict)
    free_slots: dict[bool, list[int]] = field(default_factory=dict)
    """Free slots by lane. Slots 0..workers-1 are the main lane, the next ones the nested lane."""
    outbuf: bytearray = field(default_factory=bytearray)
    counter: int = 0
    generations: dict[int, int] = field(default_factory=dict)
    slot_netns: dict[tuple[int, int], int] = field(default_factory=dict)
    """(slot, 0 or 1) -> descriptor of a network namespace made for that slot alone (only its
    own lo, up). A spare is cloned into the one the slot's running run is not in.

    A fresh network namespace per run costs little to make, but the kernel tears them down
    asynchronously under a global lock, and at thousands of runs that backlog doubled the cost
    of every run. So a namespace is made anew only when a run left something in it: a run has
    no capability over it, so what it can leave is the kernel's state of its connections (a TCP
    TIME_WAIT, cached TCP metrics), and every such state comes from a packet, which moves the
    namespace's IP counters (``netns_marks``). The loopback is what a container gives its tests:
    a repository's tests may start a local server (requests' httpbin, werkzeug's dev server) and
    connect to it; nothing routes beyond it."""
    netns_marks: dict[tuple[int, int], bytes] = field(default_factory=dict)
    """Each slot namespace's IP counters and unix sockets as made: one that reads otherwise
    has carried a run's traffic and is replaced before its next run."""
    own_netns: int = -1
    init_program: int = -1
    """The init program every spare of full isolation becomes (``_init.load_program``); -1 when
    there is none here and spares stay Python inits."""
    exposed: tuple[str, ...] = ()
    """Paths the caller exposed to runs (``expose_to_runs``), bound back in covered homes."""
    kept: set[str] = field(default_factory=set)
    """Working directories kept for the caller: they outlive the zygote."""
    dying: dict[int, tuple[int, int]] = field(default_factory=dict)
    """pidfd -> (pid, host uid) of each spare whose run has ended and which is exiting, the
    namespace's init (``_init``): reaped when it has exited, or before a spare of its uid is made."""

    @property
    def full(self) -> bool:
        return bool(self.config["full"])

    @property
    def rootless(self) -> bool:
        """The pool runs without root: every run has the caller's own uid on the host, and what
        the caller owns is hidden from runs by mounts (``_sandbox.user_private_dirs``), not by uids."""
        return os.geteuid() != 0

    @property
    def can_switch_uid(self) -> bool:
        """Weak isolation: runs get an unprivileged uid when the pool is root and may map it."""
        return not self.rootless and _uid_mapped(self._host_uid(0)) and _uid_mapped(self._host_uid(255))

    # --- start-up -----------------------------------------------------------------------

    def warm_up(self) -> dict[str, Any]:
        if os.geteuid() == 0:
            try:
                os.setgroups([])
            except PermissionError:
                pass  # setgroups is denied in some user namespaces; the runs drop groups themselves
        _linux.prctl(_linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        # Namespaces first, while the process has one thread: a preloaded module may start
        # threads, and a multi-threaded process cannot enter a new user namespace.
        if self.full:
            _probe_namespaces(self._host_uid(0))
            if self.rootless:
                _own_user_namespace()
            self.own_netns = os.open("/proc/self/ns/net", os.O_RDONLY)
            for slot in range(2 * self.config["workers"]):
                for index in (0, 1):
                    self._new_slot_netns((slot, index))
                    _linux.setns(self.own_netns, _linux.CLONE_NEWNET)
        preloaded = []
        for name in self.config["preload"]:
            # "package.module" is imported; "package.module:function" is imported and called,
            # so that a module can fill its caches once here instead of once per run.
            module_name, _, function = name.partition(":")
            module = importlib.import_module(module_name)
            if function:
                getattr(module, function)()
            preloaded.append(name)
        if self.config.get("warm_pytest", True):
            _warm_pytest()
        needed = _interpreter_paths()
        covers: tuple[str, ...] = ()
        if self.rootless and self.full:
            covers = tuple(self.config.get("user_private") or ())
            needed.append(self.config.get("runs_dir") or tempfile.gettempdir())
        self.exposures = _sandbox.plan_exposures(needed, covers)
        self.under_private_tmp = _sandbox.under_private_tmp(_interpreter_paths())
        self.runs_dir = tempfile.mkdtemp(prefix="vouch-runs-", dir=self.config.get("runs_dir"))
        os.chmod(self.runs_dir, 0o711)  # noqa: S103 - runs reach their own dir, cannot list others
        workers = self.config["workers"]
        self.free_slots = {False: list(range(workers))[::-1], True: list(range(workers, 2 * workers))[::-1]}
        if self.full:
            self.init_program = _init.load_program()
        gc.collect()
        gc.freeze()  # children share the warmed heap instead of copying it on the first collection
        self.baseline_vm = _vm_size()
        return {
            "pid": os.getpid(),
            "preloaded": preloaded,
            "baseline_vm_mb": round(self.baseline_vm / 2**20, 1),
            "baseline_rss_mb": round(_rss() / 2**20, 1),
            "hash_seed": os.environ.get("PYTHONHASHSEED", ""),
            "runs_dir": self.runs_dir,
            "workers": self.config["workers"],
            "python": sys.version.split()[0],
        }

    # --- one run ------------------------------------------------------------------------

    def _host_uid(self, slot: int) -> int:
        if self.rootless:
            return os.geteuid()
        return int(self.config["uid_base"]) + slot

    def _budgeted(self, spec: RunSpec) -> bool:
        """Whether the run's working directory lives in its disk budget (a tmpfs of the run's
        own), so that the run writes its files there; a kept one must outlive the run."""
        return self.full and not spec.keep_workdir

    def _prepare_workdir(self, spec: RunSpec, uid: int) -> tuple[str, dict[str, bytes] | None]:
        """Make the run's working directory; returns it and, for a budgeted run, the files the
        run writes into it itself (else they are written here)."""
        self.counter += 1
        workdir = os.path.join(self.runs_dir, f"run-{self.counter}")
        os.mkdir(workdir, 0o700)
        files: dict[str, bytes] = {}
        for rel, content in spec.files.items():
            path = os.path.normpath(os.path.join(workdir, rel))
            if not path.startswith(workdir + os.sep):
                raise ValueError(f"file {rel!r} would land outside the working directory")
            files[os.path.relpath(path, workdir)] = content.encode() if isinstance(content, str) else content
        if self._budgeted(spec):
            if os.geteuid() == 0:
                os.lchown(workdir, uid, uid)
            return workdir, files
        for rel, data in files.items():
            path = os.path.join(workdir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        if os.geteuid() == 0 and (self.full or self.can_switch_uid):
            _chown_tree(workdir, uid, uid)
        return workdir, None

    def _isolation(self, spec: RunSpec, uid: int, address_space: int) -> dict[str, Any]:
        full = self.full
        limits = spec.limits
        return {
            "level": "full" if full else "weak",
            "user_namespace": full,
            "pid_namespace": full,
            "mount_namespace": full,
            "network": not full,
            "readonly_root": full,
            "private_tmp": full,
            "uid": _sandbox.RUN_UID if full else (uid if self.can_switch_uid else os.geteuid()),
            "host_uid": uid if (full or self.can_switch_uid) else os.geteuid(),
            "hidden_paths": tuple(spec.hidden) if full else (),
            "hash_seed": os.environ.get("PYTHONHASHSEED", ""),
            "cpu_s": limits.effective_cpu_s,
            "address_space_mb": address_space // 2**20,
            "file_size_mb": limits.file_size_mb,
            "processes": limits.processes,
            "open_files": limits.open_files,
            "weak_reason": None if full else self.config.get("weak_reason"),
            "rootless": self.rootless,
            "disk_mb": limits.disk_mb if full else None,
        }

    def _new_slot_netns(self, key: tuple[int, int]) -> None:
        """Make a network namespace for ``key`` and stay in it (the caller returns to its own)."""
        _linux.unshare(_linux.CLONE_NEWNET)
        _linux.loopback_up()  # a run's own loopback: its tests may serve and connect locally
        old = self.slot_netns.get(key)
        self.slot_netns[key] = os.open("/proc/self/ns/net", os.O_RDONLY)
        self.netns_marks[key] = _netns_mark()
        if old is not None:
            os.close(old)

    def _enter_slot_netns(self, slot: int) -> tuple[int, int]:
        """Enter a network namespace of ``slot`` that no run is in and that no run left anything in."""
        busy = {run.child.netns for run in self.running.values() if run.child.slot == slot}
        key = (slot, self.generations[slot] % 2)
        if key in busy:
            key = (slot, 1 - key[1])
        _linux.setns(self.slot_netns[key], _linux.CLONE_NEWNET)
        if _netns_mark() != self.netns_marks[key]:
            self._new_slot_netns(key)
        return key

    def _reap(self, pidfd: int, pid: int) -> None:
        os.waitpid(pid, 0)
        os.close(pidfd)
        self.dying.pop(pidfd, None)

    def make_spare(self, slot: int) -> None:
        """Clone the child that will take the next run of ``slot``.

        A slot alternates between two host uids, so that its spare never shares a uid with
        the run still going in the same slot (nor with one still exiting).
        """
        generation = self.generations.get(slot, 0) + 1
        self.generations[slot] = generation
        uid = self._host_uid(2 * slot + generation % 2)
        for pidfd, (pid, owner) in list(self.dying.items()):
            if owner == uid:
                self._reap(pidfd, pid)
        stdout_fd = os.memfd_create("stdout")
        stderr_fd = os.memfd_create("stderr")
        result_fd = os.memfd_create("result")
        ready_r, ready_w = os.pipe()
        relay_r, relay_w = os.pipe() if self.full else (-1, -1)
        sync_r, sync_w = os.pipe()
        job_r, job_w = os.pipe()
        service, service_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        setup = _sandbox.SpareSetup(
            runs_dir=self.runs_dir,
            host_uid=uid,
            exposures=self.exposures,
            stdout_fd=stdout_fd,
            stderr_fd=stderr_fd,
            result_fd=result_fd,
            ready_fd=ready_w,
            service_fd=service_child.fileno(),
            full=self.full,
            switch_uid=self.can_switch_uid,
            relay_fd=relay_w,
            host_last_pid=_init.host_last_pid() if self.full else 0,
            init_program_fd=self.init_program,
            rootless=self.rootless,
            under_private_tmp=self.under_private_tmp,
        )
        vm = _vm_size()
        begun = time.monotonic()
        netns = (slot, 0)
        if self.full:
            # The child inherits a network namespace of the slot: only lo (up), owned by the
            # host's user namespace (so nothing in a run can configure it), clean of earlier runs.
            try:
                netns = self._enter_slot_netns(slot)
                pid = _linux.clone_process(_CLONE_FLAGS)
            except BaseException:
                _linux.setns(self.own_netns, _linux.CLONE_NEWNET)
                raise
            if pid != 0:
                _linux.setns(self.own_netns, _linux.CLONE_NEWNET)
        else:
            pid = os.fork()
        if pid == 0:
            _spare_main(setup, sync_r, sync_w, job_r, job_w)
        for fd in (sync_r, ready_w, job_r, *((relay_w,) if relay_w >= 0 else ())):
            os.close(fd)
        service_child.close()
        try:
            if self.full:
                _write_id_maps(pid, uid)
            os.write(sync_w, b"go")
        except OSError:
            os.kill(pid, signal.SIGKILL)  # it sees EOF and fails its setup; reported on dispatch
        os.close(sync_w)
        self.spares[slot] = _Spare(
            slot=slot,
            uid=uid,
            pid=pid,
            pidfd=os.pidfd_open(pid),
            job_w=job_w,
            stdout_fd=stdout_fd,
            stderr_fd=stderr_fd,
            result_fd=result_fd,
            ready_r=ready_r,
            service=service,
            relay_r=relay_r,
            netns=netns,
            vm=vm,
            clone_s=time.monotonic() - begun,
        )

    def start(self, run_id: int, spec: RunSpec, received: float) -> None:
        begun = time.monotonic()
        slot = self.free_slots[spec.nested].pop()
        made_now = slot not in self.spares
        if made_now:
            self.make_spare(slot)
        child = self.spares.pop(slot)
        uid = child.uid
        spared = time.monotonic()
        try:
            workdir, files = self._prepare_workdir(spec, uid)
        except (OSError, ValueError) as exc:
            self.spares[slot] = child
            self.free_slots[spec.nested].append(slot)
            self._reply(("failed", run_id, f"cannot prepare the working directory: {exc}"))
            return
        # The headroom on top of what the run's process already maps: the zygote grows after its
        # warm-up (queued specs, fragmentation), and a limit from the warm-up size alone left runs
        # of a long audit a fraction of their memory (deep recursion died of SIGSEGV there).
        address_space = max(self.baseline_vm, child.vm) + spec.limits.memory_mb * 2**20
        nonce = secrets.token_bytes(16)
        job = _sandbox.JobSetup(
            workdir=workdir,
            hidden=tuple(spec.hidden),
            limits=spec.limits,
            address_space_bytes=address_space,
            env=dict(spec.env),
            service=spec.service,
            files=files,
            disk_mb=spec.limits.disk_mb if self.full else None,
            exposed=self.exposed,
        )
        prepared = time.monotonic()
        message = pack_message((job, spec.entry, nonce))
        # The run's clock starts before the child can: its own readings (``RunResult.phases``)
        # fall between this and its exit even when the zygote is descheduled after the write.
        started = time.monotonic()
        try:
            os.write(child.job_w, message)
        except OSError:
            pass  # the spare died before its run; its exit is reported as a setup failure
        os.close(child.job_w)
        self.running[run_id] = _Running(
            run_id=run_id,
            spec=spec,
            child=child,
            workdir=workdir,
            nonce=nonce,
            started=started,
            deadline=started + spec.limits.timeout_s,
            isolation=self._isolation(spec, uid, address_space),
            service_open=spec.service,
            phases={
                "queued_ms": _ms(begun - received),
                "spare_ms": _ms(spared - begun) if made_now else 0.0,
                "clone_ms": _ms(child.clone_s),
                "workdir_ms": _ms(prepared - spared),
                "handoff_ms": _ms(started - prepared),  # packing the job; its write counts as the child's
            },
        )
        if spec.service:
            child.service.setblocking(False)
        else:
            child.service.close()

    def finish(self, run: _Running) -> None:
        child = run.child
        end = _init.read_end(child.relay_r) if child.relay_r >= 0 else None
        if end is not None:
            # The run's process has ended: its init exits (the kernel then kills what the run
            # left in its namespace) and is reaped off the run's path, unless the working
            # directory outlives the run, where nothing of the run may write any more.
            _kill_tree(child.pid, self.full)
            status, cpu_s, maxrss_kb = end.status, end.cpu_s, end.maxrss_kb
            if run.spec.keep_workdir:
                self._reap(child.pidfd, child.pid)
            else:
                self.dying[child.pidfd] = (child.pid, child.uid)
        else:
            # Weak isolation (the run was the spare), or the init ended without relaying (the
            # pool killed it): the spare's own end is the run's.
            _, status, usage = os.wait4(child.pid, 0)
            cpu_s, maxrss_kb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
            os.close(child.pidfd)
        exited = time.monotonic()
        duration = exited - run.started
        report = _close_child(child)
        if run.spec.service:
            child.service.close()
        tail = run.spec.limits.output_tail_bytes
        stdout_tail, stdout_bytes = _tail(child.stdout_fd, tail)
        stderr_tail, stderr_bytes = _tail(child.stderr_fd, tail)
        frame = _head(child.result_fd, _MAX_FRAME_READ)
        for fd in (child.stdout_fd, child.stderr_fd, child.result_fd):
            os.close(fd)
        workdir: str | None = run.workdir
        if run.spec.keep_workdir:
            # Give it back to the pool's own user: later runs of this slot share its uid.
            _chown_tree(run.workdir, os.geteuid(), os.getegid())
            self.kept.add(run.workdir)
        else:
            shutil.rmtree(run.workdir, ignore_errors=True)
            workdir = None
        self.free_slots[run.spec.nested].append(child.slot)
        run.phases["child_ms"] = _ms(duration)
        run.phases["finish_ms"] = _ms(time.monotonic() - exited)
        if report.setup_error:
            self._reply(("failed", run.run_id, f"sandbox setup failed: {report.setup_error}"))
            return
        self._reply(
            (
                "done",
                run.run_id,
                {
                    "pid": child.pid,
                    "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                    "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                    "timed_out": run.timed_out,
                    "cpu_s": cpu_s,
                    "duration_s": duration,
                    "maxrss_kb": maxrss_kb,
                    "stdout_tail": stdout_tail,
                    "stdout_bytes": stdout_bytes,
                    "stderr_tail": stderr_tail,
                    "stderr_bytes": stderr_bytes,
                    "frame": frame,
                    "nonce": run.nonce,
                    "isolation": run.isolation,
                    "workdir": workdir,
                    "started": run.started,
                    "exited": exited,
                    "phases": run.phases,
                    "judged": report.judged,
                },
            )
        )

    def spare_died(self, child: _Spare) -> None:
        """A spare exited before it was given a run: its setup failed, or it was killed."""
        os.wait4(child.pid, 0)
        os.close(child.pidfd)
        error = _close_child(child).setup_error or "the spare sandbox exited before its run"
        os.close(child.job_w)
        child.service.close()
        for fd in (child.stdout_fd, child.stderr_fd, child.result_fd):
            os.close(fd)
        del self.spares[child.slot]
        self.spare_errors[child.slot] = error

    # --- the loop -----------------------------------------------------------------------

    def _reply(self, message: Any) -> None:
        self.outbuf += pack_message(message)

    def _dispatch(self) -> None:
        for nested, queue in self.queues.items():
            free = self.free_slots[nested]
            while queue and free:
                slot = free[-1]
                if slot in self.spare_errors:
                    run_id, _, _ = queue.popleft()
                    self._reply(("failed", run_id, f"sandbox setup failed: {self.spare_errors.pop(slot)}"))
                    continue
                self.start(*queue.popleft())
        # Clone the next spare of every slot now, while its run (if any) goes on in another
        # process: the next run then skips the clone and the generic setup.
        for slot in range(2 * self.config["workers"]):
            if slot not in self.spares and slot not in self.spare_errors:
                self.make_spare(slot)

    def _on_message(self, message: Any) -> bool:
        """Handle one message of the pool; False when it asks the zygote to stop."""
        if message[0] == "run":
            spec: RunSpec = message[2]
            self.queues[spec.nested].append((message[1], spec, time.monotonic()))
        elif message[0] == "expose":
            self.exposed = tuple(message[1])
        elif message[0] == "response":
            run = self.running.get(message[1])
            if run is not None and run.service_open:
                run.service_out += _service.frame(message[2])
                run.service_pending = False
                self._relay_request(run)
        elif message[0] == "shutdown":
            for queue in self.queues.values():
                queue.clear()
            return False
        return True

    def _service_event(self, run: _Running, events: int) -> None:
        """Relay a run's service requests to the pool, and the pool's answers back."""
        sock = run.child.service
        if events & select.POLLOUT and run.service_out:
            try:
                sent = sock.send(run.service_out)
            except BlockingIOError:
                sent = 0
            except OSError:
                run.service_open = False
                return
            del run.service_out[:sent]
        if events & (select.POLLIN | select.POLLHUP | select.POLLERR) and not run.service_pending:
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                run.service_open = False
                return
            run.service_in.feed(data)
            self._relay_request(run)

    def _relay_request(self, run: _Running) -> None:
        """Send the pool the run's next complete request, if it has no other one pending."""
        if run.service_pending or not run.service_open:
            return
        try:
            payload = run.service_in.pop()
        except _service.ServiceError:
            run.service_open = False  # an oversized message ends the channel, not the engine
            try:
                run.child.service.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the run closed it already
            return
        if payload is not None:
            run.service_pending = True
            self._reply(("request", run.run_id, payload))

    def serve(self) -> None:
        reader = MessageReader()
        self.sock.setblocking(False)
        open_for_requests = True
        while open_for_requests or self.running or self.outbuf:
            if open_for_requests:
                self._dispatch()
            poller = select.poll()
            if open_for_requests:
                poller.register(self.sock, select.POLLIN | (select.POLLOUT if self.outbuf else 0))
            elif self.outbuf:
                poller.register(self.sock, select.POLLOUT)
            runs = {run.child.pidfd: run for run in self.running.values()}
            # A run's end comes from its init's relay (full isolation), before the init exits.
            runs.update({run.child.relay_r: run for run in self.running.values() if run.child.relay_r >= 0})
            spares = {child.pidfd: child for child in self.spares.values()}
            dying = dict(self.dying)
            # A run with a request pending is not read (nor watched for a hang-up, which poll
            # would report at once, over and over) until its answer is there to send.
            services = {
                run.child.service.fileno(): run
                for run in self.running.values()
                if run.service_open and (run.service_out or not run.service_pending)
            }
            for fd in (*runs, *spares, *dying):
                poller.register(fd, select.POLLIN)
            for fd, run in services.items():
                reading = 0 if run.service_pending else select.POLLIN
                poller.register(fd, reading | (select.POLLOUT if run.service_out else 0))
            now = time.monotonic()
            pending = [r.deadline for r in self.running.values() if not r.timed_out]
            timeout_ms = max(0, int((min(pending) - now) * 1000) + 1) if pending else None
            for fd, events in poller.poll(timeout_ms):
                if fd == self.sock.fileno():
                    if events & select.POLLOUT and self.outbuf:
                        try:
                            sent = self.sock.send(self.outbuf)
                        except BlockingIOError:
                            sent = 0
                        except (BrokenPipeError, ConnectionResetError):
                            # The parent went away (it shut the pool down mid-result): nobody to tell.
                            open_for_requests = False
                            self._abandon()
                            self.outbuf.clear()
                            continue
                        del self.outbuf[:sent]
                    if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        try:
                            data = self.sock.recv(1 << 20)
                        except BlockingIOError:
                            continue
                        if not data:
                            open_for_requests = False
                            self._abandon()
                            self.outbuf.clear()
                            continue
                        for message in reader.feed(data):
                            open_for_requests = self._on_message(message) and open_for_requests
                elif fd in services and fd not in runs:
                    run = services[fd]
                    if run.run_id in self.running:
                        self._service_event(run, events)
                elif fd in runs:
                    run = runs[fd]
                    if run.run_id in self.running:
                        del self.running[run.run_id]
                        self.finish(run)
                elif fd in spares:
                    self.spare_died(spares[fd])
                elif fd in dying and fd in self.dying:
                    self._reap(fd, dying[fd][0])
            now = time.monotonic()
            for run in self.running.values():
                if not run.timed_out and now >= run.deadline:
                    run.timed_out = True
                    _kill_tree(run.child.pid, self.full)
        for child in list(self.spares.values()):
            _kill_tree(child.pid, self.full)
            os.waitpid(child.pid, 0)
        for pidfd, (pid, _) in list(self.dying.items()):
            self._reap(pidfd, pid)
        self._remove_runs_dir()

    def _remove_runs_dir(self) -> None:
        for entry in os.scandir(self.runs_dir):
            if entry.path not in self.kept:
                shutil.rmtree(entry.path, ignore_errors=True)
        if not self.kept:
            os.rmdir(self.runs_dir)

    def _abandon(self) -> None:
        """The pool went away: kill every run and stop."""
        for queue in self.queues.values():
            queue.clear()
        for run in list(self.running.values()):
            _kill_tree(run.child.pid, self.full)
            run.timed_out = True


class IsolationProbeError(Exception):
    """A namespace primitive that full isolation needs is missing on this machine."""


_USERNS_SETTINGS = (
    ("kernel.unprivileged_userns_clone", "0", True),
    ("user.max_user_namespaces", "0", False),
    ("kernel.apparmor_restrict_unprivileged_userns", "1", True),
)
"""Settings that refuse user namespaces: (sysctl, the refusing value, applies only without root)."""


def userns_restriction(proc_sys: str = "/proc/sys", *, unprivileged: bool | None = None) -> str | None:
    """The sysctl that keeps this process (``unprivileged``: without root) from making user
    namespaces, named as ``sysctl`` names it; None when none of the known ones does."""
    if unprivileged is None:
        unprivileged = os.geteuid() != 0
    for name, refusing, unprivileged_only in _USERNS_SETTINGS:
        if unprivileged_only and not unprivileged:
            continue
        try:
            with open(os.path.join(proc_sys, *name.split("."))) as f:
                value = f.read().strip()
        except OSError:
            continue
        if value == refusing:
            return f"{name} = {value}"
    return None


def _write_id_maps(pid: int, host_uid: int) -> None:
    """Map the run's uid and gid to ``host_uid`` (root) or to the caller's own ids (no root).

    Without root a user namespace may map only its creator's own uid and gid, and the gid map
    needs setgroups denied first; the caller's supplementary groups then stay with the run.
    """
    gid = host_uid
    if os.geteuid() != 0:
        with open(f"/proc/{pid}/setgroups", "w") as f:
            f.write("deny")
        gid = os.getegid()
    with open(f"/proc/{pid}/uid_map", "w") as f:
        f.write(f"{_sandbox.RUN_UID} {host_uid} 1")
    with open(f"/proc/{pid}/gid_map", "w") as f:
        f.write(f"{_sandbox.RUN_UID} {gid} 1")


def _probe_namespaces(host_uid: int) -> None:
    """Clone one child into every namespace a run uses and map its ids, or say what failed."""
    # The child waits until its maps are written: a zombie's /proc files belong to root, which
    # only a pool run as root could write.
    hold_r, hold_w = os.pipe()
    try:
        pid = _linux.clone_process(_FULL_FLAGS)
    except OSError as exc:
        os.close(hold_r)
        os.close(hold_w)
        setting = userns_restriction()
        cause = (
            f"user namespaces are restricted on this machine ({setting})"
            if setting
            else "on Debian and Ubuntu check 'sysctl kernel.unprivileged_userns_clone', "
            "'sysctl kernel.apparmor_restrict_unprivileged_userns' and 'sysctl user.max_user_namespaces'"
        )
        raise IsolationProbeError(f"cannot create user/PID/mount/network namespaces ({exc}); {cause}") from None
    if pid == 0:
        os.close(hold_w)
        os.read(hold_r, 1)
        os._exit(0)
    os.close(hold_r)
    try:
        _write_id_maps(pid, host_uid)
    except OSError as exc:
        os.kill(pid, signal.SIGKILL)
        raise IsolationProbeError(f"cannot map the run's uid to host uid {host_uid} ({exc})") from None
    finally:
        os.close(hold_w)
        os.waitpid(pid, 0)


def _own_user_namespace() -> None:
    """Without root, move the zygote into a user namespace of its own (its uid and gid mapped
    to themselves), so that it may make the slots' network namespaces. Those stay owned by this
    namespace, the runs' parent: nothing in a run has a capability over them."""
    uid, gid = os.geteuid(), os.getegid()
    _linux.unshare(_linux.CLONE_NEWUSER)
    _linux.map_own_ids(uid, gid)
    # The zygote's own network namespace too: it returns to it after making each spare, and may
    # enter only those its namespace owns. It needs none (its socket to the pool is inherited).
    _linux.unshare(_linux.CLONE_NEWNET)


def _kill_tree(pid: int, full: bool) -> None:
    # In full isolation ``pid`` is the spare, PID 1 of the run's namespace (the run's process is
    # its child): killing it makes the kernel kill every process of the namespace. In weak
    # isolation the run is the spare and leads a session.
    try:
        if full:
            os.kill(pid, signal.SIGKILL)
        else:
            os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _spare_main(setup: _sandbox.SpareSetup, sync_r: int, sync_w: int, job_r: int, job_w: int) -> None:
    """A spare's life: wait for the uid map, set its identity, become the init of the run's
    process (full isolation), prepare, wait for a run, enter, run the entry.

    Its own job pipe's write end is closed first: then the zygote alone holds it (and spares
    cloned after, which exit in turn), so a spare whose zygote died sees end of file and exits
    even when its parent-death signal was set too late to fire (the zygote killed between the
    clone and the spare's prctl)."""
    try:
        os.close(job_w)
        os.close(sync_w)
        if os.read(sync_r, 2) != b"go":
            raise _sandbox.SetupError("the zygote did not finish the user namespace")
        os.close(sync_r)
        held = _sandbox.hold(setup)
        gate = -1
        if setup.relay_fd >= 0:
            # The spare stays PID 1, the namespace's init; the run's process goes on from here
            # and builds the sandbox's mounts itself, in the namespaces the two share, while
            # the init program starts.
            gate = _init.start_run(setup.host_last_pid, setup.relay_fd, setup.init_program_fd)
        prepared = _sandbox.prepare(held)
        _init.await_init(gate)
    except BaseException as exc:  # noqa: BLE001 - anything here is a setup failure
        _fail_setup(setup.ready_fd, exc)
    message = _read_job(job_r)
    if message is None:
        os._exit(0)  # retired without a run
    job, entry, nonce = message
    try:
        _sandbox.enter(prepared, job)
    except BaseException as exc:  # noqa: BLE001
        _fail_setup(_sandbox.READY_FD if _is_open(_sandbox.READY_FD) else setup.ready_fd, exc)
    # READY_FD stays open into the harness, which marks on it that judged code starts and
    # closes it before any does (``_harness.judged_code_starts``).
    _harness.run_entry(entry, nonce)


def _fail_setup(fd: int, exc: BaseException) -> NoReturn:
    try:
        os.write(fd, f"E{exc}".encode()[:4000])
    finally:
        os._exit(SETUP_EXIT)


def _read_job(fd: int) -> Any:
    reader = MessageReader()
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            return None
        messages = reader.feed(data)
        if messages:
            return messages[0]


@dataclass(frozen=True)
class _Report:
    """What a child said on its report pipe, which it closes before judged code can run."""

    setup_error: str
    """Why its sandbox could not be set up ("" when it was)."""
    judged: bool
    """The harness marked that judged code may run (``_harness.judged_code_starts``)."""


def _close_child(child: _Spare) -> _Report:
    """Close the report and relay pipes; return what the child reported."""
    report = _read_all(child.ready_r, 4096)
    os.close(child.ready_r)
    if child.relay_r >= 0:
        os.close(child.relay_r)
    if report.startswith(_harness.JUDGED):
        return _Report(setup_error="", judged=True)
    return _Report(setup_error=report.decode(errors="replace").removeprefix("E"), judged=False)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _uid_mapped(uid: int) -> bool:
    """Whether ``uid`` exists in this process's user namespace (it may not, inside a container)."""
    try:
        with open("/proc/self/uid_map") as f:
            rows = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    except OSError:
        return True
    return any(inside <= uid < inside + count for inside, _, count in rows)


def _chown_tree(top: str, uid: int, gid: int) -> None:
    for root, dirs, files in os.walk(top):
        os.lchown(root, uid, gid)
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)


def _read_all(fd: int, limit: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, limit)
    except BlockingIOError:
        return b""


def _tail(fd: int, limit: int) -> tuple[bytes, int]:
    size = os.fstat(fd).st_size
    return os.pread(fd, limit, max(0, size - limit)), size


def _head(fd: int, limit: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, limit), 0) if size else b""


def _interpreter_paths() -> list[str]:
    """What a run needs to read to work like this interpreter: prefixes, sys.path, the binary,
    and vouch's own package wherever an import finder maps it (an editable install's finder
    puts no path of it on sys.path)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(sys.executable)}
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    paths.update(os.path.realpath(p) for p in vouch.__path__ if os.path.isdir(p))
    paths.add(os.path.realpath(sys.executable))
    return sorted(paths)


def _netns_mark() -> bytes:
    """What a run's traffic changes in the calling thread's network namespace: the IPv4 and IPv6
    counters (every packet moves them) and the unix sockets (bound names included)."""
    parts = []
    for name in ("snmp", "snmp6", "unix"):
        with open(f"/proc/thread-self/net/{name}", "rb") as f:
            parts.append(f.read())
    return b"\0".join(parts)


def _vm_size() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _warm_pytest() -> None:
    """Run pytest once on a throw-away test, so that each run does not pay for its imports.

    pytest imports most of itself, its plugins (found by entry point) and their
    dependencies lazily, inside ``pytest.main``; a run forked from a warmed zygote finds
    them all in ``sys.modules``. pytest is made to be called more than once in a process
    (its own ``pytester`` does), and it restores what it changes when the session ends.
    """
    import contextlib
    import io

    import pytest

    with tempfile.TemporaryDirectory(prefix="vouch-warm-") as tmp:
        with open(os.path.join(tmp, "test_warm.py"), "w") as f:
            f.write("def test_warm():\n    assert [1] == [1]\n")
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                pytest.main([*_pytest.POOL_ARGS, "-q", "-p", "no:cacheprovider", "test_warm.py"])
        finally:
            os.chdir(cwd)
    sys.modules.pop("test_warm", None)


def main(settings: str | None = None) -> None:
    """The pool process: ``settings`` is the pool's JSON (else the first argument)."""
    config = json.loads(settings if settings is not None else sys.argv[1])
    sock = socket.socket(fileno=int(config["fd"]))
    zygote = Zygote(config=config, sock=sock)
    try:
        info = zygote.warm_up()
    except IsolationProbeError as exc:
        send_message(sock, ("isolation", str(exc)))
        sys.exit(3)
    except BaseException as exc:  # noqa: BLE001 - reported to the pool, which raises it
        send_message(sock, ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        sys.exit(3)
    send_message(sock, ("ready", info))
    zygote.serve()


if __name__ == "__main__":
    main()
