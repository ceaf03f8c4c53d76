"""Engine speed against the naive baselines, measured in one run.

(a) the engine, full isolation, calling a trivial function;
(b) a ``python -c`` subprocess doing the same;
(c) one plain pytest test run through the engine;
(d) the same test as a ``python -m pytest`` subprocess with the same pytest options.

Every run is its own process: the pids are recorded and checked to be distinct. Runs are
sequential (one at a time) so that each median is a per-run latency, not a throughput.

    python benchmarks/bench_exec.py [--runs N] [--pytest-runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from vouch.exec import Call, LocalExecutor, RunSpec, Status

TRIVIAL = "def f(x):\n    return x + 1\n"
TEST = "def test_one():\n    assert 1 + 1 == 2\n"
PYTEST_OPTIONS = ["-q", "-p", "no:cacheprovider"]


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_engine(executor: LocalExecutor, runs: int) -> tuple[list[float], list[int]]:
    spec = RunSpec(entry=Call("trivial.py:f", args=(41,)), files={"trivial.py": TRIVIAL})
    times, pids = [], []
    for _ in range(runs):
        start = time.perf_counter()
        result = executor.run(spec)
        times.append(time.perf_counter() - start)
        if result.status is not Status.OK or result.value != 42:
            raise SystemExit(f"engine run failed: {result.status} {result.reason}")
        pids.append(result.pid)
    return times, pids


def bench_subprocess(runs: int) -> tuple[list[float], list[int]]:
    code = TRIVIAL + "import os\nassert f(41) == 42\nprint(os.getpid())\n"
    times, pids = [], []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        pids.append(int(out.stdout))
    return times, pids


def bench_engine_pytest(executor: LocalExecutor, runs: int) -> tuple[list[float], list[int]]:
    spec = RunSpec(
        entry=Call("vouch.exec._pytest:run_pytest", args=([*PYTEST_OPTIONS, "test_one.py"],)),
        files={"test_one.py": TEST},
    )
    times, pids = [], []
    for _ in range(runs):
        start = time.perf_counter()
        result = executor.run(spec)
        times.append(time.perf_counter() - start)
        if result.status is not Status.OK or result.value["counts"] != {"passed": 1}:
            raise SystemExit(f"engine pytest run failed: {result.status} {result.reason} {result.value}")
        pids.append(result.pid)
    return times, pids


def bench_pytest_subprocess(runs: int) -> tuple[list[float], list[int]]:
    times, pids = [], []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "test_one.py"), "w") as f:
            f.write(TEST)
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *PYTEST_OPTIONS, "test_one.py"],
                cwd=tmp,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            out, _ = proc.communicate()
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"pytest subprocess failed: {out.decode()[-500:]}")
            pids.append(proc.pid)
    return times, pids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200, help="runs for (a) and (b)")
    parser.add_argument("--pytest-runs", type=int, default=20, help="runs for (c) and (d)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    with LocalExecutor(workers=1) as executor:
        info = executor.start()
        bench_engine(executor, 10)  # warm the socket path and the first spares
        engine, engine_pids = bench_engine(executor, args.runs)
        bench_engine_pytest(executor, 3)
        engine_pytest, engine_pytest_pids = bench_engine_pytest(executor, args.pytest_runs)
    sub, sub_pids = bench_subprocess(max(10, args.runs // 4))
    pytest_sub, pytest_sub_pids = bench_pytest_subprocess(args.pytest_runs)

    for name, pids in (
        ("engine", engine_pids),
        ("engine pytest", engine_pytest_pids),
        ("subprocess", sub_pids),
        ("pytest subprocess", pytest_sub_pids),
    ):
        if len(set(pids)) != len(pids):
            raise SystemExit(f"{name}: runs shared a process")
    results = {
        "engine_median_ms": round(_median_ms(engine), 3),
        "subprocess_median_ms": round(_median_ms(sub), 3),
        "engine_pytest_median_ms": round(_median_ms(engine_pytest), 3),
        "pytest_subprocess_median_ms": round(_median_ms(pytest_sub), 3),
    }
    results["subprocess_over_engine"] = round(results["subprocess_median_ms"] / results["engine_median_ms"], 1)
    results["pytest_subprocess_over_engine_pytest"] = round(
        results["pytest_subprocess_median_ms"] / results["engine_pytest_median_ms"], 1
    )
    results.update(
        {
            "runs": args.runs,
            "pytest_runs": args.pytest_runs,
            "distinct_pids": len(set(engine_pids)) + len(set(engine_pytest_pids)),
            "isolation": info.isolation_level,
            "pool_rss_mb": info.baseline_rss_mb,
            "cpus": os.cpu_count(),
        }
    )
    if args.json:
        print(json.dumps(results))
        return
    print(f"(a) engine, full isolation, trivial call   median {results['engine_median_ms']:8.2f} ms")
    print(f"(b) python -c subprocess, same call         median {results['subprocess_median_ms']:8.2f} ms")
    print(f"    ratio (b)/(a)                                  {results['subprocess_over_engine']:8.1f}x")
    print(f"(c) one pytest test through the engine      median {results['engine_pytest_median_ms']:8.2f} ms")
    print(f"(d) python -m pytest subprocess, same test  median {results['pytest_subprocess_median_ms']:8.2f} ms")
    print(f"    ratio (d)/(c)                                  {results['pytest_subprocess_over_engine_pytest']:8.1f}x")
    print(f"    {results['distinct_pids']} engine runs, each its own process; isolation {results['isolation']}")


if __name__ == "__main__":
    main()
