"""The repository form's per-trial audit with a pool whose pytest plugins are warm, against one
whose runs import them each time.

A repository's tests run in vouch's own interpreter (no ``--environments``) with that
interpreter's pytest plugins, found by entry point and imported inside ``pytest.main``. The naive
pool (``SWE_PRELOAD`` without ``vouch.worlds._inrun:warm``) pays for those imports in every run;
the warm pool imports them once, before it forks any run. Both audit the bundled fixtures
(3 instances, 12 trials) from an empty world cache with the same config, and must give the same
verdicts.

    .venv/bin/python benchmarks/bench_swe_warm_pool.py [--mutants 4]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from vouch.audit.repository._audit import SWE_PRELOAD, SweAuditConfig, audit_swe
from vouch.exec import LocalExecutor, visible_in_runs
from vouch.swebench._instances import (
    FIXTURES,
    fixture_files,
    load_instances,
    load_predictions,
    materialise_fixture_repo,
)
from vouch.worlds import WorldCache

_WARM = "vouch.worlds._inrun:warm"


def _audit(preload: tuple[str, ...], root: Path, mutants: int) -> tuple[float, dict[str, str], dict[str, int]]:
    for name in FIXTURES:
        materialise_fixture_repo(name, root / "repos" / name)
    instances = load_instances(fixture_files()[0])
    trials = load_predictions(fixture_files()[1], instances)
    config = SweAuditConfig(repo_root=root / "repos", mutants=mutants)
    start = time.perf_counter()
    with LocalExecutor(workers=2, preload=preload) as executor:
        results = audit_swe(instances, trials, executor=executor, cache=WorldCache(root / "worlds"), config=config)
    wall = time.perf_counter() - start
    return wall, {t.trial_id: t.verdict.value for t in results.trials}, dict(results.config["stage_runs"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=4)
    args = parser.parse_args()
    base = Path.cwd() / ".vouch" / "bench"  # where the command's own world cache goes by default
    base.mkdir(parents=True, exist_ok=True)
    if (why := visible_in_runs(base)) is not None:
        raise SystemExit(f"bench_swe_warm_pool: runs cannot read the scratch directory: {why}")
    naive_preload = tuple(p for p in SWE_PRELOAD if p != _WARM)
    figures = {}
    for name, preload in (("naive (plugins imported per run)", naive_preload), ("warm pool", SWE_PRELOAD)):
        root = Path(tempfile.mkdtemp(prefix="vouch-swe-warm-", dir=base))
        root.chmod(0o755)  # runs (another uid) read the worlds in it
        try:
            figures[name] = _audit(preload, root, args.mutants)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        wall, _, runs = figures[name]
        print(f"{name:34s} {wall:7.1f} s wall, {sum(runs.values())} runs")
    (naive, naive_verdicts, _), (warm, warm_verdicts, _) = figures.values()
    same = "same verdicts" if naive_verdicts == warm_verdicts else "VERDICTS DIFFER"
    print(f"ratio (naive / warm): {naive / warm:.1f}x; {same}")


if __name__ == "__main__":
    main()
