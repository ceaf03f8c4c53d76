"""`vouch v4v` as a user runs it: bad tasks are reported as failing, the run goes on."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from vouch.core import Case, Provenance, SourceInfo, TaskFiles, TaskSpec, content_hash, write_task

VOUCH = [sys.executable, "-m", "vouch"]
GOOD = "def verify(c, env):\n    return [x['args'].get('city') for x in c['calls']] == ['Paris']\n"


def _case(case_id, label, category, sub, city):
    candidate = {"calls": [{"function": "get_weather", "args": {"city": city}}], "final_answer": None}
    construction, derived = ("gold", None) if category == "gold" else ("wrong-city", "gold")
    provenance = Provenance(construction=construction, derived_from=derived, content_hash=content_hash(candidate))
    return Case(
        id=case_id,
        label=label,
        category=category,
        subcategory=sub,
        candidate=candidate,
        provenance=provenance,
        rationale="test",
    )


CASES = [
    _case("gold", "positive", "gold", "gold", "Paris"),
    _case("err1", "negative", "error", "wrong_value", "London"),
    _case("err2", "negative", "error", "wrong_value", "Rome"),
]


def _write(root, task_id, verifier, cases=CASES):
    spec = TaskSpec(id=task_id, kind="tool_call", source=SourceInfo(benchmark="test", version="0", original_id=task_id))
    write_task(
        root, TaskFiles(spec=spec, instruction="Weather in Paris.", reference={"verifier.py": verifier}, cases=cases)
    )


@pytest.mark.slow
def test_bad_tasks_fail_with_their_reason_and_the_rest_is_screened(visible_tmp):
    tasks = visible_tmp / "tasks"
    _write(tasks, "good", GOOD)
    _write(tasks, "no-import", "import no_such_module_anywhere\n" + GOOD)
    _write(tasks, "no-cases", GOOD, cases=[])
    _write(tasks, "bad-case", GOOD)
    (tasks / "bad-case" / "cases" / "err1.json").write_text("{not json")
    out = visible_tmp / "v4v.json"
    proc = subprocess.run(
        [*VOUCH, "v4v", "--tasks", str(tasks), "--json", str(out), "--checks", "replay,provenance,label_consistency"],
        capture_output=True,
        text=True,
        cwd=visible_tmp,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {row["task_id"]: row for row in json.loads(out.read_text())["tasks"]}
    assert set(rows) == {"good", "no-import", "no-cases", "bad-case"}
    assert rows["good"]["retained"], {k: v["reason"] for k, v in rows["good"]["checks"].items()}
    assert not rows["no-import"]["checks"]["replay"]["passed"]  # every decision INVALID: no module
    assert rows["no-cases"]["checks"]["replay"]["reason"] == "the task has no cases"
    reason = rows["bad-case"]["checks"]["provenance"]["reason"]
    assert reason.startswith("the task does not load:") and "err1.json" in reason
    html = visible_tmp / "v4v.html"
    report = subprocess.run([*VOUCH, "report", str(out), "--html", str(html)], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert "bad-case" in html.read_text()


SLOW = (
    "import time\n\n"
    "def verify(c, env):\n    time.sleep(0.2)\n    return [x['args'].get('city') for x in c['calls']] == ['Paris']\n"
)


@pytest.mark.slow
def test_sigkill_halfway_then_resume_stores_each_judgement_exactly_once(visible_tmp):
    """SIGKILL of ``vouch v4v`` mid-run: the same command resumes from the store, every
    (verifier, case) decision is stored once, and the result is the uninterrupted run's."""
    tasks = visible_tmp / "tasks"
    for n in range(6):
        _write(tasks, f"t{n}", SLOW)
    store = visible_tmp / "store.sqlite"
    args = [*VOUCH, "v4v", "--tasks", str(tasks), "--checks", "replay,mutation", "--max-mutants", "4"]
    proc = subprocess.Popen(
        [*args, "--store", str(store)],
        cwd=visible_tmp,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.3)
        stored = _decisions(store)
        if stored >= 4:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert stored >= 4, "the run stored nothing before it was killed"
    resumed = visible_tmp / "resumed.json"
    done = subprocess.run(
        [*args, "--store", str(store), "--json", str(resumed)],
        cwd=visible_tmp,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT verifier_hash, case_key, COUNT(*) FROM decisions GROUP BY 1, 2").fetchall()
    assert rows and all(n == 1 for *_, n in rows)
    clean = visible_tmp / "clean.json"
    fresh = subprocess.run(
        [*args, "--store", str(visible_tmp / "fresh.sqlite"), "--json", str(clean)],
        cwd=visible_tmp,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert len(rows) == _decisions(visible_tmp / "fresh.sqlite")

    def checks(path):
        return {
            t["task_id"]: {k: v["passed"] for k, v in t["checks"].items()}
            for t in json.loads(path.read_text())["tasks"]
        }

    assert checks(resumed) == checks(clean)


def _decisions(store):
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store) as db:
            return db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
