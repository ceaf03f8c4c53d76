"""A pool per preload set: runs go to a pool warmed with what they need, and no more.

A pool's zygote pre-imports modules so that its runs find them warm, and every run pays for
the zygote's size twice: when its process is cloned and when it exits (page tables and shared
pages; `RunResult.phases` shows it as ``clone`` and ``exit``). AgentDojo's suites pull in the
model SDKs of its import chain (about 200 MB); a BFCL or HumanEval decision forked from that
pool pays for them for nothing. ``PoolSet`` keeps one executor per distinct ``RunSpec.preload``,
made by the caller's factory on first use, and closes them all together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

from vouch.exec._executor import Executor, Service
from vouch.exec._spec import RunResult, RunSpec


class PoolSet(Executor):
    """One executor per preload set (``RunSpec.preload``), each made on first use by ``make``.

    Each pool has its own workers: runs of two sets may be in flight at once, up to twice the
    width of one pool.
    """

    name = "pools"

    def __init__(self, make: Callable[[tuple[str, ...]], Executor]) -> None:
        self._make = make
        self._pools: dict[tuple[str, ...], Executor] = {}
        self._lock = threading.Lock()
        self._closed = False

    def pool(self, preload: tuple[str, ...]) -> Executor:
        """The executor of one preload set, made now if it is the first run to need it."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this pool set is closed")
            executor = self._pools.get(preload)
            if executor is None:
                executor = self._pools[preload] = self._make(preload)
            return executor

    @property
    def pools(self) -> dict[tuple[str, ...], Executor]:
        with self._lock:
            return dict(self._pools)

    def submit(self, spec: RunSpec, service: Service | None = None) -> Future[RunResult]:
        return self.pool(spec.preload).submit(spec, service)

    def _window(self) -> int:
        return max((pool._window() for pool in self.pools.values()), default=8)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pools, self._pools = list(self._pools.values()), {}
        for executor in pools:
            executor.close()
