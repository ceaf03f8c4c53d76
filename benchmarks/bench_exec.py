"""Engine speed against the naive baselines, measured in one run.

(a) the engine, full isolation, calling a trivial function;
(b) a ``python -c`` subprocess doing the same;
(c) one plain pytest test run through the engine;
(d) the same test as a ``python -m pytest`` subprocess with the same pytest options (those the
    engine's ``run_pytest`` uses: installed plugins not autoloaded, as in the engine);
(e) the same test as plain ``python -m pytest`` in this environment, as a user would run it
    (pytest then imports every plugin the environment installed).

For (a) and (c) the JSON also holds the median of every phase the engine reports per run
(``RunResult.phases``: the pool's steps, the child's ``enter``/``code``/``exit`` split and the
caller's ``round_trip``), so that a regression shows where it comes from, and the CPU time the
pool spent per run of (a) (its zygote and every process it reaped: spares, inits, runs), which
other work on a shared machine changes far less than it changes the medians.

Every run is its own process: the pids are recorded and checked to be distinct. Runs are
sequential (one at a time) so that each median is a per-run latency, not a throughput.

The engine has two modes of full isolation: as root (each run an unprivileged host uid of its
own) and without root (the caller's uid in user namespaces of the pool's own). The
script measures the mode it runs in; run as root with ``--rootless-uid UID --rootless-python PY``,
it also runs itself as that uid (``PY``: an interpreter that uid may execute, with vouch
importable) and prints both modes side by side.

    python benchmarks/bench_exec.py [--runs N] [--pytest-runs N] [--json]
                                    [--rootless-uid UID --rootless-python PY]
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
from typing import Any

from vouch.exec import Call, LocalExecutor, RunResult, RunSpec, Status
from vouch.exec._pytest import POOL_ARGS

TRIVIAL = "def f(x):\n    return x + 1\n"
TEST = "def test_one():\n    assert 1 + 1 == 2\n"
PYTEST_OPTIONS = ["-q", "-p", "no:cacheprovider"]


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _phases(results: list[RunResult]) -> dict[str, float]:
    names = sorted({name for result in results for name in result.phases})
    return {
        name.removesuffix("_ms"): round(statistics.median(r.phases[name] for r in results if name in r.phases), 3)
        for name in names
    }


def _pool_cpu_s(pid: int) -> float:
    """CPU seconds of the pool's zygote and of the children it reaped (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def bench_engine(executor: LocalExecutor, runs: int) -> tuple[list[float], list[RunResult]]:
    spec = RunSpec(entry=Call("trivial.py:f", args=(41,)), files={"trivial.py": TRIVIAL})
    times, results = [], []
    for _ in range(runs):
        start = time.perf_counter()
        result = executor.run(spec)
        times.append(time.perf_counter() - start)
        if result.status is not Status.OK or result.value != 42:
            raise SystemExit(f"engine run failed: {result.status} {result.reason}")
        results.append(result)
    return times, results


def bench_subprocess(runs: int) -> tuple[list[float], list[int]]:
    code = TRIVIAL + "import os\nassert f(41) == 42\nprint(os.getpid())\n"
    times, pids = [], []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        pids.append(int(out.stdout))
    return times, pids


def bench_engine_pytest(executor: LocalExecutor, runs: int) -> tuple[list[float], list[RunResult]]:
    spec = RunSpec(
        entry=Call("vouch.exec._pytest:run_pytest", args=([*PYTEST_OPTIONS, "test_one.py"],)),
        files={"test_one.py": TEST},
    )
    times, results = [], []
    for _ in range(runs):
        start = time.perf_counter()
        result = executor.run(spec)
        times.append(time.perf_counter() - start)
        if result.status is not Status.OK or result.value["counts"] != {"passed": 1}:
            raise SystemExit(f"engine pytest run failed: {result.status} {result.reason} {result.value}")
        results.append(result)
    return times, results


def bench_pytest_subprocess(runs: int, options: list[str]) -> tuple[list[float], list[int]]:
    times, pids = [], []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "test_one.py"), "w") as f:
            f.write(TEST)
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *options, "test_one.py"],
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
    parser.add_argument("--rootless-uid", type=int, default=None, help="(as root) also measure as this uid")
    parser.add_argument("--rootless-python", default=None, help="the interpreter that uid runs")
    args = parser.parse_args()
    results = measure(args.runs, args.pytest_runs)
    modes = {results["mode"]: results}
    if args.rootless_uid is not None:
        if os.geteuid() != 0 or not args.rootless_python:
            raise SystemExit("--rootless-uid needs root and --rootless-python")
        modes["rootless"] = _as_user(args)
    if args.json:
        print(json.dumps(results if len(modes) == 1 else modes))
        return
    for mode, figures in modes.items():
        _print(mode, figures)
    if len(modes) == 2:
        root, rootless = modes["root"], modes["rootless"]
        print(
            f"rootless / root, engine call {rootless['engine_median_ms'] / root['engine_median_ms']:.2f}x, "
            f"engine pytest {rootless['engine_pytest_median_ms'] / root['engine_pytest_median_ms']:.2f}x"
        )


def _as_user(args: argparse.Namespace) -> dict[str, Any]:
    home = tempfile.mkdtemp(prefix="vouch-bench-home-")
    os.chown(home, args.rootless_uid, args.rootless_uid)
    try:
        me = [args.rootless_python, os.path.abspath(__file__)]
        done = subprocess.run(
            [*me, "--json", "--runs", str(args.runs), "--pytest-runs", str(args.pytest_runs)],
            user=args.rootless_uid,
            group=args.rootless_uid,
            extra_groups=[],
            env={"HOME": home, "USER": "vouch-bench", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            cwd=home,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        subprocess.run(["rm", "-rf", home], check=False)
    if done.returncode != 0:
        raise SystemExit(f"the rootless run failed: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def measure(runs: int, pytest_runs: int) -> dict[str, Any]:
    """Both engine figures and both baselines, in the mode this process runs in."""

    with LocalExecutor(workers=1) as executor:
        info = executor.start()
        bench_engine(executor, 10)  # warm the socket path and the first spares
        cpu_before = _pool_cpu_s(info.pid)
        engine, engine_results = bench_engine(executor, runs)
        # The last runs' processes may be reaped a moment after their results: over ``runs``
        # runs that is noise, but read after a pause all the same.
        time.sleep(0.2)
        pool_cpu_ms = (_pool_cpu_s(info.pid) - cpu_before) * 1000 / runs
        bench_engine_pytest(executor, 3)
        engine_pytest, engine_pytest_results = bench_engine_pytest(executor, pytest_runs)
    engine_pids = [r.pid for r in engine_results]
    engine_pytest_pids = [r.pid for r in engine_pytest_results]
    sub, sub_pids = bench_subprocess(max(10, runs // 4))
    pytest_sub, pytest_sub_pids = bench_pytest_subprocess(pytest_runs, [*POOL_ARGS, *PYTEST_OPTIONS])
    plain_sub, plain_sub_pids = bench_pytest_subprocess(max(3, pytest_runs // 4), PYTEST_OPTIONS)

    for name, pids in (
        ("engine", engine_pids),
        ("engine pytest", engine_pytest_pids),
        ("subprocess", sub_pids),
        ("pytest subprocess", pytest_sub_pids),
        ("plain pytest subprocess", plain_sub_pids),
    ):
        if len(set(pids)) != len(pids):
            raise SystemExit(f"{name}: runs shared a process")
    results: dict[str, Any] = {
        "engine_median_ms": round(_median_ms(engine), 3),
        "engine_pool_cpu_ms_per_run": round(pool_cpu_ms, 3),
        "subprocess_median_ms": round(_median_ms(sub), 3),
        "engine_pytest_median_ms": round(_median_ms(engine_pytest), 3),
        "pytest_subprocess_median_ms": round(_median_ms(pytest_sub), 3),
        "plain_pytest_subprocess_median_ms": round(_median_ms(plain_sub), 3),
    }
    results["subprocess_over_engine"] = round(results["subprocess_median_ms"] / results["engine_median_ms"], 1)
    results["pytest_subprocess_over_engine_pytest"] = round(
        results["pytest_subprocess_median_ms"] / results["engine_pytest_median_ms"], 1
    )
    results["plain_pytest_subprocess_over_engine_pytest"] = round(
        results["plain_pytest_subprocess_median_ms"] / results["engine_pytest_median_ms"], 1
    )
    results.update(
        {
            "mode": "root" if os.geteuid() == 0 else "rootless",
            "runs": runs,
            "pytest_runs": pytest_runs,
            "distinct_pids": len(set(engine_pids)) + len(set(engine_pytest_pids)),
            "isolation": info.isolation_level,
            "pool_rss_mb": info.baseline_rss_mb,
            "cpus": os.cpu_count(),
            "engine_phases_ms": _phases(engine_results),
            "engine_pytest_phases_ms": _phases(engine_pytest_results),
        }
    )
    return results


def _print(mode: str, results: dict[str, Any]) -> None:
    print(f"mode: {mode} (isolation {results['isolation']})")
    print(f"(a) engine, full isolation, trivial call   median {results['engine_median_ms']:8.2f} ms")
    print(f"    the pool's CPU per run of (a)                  {results['engine_pool_cpu_ms_per_run']:8.2f} ms")
    print(f"(b) python -c subprocess, same call         median {results['subprocess_median_ms']:8.2f} ms")
    print(f"    ratio (b)/(a)                                  {results['subprocess_over_engine']:8.1f}x")
    print(f"(c) one pytest test through the engine      median {results['engine_pytest_median_ms']:8.2f} ms")
    print(f"(d) python -m pytest subprocess, same test  median {results['pytest_subprocess_median_ms']:8.2f} ms")
    print(f"    ratio (d)/(c)                                  {results['pytest_subprocess_over_engine_pytest']:8.1f}x")
    plain = results["plain_pytest_subprocess_median_ms"]
    plain_ratio = results["plain_pytest_subprocess_over_engine_pytest"]
    print(f"(e) plain python -m pytest, plugins autoload median {plain:8.2f} ms")
    print(f"    ratio (e)/(c)                                  {plain_ratio:8.1f}x")
    print(f"    {results['distinct_pids']} engine runs, each its own process")
    for key, label in (("engine_phases_ms", "(a)"), ("engine_pytest_phases_ms", "(c)")):
        phases = ", ".join(f"{name} {ms:.2f}" for name, ms in results[key].items())
        print(f"    {label} phases, median ms: {phases}")


if __name__ == "__main__":
    main()
