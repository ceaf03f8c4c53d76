"""The AgentDojo pool without the model SDKs: what its runs find warm, and what they may still import."""

from __future__ import annotations

from vouch.bench import PRELOAD
from vouch.exec import Call, LocalExecutor, RunSpec

LEAN = "vouch.sources.agentdojo._lean"
PRELOAD_LEAN = [*PRELOAD, f"{LEAN}:install", "vouch.sources.agentdojo._source", "vouch.sources.agentdojo._world:warm"]
PROBE = """
import sys
HEAVY = ("anthropic", "openai", "cohere", "pandas")

def warm():
    return [sorted(name for name in HEAVY if name in sys.modules), "agentdojo.task_suite.task_suite" in sys.modules]

def whole_package():
    import pandas
    from agentdojo.agent_pipeline import AgentPipeline
    return [pandas.__name__, AgentPipeline.__name__, "anthropic" in sys.modules]
"""


def test_the_pool_is_warm_without_the_sdks_and_runs_may_still_import_them():
    with LocalExecutor(workers=1, preload=[*PRELOAD_LEAN, f"{LEAN}:restore"]) as pool:
        warm = pool.run(RunSpec(entry=Call("probe.py:warm"), files={"probe.py": PROBE}))
        assert warm.ok, warm
        assert warm.value == [[], True]  # the suites are warm; no SDK and no pandas
        whole = pool.run(RunSpec(entry=Call("probe.py:whole_package"), files={"probe.py": PROBE}))
        assert whole.ok, whole
        assert whole.value == ["pandas", "AgentPipeline", True]  # the real ones, at the run's own cost
