"""Per-run cost over thousands of runs: why each slot keeps one network namespace.

In one run, per chunk of ``--chunk`` iterations:
(a) the engine (per-slot network namespaces) running a trivial call, batch of 2 workers;
(b) the baseline mechanism the engine used before: clone a child into a *fresh* network
    namespace (plus user, PID, mount namespaces), let it exit, reap it;
(c) the same clone into the *existing* network namespace.
If (b) grows from chunk to chunk while (c) stays flat, the kernel's asynchronous teardown of
network namespaces is what a per-run namespace costs at scale.

    python benchmarks/bench_long_runs.py [--chunks 6] [--chunk 500] [--json]   (as root)
"""

from __future__ import annotations

import argparse
import json
import os
import time

from vouch.exec import Call, LocalExecutor, RunSpec, _linux

_BASE = _linux.CLONE_NEWUSER | _linux.CLONE_NEWPID | _linux.CLONE_NEWNS


def _clone_loop(n: int, flags: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        pid = _linux.clone_process(flags)
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return (time.perf_counter() - started) / n * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=6)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    spec = RunSpec(entry=Call("v.py:f"), files={"v.py": "def f():\n    return 1\n"})
    engine, fresh, shared = [], [], []
    with LocalExecutor(warm_pytest=False) as executor:
        executor.start()
        for _ in range(args.chunks):
            started = time.perf_counter()
            executor.run_batch([spec] * args.chunk)
            engine.append(round((time.perf_counter() - started) / args.chunk * 1000, 2))
    for _ in range(args.chunks):
        fresh.append(round(_clone_loop(args.chunk, _BASE | _linux.CLONE_NEWNET), 2))
    for _ in range(args.chunks):
        shared.append(round(_clone_loop(args.chunk, _BASE), 2))

    figures = {
        "chunk": args.chunk,
        "engine_ms_per_run": engine,
        "clone_fresh_netns_ms": fresh,
        "clone_shared_netns_ms": shared,
        "fresh_last_over_first": round(fresh[-1] / fresh[0], 2),
        "engine_last_over_first": round(engine[-1] / engine[0], 2),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(f"per-iteration ms, chunks of {args.chunk}:")
    print(f"  (a) engine, per-slot netns, trivial call: {engine}  last/first {figures['engine_last_over_first']}")
    print(f"  (b) clone with a fresh netns each time:   {fresh}  last/first {figures['fresh_last_over_first']}")
    print(f"  (c) clone into an existing netns:         {shared}")


if __name__ == "__main__":
    main()
