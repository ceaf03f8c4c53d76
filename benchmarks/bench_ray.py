"""Ray's overhead: V4V through the local executor and through Ray on this machine, in the same run.

Runs ``run_v4v`` (the code path of ``bench_v4v.py``: the six checks, mutation included) on the same
tasks through ``--executor local`` and ``--executor ray``, alternating, ``--rounds`` times each, each
run with a fresh store so that every decision runs. Ray is a head started here on loopback (one
node: this machine) unless ``--address`` names a running cluster. The default tasks are a slice of
the three default builds (``--humaneval``, ``--bfcl``, ``--agentdojo`` tasks of each, built first,
not timed); ``--tasks DIR`` screens a task set already built (``bench_v4v.py``'s whole one).

    python benchmarks/bench_ray.py [--tasks DIR] [--address HOST:PORT] [--rounds 2] [--json]

Prints each executor's median wall time, the ratio Ray / local (target: at most 1.15),
and whether every run's per-task results (every check's verdict and evidence) are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vouch.bench import PRELOAD, load_tasks
from vouch.exec import LocalExecutor
from vouch.sources import build_source
from vouch.store import Store
from vouch.v4v import run_v4v

TARGET_RATIO = 1.15


def _build(root: Path, sizes: dict[str, int]) -> None:
    with LocalExecutor(preload=PRELOAD) as executor:
        for source, limit in sizes.items():
            if limit > 0:
                started = time.perf_counter()
                options = {"limit": limit}
                build_source(source, root / source, seed=0, options=options, executor=executor, force=True)
                print(f"built {limit} {source} tasks in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def _start_head(temp_dir: str) -> tuple[subprocess.Popen[bytes], str]:
    """A Ray head on loopback with this machine's CPUs, in a session of its own; its address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray = str(Path(sys.executable).with_name("ray"))
    args = ["start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port)]
    args += ["--num-cpus", str(os.cpu_count() or 1), "--include-dashboard=false", "--disable-usage-stats"]
    process = subprocess.Popen(
        [ray, *args, "--temp-dir", temp_dir],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"127.0.0.1:{port}"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("bench_ray: the Ray head did not start") from None
            time.sleep(0.2)


def _stop_head(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)  # ray start --block stops what it started
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _screen(tasks: list[Any], store: Path, kind: str, address: str | None, max_mutants: int) -> tuple[float, Any]:
    started = time.perf_counter()
    body = run_v4v(tasks, store=Store(store), executor_kind=kind, address=address, max_mutants=max_mutants)
    return time.perf_counter() - started, body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=Path, default=None, help="a task set to screen (default: build a slice)")
    parser.add_argument("--address", default=None, help="a running Ray cluster (default: start a head here)")
    parser.add_argument("--rounds", type=int, default=2, help="runs per executor, alternating")
    parser.add_argument("--humaneval", type=int, default=6)
    parser.add_argument("--bfcl", type=int, default=10)
    parser.add_argument("--agentdojo", type=int, default=4)
    parser.add_argument("--max-mutants", type=int, default=12)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vouch-bench-ray-", dir="/var/tmp") as tmp:
        root = args.tasks
        if root is None:
            root = Path(tmp) / "tasks"
            _build(root, {"humaneval": args.humaneval, "bfcl": args.bfcl, "agentdojo": args.agentdojo})
        tasks = load_tasks(root)
        head = None
        ray_dir = tempfile.mkdtemp(prefix="vray-", dir="/tmp")  # Ray's socket paths must stay short
        address = args.address
        try:
            if address is None:
                head, address = _start_head(ray_dir)
            walls: dict[str, list[float]] = {"local": [], "ray": []}
            bodies: list[Any] = []
            for round_ in range(args.rounds):
                for kind in ("local", "ray"):
                    store = Path(tmp) / f"store-{kind}-{round_}.sqlite"
                    wall, body = _screen(tasks, store, kind, address if kind == "ray" else None, args.max_mutants)
                    walls[kind].append(wall)
                    bodies.append(body["tasks"])
                    print(f"round {round_ + 1} {kind}: {wall:.1f} s", file=sys.stderr, flush=True)
        finally:
            if head is not None:
                _stop_head(head)
            subprocess.run(["rm", "-rf", ray_dir], check=False)

    local, ray = statistics.median(walls["local"]), statistics.median(walls["ray"])
    figures = {
        "tasks": len(tasks),
        "cases": sum(len(t.cases) for t in tasks),
        "rounds": args.rounds,
        "local_s": [round(w, 1) for w in walls["local"]],
        "ray_s": [round(w, 1) for w in walls["ray"]],
        "local_median_s": round(local, 1),
        "ray_median_s": round(ray, 1),
        "ray_over_local": round(ray / local, 3),
        "target_ratio": TARGET_RATIO,
        "identical": all(body == bodies[0] for body in bodies),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"V4V over {figures['tasks']} tasks ({figures['cases']} cases), {args.rounds} rounds each: "
        f"local {figures['local_median_s']} s, Ray (one node, this machine) {figures['ray_median_s']} s median"
    )
    print(f"  runs: local {figures['local_s']} s, ray {figures['ray_s']} s")
    print(
        f"Ray / local = {figures['ray_over_local']} (target at most {TARGET_RATIO}); "
        f"results identical: {figures['identical']}"
    )


if __name__ == "__main__":
    main()
