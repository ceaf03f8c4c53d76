"""AgentDojo's DeepDiff partials remember their results by content (``RememberedDiff``): the
mutants of a C6 run each diff the same two states, and only the first computes the diff."""

from __future__ import annotations

import sys

from vouch.sources.agentdojo import _world as world
from vouch.sources.agentdojo._source import replay_environments


def _states(user_task: str, calls: list) -> tuple:
    return replay_environments(calls, suite="workspace", version="v1.2.2", user_task=user_task)


def test_remembered_diffs_equal_the_package_diffs_and_are_computed_once():
    world.warm()
    module = sys.modules["agentdojo.default_suites.v1.workspace.task_suite"]
    remembered = module.WorkspaceDeepDiff
    assert isinstance(remembered, world.RememberedDiff)
    # Every loaded user-task module uses the remembering partial.
    users = sys.modules["agentdojo.default_suites.v1_2.workspace.user_tasks"]
    assert users.WorkspaceDeepDiff is remembered
    calls = [{"function": "delete_file", "args": {"file_id": "13"}}]
    pre, post = _states("user_task_35", calls)
    before = remembered.computed
    first = remembered(pre, post)
    assert first == remembered.diff(pre, post)
    assert first  # the file is gone: the diff is not empty
    # Fresh objects with the same content: the remembered diff, as a copy of its own.
    pre2, post2 = _states("user_task_35", calls)
    second = remembered(pre2, post2)
    assert remembered.computed == before + 1
    assert second == first and second is not first
    second.clear()  # a check that changes its diff changes nothing the next one sees
    assert remembered(pre2, post2) == first
    # Other content is diffed anew.
    assert remembered(pre, pre) == remembered.diff(pre, pre)
    assert remembered.computed == before + 2
