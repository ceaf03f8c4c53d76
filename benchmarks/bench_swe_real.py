"""The SWE form on real SWE-bench instances: environments, worlds, and the harness's verdicts.

Builds (or finds) the environment of every repo/version, materialises the null, gold and agent
worlds of every instance, runs T0 in each as the harness does, and prints per instance whether
the gold patch came out resolved and the agent's patch as the official harness said, with the
tests that differ and why; then the environment and world build times. Run it twice: the second
run must find every environment (0 pip installs) and every world in the cache.

    .venv/bin/python benchmarks/bench_swe_real.py --data ../shared/data/swebench \\
        --repo-root /path/to/mirrors [--cache DIR] [--only ID ...] [--json OUT]

``--repo-root`` holds one clone or bare mirror per repository (``owner+name/repo``,
``owner+name``, ``owner__name``, ``owner/name`` or ``name``); ``--repo-map owner/name=PATH``
names one directly.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import vouch
from vouch.audit.repository._audit import SWE_PRELOAD
from vouch.exec import LocalExecutor
from vouch.swebench._env import RepoLocator, plan_environments
from vouch.swebench._harness import (
    HarnessReproduction,
    environment_records,
    reproduce_harness,
    summarise_reproduction,
)
from vouch.swebench._instances import load_instances, load_predictions
from vouch.swebench._specs import load_environments
from vouch.worlds import EnvCache, WorldCache


def main() -> None:
    parser = argparse.ArgumentParser(description="vouch's run of the SWE-bench harness on real instances")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/swebench"))
    parser.add_argument("--repo-root", type=Path, default=None)
    parser.add_argument("--repo-map", action="append", default=[], help="owner/name=PATH")
    parser.add_argument("--cache", type=Path, default=Path(".vouch"), help="worlds/ and envs/ go under it")
    parser.add_argument("--only", action="append", default=[], help="instance ids (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--records", type=Path, default=None, help="append each instance's record (JSONL) as made")
    parser.add_argument("--no-null", action="store_true", help="skip the null world R (saves a third of the runs)")
    parser.add_argument(
        "--envs-only", action="store_true", help="build or find the environments, print their times, run no tests"
    )
    args = parser.parse_args()
    every = load_instances(args.data / "instances.jsonl")
    instances = every
    if args.only:
        order = {name: n for n, name in enumerate(args.only)}
        instances = sorted((i for i in every if i.instance_id in order), key=lambda i: order[i.instance_id])
    trials = load_predictions(args.data / "predictions.jsonl", load_instances(args.data / "instances.jsonl"))
    specs = load_environments(args.data / "environments.json")
    locator = RepoLocator(root=args.repo_root, mapping=dict(m.split("=", 1) for m in args.repo_map))
    worlds = WorldCache(args.cache / "worlds")
    envs = EnvCache(args.cache / "envs")
    sources: dict[str, str] = {}
    for inst in instances:
        try:
            sources[inst.instance_id] = locator.locate(inst)
        except vouch.errors.UsageError as exc:
            print(f"{inst.instance_id}: {exc}")

    def step(line: str, done: int, total: int) -> None:
        print(f"  env [{done}/{total}] {line}", flush=True)

    started = time.monotonic()
    for inst in every:
        if inst.instance_id not in sources:
            try:
                sources[inst.instance_id] = locator.locate(inst)
            except vouch.errors.UsageError:
                pass
    located = [i for i in instances if i.instance_id in sources]
    # Environments are planned over every instance, so that a run on some of them finds the
    # same recipes (the newest base commit of each version) as a run on all.
    plan = plan_environments(
        [i for i in every if i.instance_id in sources], sources, specs, worlds, envs, progress=step
    )
    env_s = time.monotonic() - started
    if args.envs_only:
        for record in environment_records(plan):
            state = f"FAILED: {record.error[:150]}" if record.error else f"built={record.built}"
            print(f"{record.name:28} {state:>12} {record.seconds:8.1f} s {record.installs:3d} pip installs")
        installs = sum(e.installs for e in plan.built.values())
        print(
            f"environments: {len(plan.built)} ready, {len(plan.failed)} failed, {env_s:.1f} s, {installs} pip installs"
        )
        return
    with LocalExecutor(workers=args.workers, preload=SWE_PRELOAD) as executor:
        records = reproduce_harness(
            located,
            trials,
            executor=executor,
            worlds=worlds,
            sources=sources,
            plan=plan,
            timeout_s=args.timeout,
            progress=lambda line: print(line, flush=True),
            with_null=not args.no_null,
            on_record=(lambda r: _append(args.records, r.model_dump_json())) if args.records else None,
        )
    total_s = time.monotonic() - started
    print()
    print(f"{'instance':34} {'env':>5} {'gold':>6} {'agent':>6} {'harness':>8} {'agree':>6} {'excl':>5}  why not")
    for r in records:
        gold = "-" if r.gold is None else str(r.gold.resolved)
        agent = "-" if r.agent is None else str(r.agent.resolved)
        agree = "yes" if r.gold_reproduced and r.agent_reproduced else "no"
        broken = [c for c in (r.gold, r.agent, r.null) if c is not None and c.resolved is None]
        why = (
            r.reason
            or "; ".join(f"{c.world}: {c.status} {c.reason}" for c in broken)
            or "; ".join(f"{d.world}:{d.test.split('::')[-1]} [{d.cause}]" for d in r.differences[:4])
        )
        print(
            f"{r.instance_id:34} {r.status:>5} {gold:>6} {agent:>6} {r.harness_resolved!s:>8} {agree:>6}  {why[:150]}"
        )
    summary = summarise_reproduction(records)
    print()
    print(json.dumps(summary))
    print()
    print(f"{'environment':28} {'built':>6} {'seconds':>8} {'pip installs':>13}")
    env_records = environment_records(plan)
    for record in env_records:
        if record.error:
            print(f"{record.name:28} FAILED: {record.error[:200]}")
        else:
            print(f"{record.name:28} {record.built!s:>6} {record.seconds:8.1f} {record.installs:13d}")
    world_s = sum(r.world_build_s for r in records)
    installs = sum(e.installs for e in plan.built.values())
    print(f"environments: {env_s:.1f} s ({installs} pip installs); worlds: {world_s:.1f} s; total {total_s:.1f} s")
    if args.json is not None:
        results = HarnessReproduction(
            vouch_version=vouch.__version__,
            config={"data": str(args.data), "timeout_s": args.timeout, "workers": args.workers},
            instances=records,
            environments=env_records,
            summary=summary | {"env_s": round(env_s, 1), "world_s": round(world_s, 1), "total_s": round(total_s, 1)},
        )
        args.json.write_text(results.model_dump_json(indent=1) + "\n")


def _append(path: Path, line: str) -> None:
    with open(path, "a") as handle:
        handle.write(line + "\n")


if __name__ == "__main__":
    main()
