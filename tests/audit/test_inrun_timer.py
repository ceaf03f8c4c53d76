"""The per-call timer inside the audit's runs (``vouch.audit.function._inrun``).

A timeout raised inside coverage's own code leaves coverage's data lock held (its C tracer takes
the lock through a Python call), and reading the arcs then hangs the run until the engine kills
it: the timer fires again once the program's code runs, never inside coverage.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import coverage
import pytest

from vouch.audit.function import _inrun


def _frame_in(filename: str) -> Any:
    scope: dict[str, Any] = {"sys": sys}
    exec(compile("frame = sys._getframe(0)", filename, "exec"), scope)
    return scope["frame"]


def test_the_timer_never_raises_inside_coverage_and_fires_again_soon() -> None:
    inside = _frame_in(str(Path(coverage.__file__).parent / "collector.py"))
    try:
        _inrun._on_alarm(signal.SIGALRM, inside)
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= _inrun._DEFER_S
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_the_timer_raises_in_the_program_s_code() -> None:
    with pytest.raises(_inrun._CallTimeout):
        _inrun._on_alarm(signal.SIGALRM, _frame_in("solution.py"))
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_timeouts_under_tracing_leave_the_arcs_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Exponential recursion: every call past a small n runs into its timer inside traced code.
    (tmp_path / "solution.py").write_text(
        "def f(n):\n    if n < 2:\n        return n\n    return f(n - 1) + f(n - 2)\n"
    )
    monkeypatch.chdir(tmp_path)
    out = _inrun.outputs("f", [[3], [40], [41], [42], [5]], per_call_s=0.05, budget_s=20.0, arcs=True)
    assert [r.get("error") for r in out["results"]] == [None, "timeout", "timeout", "timeout", None]
    assert out["arcs"]


def test_arcs_per_call_are_each_call_s_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "solution.py").write_text(
        "def f(x):\n    if x > 0:\n        return 1\n    elif x < -5:\n        return 2\n    return 3\n"
    )
    monkeypatch.chdir(tmp_path)
    out = _inrun.outputs("f", [[1], [-10], [0]], arcs_per_call=True)
    assert [r["value"] for r in out["results"]] == [1, 2, 3]
    first, second, third = (set(map(tuple, arcs)) for arcs in out["call_arcs"])
    assert (2, 3) in first and (2, 4) not in first
    assert (4, 5) in second and (4, 6) not in second
    assert (4, 6) in third and (2, 3) not in third
    assert first | second | third <= set(map(tuple, out["arcs"])), "the union is what the calls took together"


def test_a_program_known_to_hang_gives_up_after_its_timeouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "solution.py").write_text(
        "def f(n):\n    if n < 2:\n        return n\n    return f(n - 1) + f(n - 2)\n"
    )
    monkeypatch.chdir(tmp_path)
    out = _inrun.outputs("f", [[40], [3], [41], [42], [5]], per_call_s=0.05, give_up_after=2)
    assert [r.get("error") for r in out["results"]] == ["timeout", None, "timeout", "skipped", "skipped"]


def test_a_call_runs_out_of_cpu_time_not_of_wall_clock_time() -> None:
    """A busy call is stopped by its CPU time; one that only waits, by the wall-clock backstop."""
    import time

    started = time.monotonic()
    with pytest.raises(_inrun._CallTimeout), _inrun._timer(0.2):
        while True:
            pass
    assert time.monotonic() - started < 0.2 * _inrun.WALL_BACKSTOP
    started = time.monotonic()
    with pytest.raises(_inrun._CallTimeout), _inrun._timer(0.05):
        time.sleep(10)
    assert 0.05 * _inrun.WALL_BACKSTOP - 0.01 <= time.monotonic() - started < 5
    assert signal.getitimer(signal.ITIMER_PROF)[0] == 0 and signal.getitimer(signal.ITIMER_REAL)[0] == 0
