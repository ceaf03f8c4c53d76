"""The input search counts what a trial does under the sandbox's limits where G does not.

An input of the pool is one G answered under the run's memory limit; a trial that raises
``MemoryError`` there (or ``SystemError``, CPython's other out-of-memory error) differs from G
like a trial that raises anything else, and its witness decides whether that holds. Only an
input G itself runs out of memory on is dropped, before any trial runs it.
"""

from __future__ import annotations

from vouch.audit.function._offline import differences, fill_pool
from vouch.audit.function._preconditions import infer

RULES = infer("def fib4(n: int): ...", ["n"], [[5], [8], [10]])


def test_an_input_g_answers_and_the_trial_runs_out_of_memory_on_is_a_difference() -> None:
    pool = fill_pool(RULES, [(1, [40]), (1, [41])], [{"ok": True, "value": 7}, {"ok": True, "value": 9}])
    rows = [{"ok": False, "error": "MemoryError: "}, {"ok": True, "value": 9}]
    (diff,) = differences(pool, rows)
    assert (diff.args, diff.expected, diff.actual) == ([40], 7, "raised MemoryError: ")


def test_an_input_g_runs_out_of_memory_on_is_dropped_before_any_trial_runs_it() -> None:
    pool = fill_pool(RULES, [(1, [40]), (1, [41])], [{"ok": False, "error": "MemoryError: "}, {"ok": True, "value": 9}])
    assert [args for _, args, _ in pool.inputs] == [[41]] and pool.dropped == 1
    assert differences(pool, [{"ok": True, "value": 9}]) == []


def test_a_wrong_value_makes_the_first_witness_then_memory_then_time() -> None:
    pool = fill_pool(RULES, [(1, [n]) for n in (40, 41, 42)], [{"ok": True, "value": v} for v in (7, 9, 4)])
    rows = [{"ok": False, "error": "timeout"}, {"ok": False, "error": "MemoryError: "}, {"ok": True, "value": 5}]
    assert [d.actual for d in differences(pool, rows)] == [5, "raised MemoryError: ", "raised timeout"]
