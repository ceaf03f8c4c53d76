"""PoolSet: a pool per preload set, made on first use; runs go to the pool of their set."""

from __future__ import annotations

import pytest

from vouch.exec import Call, LocalExecutor, PoolSet, RunSpec

PROBE = "import sys\ndef f():\n    return [name for name in ('xml.dom.minidom', 'wave') if name in sys.modules]\n"


def _spec(preload: tuple[str, ...]) -> RunSpec:
    return RunSpec(entry=Call("probe.py:f"), files={"probe.py": PROBE}, preload=preload)


def test_runs_go_to_the_pool_warmed_with_their_preload_set():
    made: list[tuple[str, ...]] = []

    def make(preload: tuple[str, ...]) -> LocalExecutor:
        made.append(preload)
        return LocalExecutor(workers=1, preload=preload, warm_pytest=False)

    with PoolSet(make) as pools:
        results = pools.run_batch(
            [_spec(("xml.dom.minidom",)), _spec(()), _spec(("wave",)), _spec(("xml.dom.minidom",))]
        )
        assert [r.value for r in results] == [["xml.dom.minidom"], [], ["wave"], ["xml.dom.minidom"]]
        assert sorted(made) == [(), ("wave",), ("xml.dom.minidom",)]  # one pool per set, each made once
        pids = {key: pool.info.pid for key, pool in pools.pools.items()}  # type: ignore[attr-defined]
        assert len(set(pids.values())) == 3
    with pytest.raises(RuntimeError, match="closed"):
        pools.submit(_spec(()))
