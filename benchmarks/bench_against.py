"""The engine's trivial run and the audit's cost, this tree against another revision, in one run.

Two figures, each measured for both revisions in the same run, in alternating order (base, head,
head, base, ...) so that a machine that gets busier over the run weighs on both alike:

(a) the engine's trivial run: the median latency of one run calling a trivial function (full
    isolation, one worker, runs one at a time), over ``--runs`` runs per round;
(b) the audit's cost: the wall-clock time of ``audit_humaneval`` (per-trial mode, two workers, a
    fresh pool and store) on the first ``--limit-tasks`` tasks of a samples file, and how many
    trials each verdict got (so that a faster audit that judges otherwise shows it).

Each measurement is a fresh process whose ``PYTHONPATH`` puts the revision's ``src`` first (the
base is checked out into a temporary git worktree, removed at the end); the engine's pool
processes inherit it. Prints each figure's median over the rounds, the ratio head/base, and
exits 1 when a ratio is over ``--max-ratio``.

    .venv/bin/python benchmarks/bench_against.py --base REV [--rounds 3] [--runs 40]
        [--limit-tasks 6] [--samples FILE] [--max-ratio 1.10] [--json OUT] [--head-set NAME=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("VOUCH_DATA_DIR") or ROOT / ".." / "shared" / "data")

TRIVIAL = """
import json, statistics, sys, time
from vouch.exec import Call, LocalExecutor, RunSpec
runs = int(sys.argv[1])
spec = RunSpec(entry=Call("trivial.py:f", args=(41,)), files={"trivial.py": "def f(x):\\n    return x + 1\\n"})
with LocalExecutor(workers=1) as ex:
    ex.run(spec)  # the pool's first run warms it
    took = []
    for _ in range(runs):
        began = time.perf_counter()
        result = ex.run(spec)
        took.append(time.perf_counter() - began)
        assert result.ok and result.value == 42, result
print(json.dumps({"median_ms": 1000 * statistics.median(took)}))
"""

AUDIT = """
import collections, json, sys, tempfile, time
from pathlib import Path
from vouch.audit import PRELOAD, audit_humaneval
from vouch.exec import LocalExecutor
samples, limit, overrides = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
config = None
if overrides:
    from vouch.audit import AuditConfig
    config = AuditConfig(**overrides)
with tempfile.TemporaryDirectory() as out, LocalExecutor(workers=2, preload=PRELOAD) as ex:
    began = time.perf_counter()
    results = audit_humaneval(Path(samples), executor=ex, witness_dir=Path(out) / "w", limit_tasks=limit, config=config)
    took = time.perf_counter() - began
verdicts = collections.Counter(t.verdict.value for t in results.trials)
print(json.dumps({"seconds": took, "verdicts": dict(sorted(verdicts.items()))}))
"""


def _measure(src: Path, script: str, *args: str) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_against: a measurement of {src} failed:\n{done.stderr[-3000:]}")
    last = done.stdout.strip().splitlines()[-1]
    value: dict[str, object] = json.loads(last)
    return value


def _setting(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare with (e.g. a commit)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=40, help="trivial runs per round")
    parser.add_argument("--limit-tasks", type=int, default=6)
    parser.add_argument("--samples", type=Path, default=DATA / "humaneval_3models_samples.jsonl")
    parser.add_argument("--max-ratio", type=float, default=1.10)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--head-set",
        action="append",
        default=[],
        type=_setting,
        metavar="NAME=VALUE",
        help="an AuditConfig field for the head's audit (a JSON value), e.g. agreements_asked=0",
    )
    args = parser.parse_args()
    if not args.samples.is_file():
        raise SystemExit(f"bench_against: no samples file {args.samples} (set VOUCH_DATA_DIR or --samples)")
    with tempfile.TemporaryDirectory(prefix="vouch-base-") as tmp:
        base_tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), args.base], check=True)
        try:
            trees = {"base": base_tree / "src", "head": ROOT / "src"}
            trivial: dict[str, list[float]] = {"base": [], "head": []}
            audit: dict[str, list[float]] = {"base": [], "head": []}
            verdicts: dict[str, object] = {}
            for round_ in range(args.rounds):
                order = ["base", "head"] if round_ % 2 == 0 else ["head", "base"]
                for name in order:
                    t = _measure(trees[name], TRIVIAL, str(args.runs))
                    trivial[name].append(float(t["median_ms"]))  # type: ignore[arg-type]
                    settings = json.dumps(dict(args.head_set) if name == "head" else {})
                    a = _measure(trees[name], AUDIT, str(args.samples), str(args.limit_tasks), settings)
                    audit[name].append(float(a["seconds"]))  # type: ignore[arg-type]
                    verdicts[name] = a["verdicts"]
                    print(
                        f"round {round_ + 1} {name}: trivial run {t['median_ms']:.2f} ms, "
                        f"audit {a['seconds']:.1f} s {a['verdicts']}",
                        flush=True,
                    )
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)], check=False)
    figures = {
        "trivial_run_ms": {k: statistics.median(v) for k, v in trivial.items()},
        "audit_s": {k: statistics.median(v) for k, v in audit.items()},
    }
    ratios = {k: v["head"] / v["base"] for k, v in figures.items()}
    shown = f", head with {dict(args.head_set)}" if args.head_set else ""
    print(f"base {args.base}, {args.rounds} rounds, first {args.limit_tasks} tasks of {args.samples.name}{shown}")
    for key, value in figures.items():
        print(f"  {key}: base {value['base']:.2f}, head {value['head']:.2f}, head/base {ratios[key]:.3f}")
    print(f"  verdicts: base {verdicts.get('base')}, head {verdicts.get('head')}")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"base": args.base, "figures": figures, "ratios": ratios, "verdicts": verdicts})
        )
    if any(r > args.max_ratio for r in ratios.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
