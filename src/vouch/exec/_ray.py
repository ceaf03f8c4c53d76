"""Ray as an executor: one local pool per Ray node, runs sent to the nodes in batches.

This process (the driver) keeps the queue. Each alive Ray node with CPUs gets one actor, pinned
to it, that owns a ``LocalExecutor``: the same engine, the same isolation and options as
``local``, on that node. Untrusted code runs only in those pools' sandboxes, never in the actor
or here. A dispatcher thread sends each actor batches of specs, up to ``4 * workers`` runs in
flight per node (enough for every slot to find its next run waiting); a collector thread
long-polls every actor for finished runs and for service requests, which the handlers in this
process answer on a thread pool (they may start nested runs: those skip the per-node bound, as
they take a lane of their own in the node's pool). A node whose actor dies costs only its runs
in flight: each is sent once more, to another node; one lost twice ends as an error result with
the reason. Each future is resolved once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import vouch
from vouch.errors import ClusterUnavailable, EngineCrashed, InfrastructureError, UsageError, VouchError
from vouch.exec._executor import Executor, LocalExecutor, PoolInfo, Service, _Attempt, _lost
from vouch.exec._hidden import expose_to_runs, exposed_to_every_run, hidden_in_every_run
from vouch.exec._spec import RunResult, RunSpec
from vouch.exec._values import from_data, to_data

INSTALL_HINT = "pip install 'vouch[ray]'"
CONNECT_TIMEOUT_S = 5.0
"""How long the head's port may take to accept a connection before the address counts as dead:
Ray itself retries an address that does not answer for minutes, deaf to SIGTERM meanwhile."""
_GCS_WAIT = "RAY_gcs_server_port_wait_time_s"
"""Ray's own count of one-second tries to reach a cluster's GCS."""
_START_TIMEOUT_S = 180.0
_DRAIN_S = 2.0
"""How long a closing node pool waits for its service runs to see the error and end."""
_POLL_S = 0.5
"""How long an actor holds a poll open when it has nothing to report."""


def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UsageError(f"--executor ray needs Ray; install it with: {INSTALL_HINT}") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of an address to probe, or None for one Ray resolves itself (``auto``)."""
    bare = address.removeprefix("ray://")
    if bare == "auto":
        return None
    host, sep, port = bare.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--address {address!r} is not HOST:PORT (the Ray head's address, as `ray start` prints it)")
    return host.strip("[]"), int(port)


def connect(address: str | None = None, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Connect this process to the Ray cluster at ``address`` (once). None means ``$RAY_ADDRESS``
    when it is set (Ray's own convention); ``"local"``, or None without it, starts Ray here.

    Raises:
        UsageError: Ray is not installed, or ``address`` is not HOST:PORT.
        ClusterUnavailable: nothing accepts a connection at ``address`` within ``timeout_s``,
            or Ray refused to join the cluster there.
    """
    ray = _import_ray()
    if ray.is_initialized():
        return
    options: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if address is None:
        address = os.environ.get("RAY_ADDRESS") or None
    if address is None or address == "local":
        # A Ray of this machine alone: its node on the loopback, as the test's and bench's heads.
        options |= {"address": "local", "include_dashboard": False, "_node_ip_address": "127.0.0.1"}
    else:
        where = _host_port(address)
        if where is not None and where[0] in ("127.0.0.1", "localhost", "::1"):
            options["_node_ip_address"] = "127.0.0.1"  # a head on the loopback: this driver there too
        if where is not None:
            try:
                socket.create_connection(where, timeout=timeout_s).close()
            except OSError as exc:
                raise ClusterUnavailable(
                    f"no Ray cluster answers at {address} ({exc.strerror or exc} within {timeout_s:.0f} s): "
                    "start one with `ray start --head`, or pass the head's address to --address"
                ) from None
        options["address"] = address
    try:
        with _joining(few_tries=options["address"] != "local"):
            ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterUnavailable(
            f"cannot join a Ray cluster at {address} ({_first_line(exc)}): is it a Ray head's GCS port, "
            "with the same Ray version as here?"
        ) from None


@contextlib.contextmanager
def _joining(*, few_tries: bool) -> Iterator[None]:
    """While Ray joins a cluster: its C++ log lines (one per try, on the process's stderr) kept off
    the terminal, the caller says what failed; ``few_tries``: a few tries rather than Ray's 20 s of
    them (not for a Ray started here, whose GCS may take longer to come up on a busy machine)."""
    saved_wait = os.environ.get(_GCS_WAIT)
    if few_tries:
        os.environ[_GCS_WAIT] = saved_wait or str(math.ceil(CONNECT_TIMEOUT_S))
    saved_fd = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved_fd, 2)
        os.close(saved_fd)
        if saved_wait is None:
            os.environ.pop(_GCS_WAIT, None)


class _Answer:
    """A service request of a run on a node, waiting for the driver's answer."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.data: Any = None
        self.error: tuple[str, str] | None = None


def _relayed_error(type_name: str, message: str) -> Exception:
    # The run reads "Type: message" of what the handler raised (as under ``local``): an exception
    # of the same name carries it.
    exc: Exception = type(type_name, (Exception,), {})(message)
    return exc


class _NodePool:
    """Runs in a Ray worker on one node (as an actor): that node's ``LocalExecutor``, and what
    crosses to and from the driver. It runs no untrusted code itself; its pool's sandboxes do.

    An actor outlives the executor that placed it: the next executor of the same driver opens a
    pool of its own in it (a Ray worker takes a second or more to start). Every call carries the
    token of the executor that opened the current pool, and a call with another token (one still
    on its way from an executor that closed) does nothing.
    """

    def __init__(self, cwd: str, store: str | None) -> None:
        # vouch's default outputs are hidden relative to the working directory and $VOUCH_STORE:
        # resolved as the driver resolves them, runs here hide what the driver's runs hide.
        if os.path.isdir(cwd):
            os.chdir(cwd)
        if store is not None:
            os.environ["VOUCH_STORE"] = store
        else:
            os.environ.pop("VOUCH_STORE", None)
        self._cond = threading.Condition()
        self._token = ""
        self._pool: LocalExecutor | None = None
        self._stop = threading.Event()
        self._done: list[tuple[int, RunResult | None, BaseException | None]] = []
        self._requests: list[tuple[int, int, Any]] = []
        self._waiting: dict[int, _Answer] = {}
        self._next_request = 0
        self._in_pool: dict[str, int] = {}
        """Runs each executor (token) has in the pool now."""

    def open(self, token: str, options: dict[str, Any], version: str) -> tuple[int, PoolInfo | VouchError]:
        """Start a pool for the executor ``token``: (this process's pid, its info or the error,
        as a value so that the driver can name the node)."""
        self.close(self._token)
        if version != vouch.__version__:
            error = InfrastructureError(
                f"vouch {vouch.__version__} is installed here, the driver runs {version}: "
                "install the same version on every node"
            )
            return os.getpid(), error
        pool = LocalExecutor(**options)
        started: Future[PoolInfo] = Future()
        stop = threading.Event()

        def own() -> None:
            # The zygote dies with the thread that starts it (PR_SET_PDEATHSIG): one that lives
            # as long as the pool, rather than one of Ray's.
            try:
                started.set_result(pool.start())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                started.set_exception(exc)
                return
            stop.wait()

        threading.Thread(target=own, name="vouch-node-pool", daemon=True).start()
        try:
            info = started.result()
        except VouchError as exc:
            return os.getpid(), exc
        with self._cond:
            self._token, self._pool, self._stop = token, pool, stop
        return os.getpid(), info

    def submit(self, token: str, items: list[tuple[int, RunSpec]], exposed: tuple[str, ...]) -> None:
        with self._cond:
            pool = self._pool if token == self._token else None
        if pool is None:
            return
        known = exposed_to_every_run()
        new = [path for path in exposed if path not in known]
        if new:
            expose_to_runs(*new)
        for key, spec in items:
            try:
                future = pool.submit(spec, self._relay(token, key) if spec.service else None)
            except Exception as exc:  # noqa: BLE001 - the run's outcome, reported as its future's
                self._report(token, key, None, exc)
                continue
            with self._cond:
                self._in_pool[token] = self._in_pool.get(token, 0) + 1
            future.add_done_callback(functools.partial(self._finished, token, key))

    def _finished(self, token: str, key: int, future: Future[RunResult]) -> None:
        with self._cond:
            self._in_pool[token] -= 1
            self._cond.notify_all()
        exc = future.exception()
        self._report(token, key, None if exc is not None else future.result(), exc)

    def _report(self, token: str, key: int, result: RunResult | None, exc: BaseException | None) -> None:
        if exc is not None and not isinstance(exc, VouchError):
            exc = InfrastructureError(f"{type(exc).__name__}: {exc}")
        with self._cond:
            if token == self._token:
                self._done.append((key, result, exc))
                self._cond.notify_all()

    def _relay(self, token: str, key: int) -> Service:
        def handler(request: Any) -> Any:
            answer = _Answer()
            with self._cond:
                if token != self._token:
                    raise RuntimeError("the node's pool is closing")
                request_id = self._next_request
                self._next_request += 1
                self._waiting[request_id] = answer
                self._requests.append((key, request_id, request))
                self._cond.notify_all()
            answer.ready.wait()
            if answer.error is not None:
                raise _relayed_error(*answer.error)
            return from_data(answer.data)

        return handler

    def poll(
        self, token: str, wait_s: float
    ) -> tuple[list[tuple[int, RunResult | None, BaseException | None]], list[Any]]:
        """Finished runs and new service requests; waits up to ``wait_s`` for one of either."""
        with self._cond:
            self._cond.wait_for(lambda: self._done or self._requests or token != self._token, timeout=wait_s)
            if token != self._token:
                return [], []
            done, self._done = self._done, []
            requests, self._requests = self._requests, []
        return done, requests

    def answer(self, request_id: int, data: Any, error: tuple[str, str] | None) -> None:
        with self._cond:
            answer = self._waiting.pop(request_id, None)
        if answer is not None:
            answer.data, answer.error = data, error
            answer.ready.set()

    def close(self, token: str) -> None:
        """Close the pool of the executor ``token`` (its runs are killed); the actor stays."""
        with self._cond:
            if token != self._token:
                return
            pool, stop, waiting = self._pool, self._stop, self._waiting
            self._token, self._pool, self._waiting = "", None, {}
            self._done, self._requests = [], []
            self._cond.notify_all()
        for answer in waiting.values():
            answer.error = ("RuntimeError", "the node's pool is closing")
            answer.ready.set()
        # Service runs still going (a candidate session whose stop was on its way) now get an
        # error for their request and end: the pool's close would otherwise wait for them (a
        # closing zygote lets its runs finish, and no answer reaches them any more).
        with self._cond:
            self._cond.wait_for(lambda: not self._in_pool.get(token), timeout=_DRAIN_S)
            self._in_pool.pop(token, None)
        if pool is not None:
            pool.close()
        stop.set()


_idle_lock = threading.Lock()
_idle: dict[str, list[Any]] = {}
"""Node id -> actors of this driver whose executor closed, ready for the next one."""
_idle_job = ""
"""The Ray job (this process's connection) those actors belong to."""


def _take_idle(node_id: str) -> Any:
    global _idle_job  # one cache per process, emptied when the connection changes
    ray = _import_ray()
    job = ray.get_runtime_context().get_job_id()
    with _idle_lock:
        if job != _idle_job:
            _idle.clear()
            _idle_job = job
        actors = _idle.get(node_id)
        return actors.pop() if actors else None


def _give_back(node_id: str, actor: Any) -> None:
    with _idle_lock:
        _idle.setdefault(node_id, []).append(actor)


@dataclass(frozen=True)
class NodeInfo:
    """One Ray node's pool, as it reported when it came up."""

    node_id: str
    address: str
    actor_pid: int
    """The pid, on that node, of the Ray worker that holds the pool (the actor's process)."""
    pool: PoolInfo


@dataclass(eq=False)
class _Node:
    info: NodeInfo
    actor: Any
    capacity: int
    inflight: dict[int, _Attempt] = field(default_factory=dict)
    poll: Any = None
    alive: bool = True
    sent: int = 0


class RayExecutor(Executor):
    """One ``LocalExecutor`` per node of a Ray cluster, fed in batches from this process.

    Args:
        address: the cluster's head (``HOST:PORT``, as ``ray start --head`` prints it, or
            ``auto``); None means ``$RAY_ADDRESS`` when it is set; ``"local"``, or None
            without it, starts a Ray instance on this machine.
        workers: runs at the same time on each node (default: the node's CPU resource).
        preload, hash_seed, allow_weak, warm_pytest, runs_dir: as ``LocalExecutor``'s, for
            every node's pool (``runs_dir`` is a path on each node).
        connect_timeout_s: how long the head's port may take to answer.

    Raises:
        ClusterUnavailable: the address does not answer (at construction: before any run).
    """

    name = "ray"

    def __init__(
        self,
        *,
        address: str | None = None,
        workers: int | None = None,
        preload: Sequence[str] = (),
        hash_seed: str | int = "0",
        allow_weak: bool = False,
        warm_pytest: bool = True,
        runs_dir: str | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        if workers is not None and (not isinstance(workers, int) or not 1 <= workers <= 64):
            raise UsageError(f"workers={workers!r} must be an integer from 1 to 64")
        connect(address, timeout_s=connect_timeout_s)
        self.address = address
        self._workers = workers
        self._options: dict[str, Any] = {
            "preload": tuple(preload),
            "hash_seed": str(hash_seed),
            "allow_weak": allow_weak,
            "warm_pytest": warm_pytest,
            "runs_dir": runs_dir,
        }
        self._token = uuid.uuid4().hex
        """Names this executor's pools in the actors it borrows."""
        self._lock = threading.Condition()  # guards the queues and every node's runs in flight
        self._life = threading.Lock()
        self._nodes: list[_Node] = []
        self._queue: deque[_Attempt] = deque()
        self._nested: deque[_Attempt] = deque()
        """Nested runs go out at once, whatever the nodes hold: runs waiting on them may fill every node."""
        self._next_key = 0
        self._closing = False
        self._started = False
        self._threads: list[threading.Thread] = []
        self._service_pool: ThreadPoolExecutor | None = None

    # --- life cycle ---------------------------------------------------------------------

    @property
    def nodes(self) -> list[NodeInfo]:
        """The nodes with a live pool (starting the pools if they are not yet)."""
        self.start()
        with self._lock:
            return [node.info for node in self._nodes if node.alive]

    def sent_per_node(self) -> dict[str, int]:
        """How many runs went to each node's pool so far (node id -> runs, retries included)."""
        with self._lock:
            return {node.info.node_id: node.sent for node in self._nodes}

    def in_flight_per_node(self) -> dict[str, int]:
        """Runs each live node's pool holds now (node id -> runs)."""
        with self._lock:
            return {node.info.node_id: len(node.inflight) for node in self._nodes if node.alive}

    def start(self) -> list[NodeInfo]:
        """Place a pool on every alive node with CPUs and wait until each is up (submit does this on first use).

        Raises:
            ClusterUnavailable: the cluster has no alive node with CPUs.
            IsolationUnavailable, InfrastructureError: a node's pool cannot start (named).
        """
        with self._life:
            if self._started:
                return [node.info for node in self._nodes if node.alive]
            if self._closing:
                raise EngineCrashed("the Ray executor is closed")
            self._nodes = self._place()
            self._started = True
            self._service_pool = ThreadPoolExecutor(
                max_workers=2 * sum(node.capacity for node in self._nodes) + 4, thread_name_prefix="vouch-ray-service"
            )
            for target, name in ((self._dispatch, "vouch-ray-dispatch"), (self._collect, "vouch-ray-collect")):
                thread = threading.Thread(target=target, name=name, daemon=True)
                thread.start()
                self._threads.append(thread)
            return [node.info for node in self._nodes]

    def _place(self) -> list[_Node]:
        ray = _import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        found = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1]
        if not found:
            raise ClusterUnavailable(f"the Ray cluster at {self.address or 'local'} has no alive node with CPUs")
        remote = ray.remote(_NodePool)
        cwd, store = os.getcwd(), os.environ.get("VOUCH_STORE")

        def new_actor(node_id: str) -> Any:
            strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
            options = {"num_cpus": 0, "max_concurrency": 16, "max_restarts": 0, "scheduling_strategy": strategy}
            return remote.options(**options).remote(cwd, store)

        def open_pool(actor: Any, workers: int) -> Any:
            return actor.open.remote(self._token, {**self._options, "workers": workers}, vouch.__version__)

        placed = []
        for node in found:
            workers = self._workers or max(1, min(64, int(node["Resources"]["CPU"])))
            idle = _take_idle(node["NodeID"])
            actor = idle if idle is not None else new_actor(node["NodeID"])
            placed.append([node, workers, actor, open_pool(actor, workers), idle is not None])
        nodes: list[_Node] = []
        try:
            for entry in placed:
                node, workers, actor, opening, reused = entry
                try:
                    pid, info = ray.get(opening, timeout=_START_TIMEOUT_S)
                except ray.exceptions.RayActorError:
                    if not reused:
                        raise
                    entry[2] = actor = new_actor(node["NodeID"])  # the idle one died meanwhile
                    pid, info = ray.get(open_pool(actor, workers), timeout=_START_TIMEOUT_S)
                if isinstance(info, VouchError):
                    raise type(info)(f"on Ray node {node['NodeManagerAddress']} ({node['NodeID'][:12]}): {info}")
                nodes.append(
                    _Node(
                        info=NodeInfo(node["NodeID"], node["NodeManagerAddress"], pid, info),
                        actor=actor,
                        capacity=max(8, 4 * workers),
                    )
                )
        except BaseException as exc:
            for _, _, actor, _, _ in placed:
                ray.kill(actor)
            if isinstance(exc, VouchError):
                raise
            if isinstance(exc, ray.exceptions.GetTimeoutError):
                raise ClusterUnavailable(f"the Ray nodes' pools did not start in {_START_TIMEOUT_S:.0f} s") from None
            if isinstance(exc, Exception):
                raise ClusterUnavailable(f"a Ray node's pool failed to start: {_first_line(exc)}") from None
            raise
        return nodes

    def close(self) -> None:
        with self._life:
            with self._lock:
                self._closing = True
                nodes, self._nodes = self._nodes, []
                orphans = [*self._queue, *self._nested, *(a for n in nodes for a in n.inflight.values())]
                self._queue.clear()
                self._nested.clear()
                lost = [node for node in nodes if not node.alive]
                for node in nodes:
                    node.inflight = {}
                    node.alive = False
                self._lock.notify_all()
            for attempt in orphans:
                if not attempt.future.done():
                    attempt.future.set_exception(EngineCrashed("the Ray executor was closed"))
            ray = _import_ray()
            for node, closing in [(node, node.actor.close.remote(self._token)) for node in nodes]:
                try:
                    ray.get(closing, timeout=30)
                except Exception:  # noqa: BLE001 - a node already gone needs no closing
                    try:
                        ray.kill(node.actor)
                    except Exception:  # noqa: BLE001, S110 - nor killing
                        pass
                    continue
                if node not in lost:
                    _give_back(node.info.node_id, node.actor)
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join(timeout=10)
            self._threads = []
            if self._service_pool is not None:
                self._service_pool.shutdown(wait=False, cancel_futures=True)
                self._service_pool = None

    def _window(self) -> int:
        self.start()
        with self._lock:
            return max(8, sum(node.capacity for node in self._nodes if node.alive))

    # --- runs ---------------------------------------------------------------------------

    def submit(self, spec: RunSpec, service: Service | None = None) -> Future[RunResult]:
        if not isinstance(spec, RunSpec):
            raise UsageError(f"submit() takes a RunSpec, not {type(spec).__name__}")
        if spec.service and service is None:
            raise UsageError(f"run {spec.name or spec.entry!r} asks for a service channel but no service was given")
        self.start()
        # What every run of this process hides is this process's to say (``hide_in_runs``).
        extra = [p for p in hidden_in_every_run() if p not in spec.hidden]
        if extra:
            spec = dataclasses.replace(spec, hidden=(*spec.hidden, *extra))
        future: Future[RunResult] = Future()
        self._enqueue(_Attempt(spec, service, future, retried=False))
        return future

    def _enqueue(self, attempt: _Attempt) -> None:
        with self._lock:
            if self._closing:
                raise EngineCrashed("the Ray executor is closed")
            if not any(node.alive for node in self._nodes):
                raise EngineCrashed("no Ray node's pool is left to run on")
            (self._nested if attempt.spec.nested else self._queue).append(attempt)
            self._lock.notify_all()

    def _dispatch(self) -> None:
        """Send queued runs to the nodes with room, in batches."""
        while True:
            with self._lock:
                batches = self._batches()
                while not batches and not self._closing:
                    self._lock.wait()
                    batches = self._batches()
                if self._closing:
                    return
            exposed = exposed_to_every_run()
            for node, items in batches:
                try:
                    node.actor.submit.remote(self._token, items, exposed)
                except Exception as exc:  # noqa: BLE001 - a spec Ray cannot send: those runs end with it
                    self._unsendable(node, [key for key, _ in items], exc)

    def _batches(self) -> list[tuple[_Node, list[tuple[int, RunSpec]]]]:
        """What to send now (called with the lock held): nested runs at once, the rest to nodes with room."""
        live = [node for node in self._nodes if node.alive]
        if not live:
            return []
        out: dict[int, tuple[_Node, list[tuple[int, RunSpec]]]] = {}

        def assign(node: _Node, attempt: _Attempt) -> None:
            key = self._next_key
            self._next_key += 1
            attempt.sent = time.monotonic()
            node.inflight[key] = attempt
            node.sent += 1
            out.setdefault(id(node), (node, []))[1].append((key, attempt.spec))

        while self._nested:
            assign(min(live, key=lambda n: len(n.inflight) / n.capacity), self._nested.popleft())
        # A node takes a batch once it has room for a quarter of what it may hold (or for all that
        # waits): fewer, larger calls, while the runs it still holds keep its slots busy.
        room = sorted(((node.capacity - len(node.inflight), node) for node in live), key=lambda x: -x[0])
        open_nodes = [(free, node) for free, node in room if free >= min(max(1, node.capacity // 4), len(self._queue))]
        for i, (free, node) in enumerate(open_nodes):
            share = min(free, math.ceil(len(self._queue) / (len(open_nodes) - i)))
            for _ in range(share):
                if free <= 0 or not self._queue:
                    break
                assign(node, self._queue.popleft())
        return list(out.values())

    def _unsendable(self, node: _Node, keys: list[int], exc: Exception) -> None:
        with self._lock:
            attempts = [node.inflight.pop(key) for key in keys if key in node.inflight]
            self._lock.notify_all()
        for attempt in attempts:
            attempt.future.set_exception(InfrastructureError(f"cannot send run {attempt.spec.name!r} to Ray: {exc}"))

    def _collect(self) -> None:
        """Long-poll every node for finished runs and service requests."""
        try:
            self._collect_loop()
        except Exception as exc:  # noqa: BLE001 - Ray itself failed here: no run may wait forever
            with self._lock:
                self._closing = True
                attempts = [*self._queue, *self._nested, *(a for n in self._nodes for a in n.inflight.values())]
                self._queue.clear()
                self._nested.clear()
                for node in self._nodes:
                    node.inflight = {}
                self._lock.notify_all()
            for attempt in attempts:
                if not attempt.future.done():
                    attempt.future.set_exception(EngineCrashed(f"lost touch with the Ray cluster: {_first_line(exc)}"))

    def _collect_loop(self) -> None:
        ray = _import_ray()
        while True:
            with self._lock:
                if self._closing:
                    return
                polls = {}
                for node in self._nodes:
                    if node.alive:
                        if node.poll is None:
                            node.poll = node.actor.poll.remote(self._token, _POLL_S)
                        polls[node.poll] = node
            if not polls:
                with self._lock:
                    self._lock.wait(timeout=1.0)
                continue
            ready, rest = ray.wait(list(polls), num_returns=1, timeout=2 * _POLL_S + 1)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                node = polls[ref]
                node.poll = None
                try:
                    done, requests = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - the node's actor is gone, whatever Ray calls it
                    self._lost_node(node, exc)
                    continue
                self._finish(node, done)
                for key, request_id, request in requests:
                    self._serve(node, key, request_id, request)

    def _finish(self, node: _Node, done: list[tuple[int, RunResult | None, BaseException | None]]) -> None:
        with self._lock:
            finished = [(node.inflight.pop(key, None), result, exc) for key, result, exc in done]
            self._lock.notify_all()
        for attempt, result, exc in finished:
            if attempt is None or attempt.future.done():
                continue
            if exc is not None:
                attempt.future.set_exception(exc)
            else:
                assert result is not None
                result.phases["round_trip_ms"] = round((time.monotonic() - attempt.sent) * 1000, 3)
                attempt.future.set_result(result)

    def _serve(self, node: _Node, key: int, request_id: int, request: Any) -> None:
        with self._lock:
            attempt = node.inflight.get(key)
            pool = self._service_pool
        if pool is None:
            return
        handler = attempt.service if attempt is not None else None
        pool.submit(self._answer, node, request_id, handler, request)

    def _answer(self, node: _Node, request_id: int, handler: Service | None, request: Any) -> None:
        data, error = None, None
        try:
            if handler is None:
                raise RuntimeError("this run has no service")
            data = to_data(handler(request))
        except Exception as exc:  # noqa: BLE001 - whatever the handler raised goes back to the run
            error = (type(exc).__name__, str(exc))
        try:
            node.actor.answer.remote(request_id, data, error)
        except Exception:  # noqa: BLE001, S110 - a node gone meanwhile: its runs are sent elsewhere
            pass

    def _lost_node(self, node: _Node, exc: BaseException) -> None:
        """The node's actor died: its runs in flight go to the other nodes, once each."""
        reason = f"the Ray node {node.info.address} ({node.info.node_id[:12]}) was lost: {_first_line(exc)}"
        with self._lock:
            node.alive = False
            attempts, node.inflight = list(node.inflight.values()), {}
            left = any(n.alive for n in self._nodes)
            stranded: list[_Attempt] = []
            if not left:
                stranded = [*self._queue, *self._nested]
                self._queue.clear()
                self._nested.clear()
            for attempt in attempts:
                if attempt.retried or attempt.future.done():
                    continue
                retry = dataclasses.replace(attempt, retried=True)
                if left:
                    (self._nested if retry.spec.nested else self._queue).appendleft(retry)
                else:
                    stranded.append(retry)
            self._lock.notify_all()
        for attempt in attempts:
            if attempt.retried and not attempt.future.done():
                attempt.future.set_result(
                    _lost(attempt.spec, node.info.pool, f"{reason}; the run was retried once already")
                )
        for attempt in stranded:
            if not attempt.future.done():
                attempt.future.set_exception(EngineCrashed(f"{reason}; no Ray node's pool is left to run on"))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
