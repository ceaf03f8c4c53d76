"""Ray as an executor, against real Ray processes: a head on loopback started here (and a second
node for the two-node tests), stopped at the end whatever happens.

The same real tasks (HumanEval and BFCL builds from the pinned packages) are decided through the
local executor and through Ray, and must get the same decisions; so must ``vouch v4v`` and
``vouch audit humaneval`` run with ``--executor ray``. A node whose pool dies mid-batch costs only
its runs in flight, which go to the other node.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from _samples import write_samples
from _scratch import scratch_root
from vouch.bench import decide_cases, load_tasks, preload_for
from vouch.exec import Call, Limits, LocalExecutor, RunResult, RunSpec, Status, make_executor
from vouch.exec._ray import RayExecutor
from vouch.sources.trials import load_problems

pytestmark = pytest.mark.slow

VOUCH = [sys.executable, "-m", "vouch"]
RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Node:
    """One ``ray start --block`` in a session of its own: SIGTERM stops every process it started."""

    def __init__(self, args: list[str], temp_dir: str) -> None:
        self.log = open(os.path.join(temp_dir, "ray-start.log"), "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [RAY, "start", "--block", "--disable-usage-stats", "--temp-dir", temp_dir, *args],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        try:  # whatever is left of the session (ray start --block reaps its own on SIGTERM)
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        self.log.close()


def _alive_nodes() -> int:
    return sum(1 for n in ray.nodes() if n.get("Alive"))


def _wait_for(what: str, check: Any, timeout_s: float = 120) -> None:
    """Wait for ``check()``: a guard against a Ray that never comes up, not a timing assertion."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def head() -> Iterator[str]:
    """A Ray head on loopback, 2 CPUs, in a temp dir of its own: its address."""
    temp_dir = tempfile.mkdtemp(prefix="vray-", dir="/tmp")  # Ray's socket paths must stay short
    port = _free_port()
    node = _Node(
        [
            "--head",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(port),
            "--num-cpus",
            "2",
            "--include-dashboard=false",
        ],
        temp_dir,
    )
    address = f"127.0.0.1:{port}"

    def answers() -> bool:
        assert node.process.poll() is None, Path(temp_dir, "ray-start.log").read_text()[-3000:]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    try:
        _wait_for("the Ray head answers", answers)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        node.stop()
        subprocess.run(["rm", "-rf", temp_dir], check=False)


@pytest.fixture(scope="module")
def second_node(head: str) -> Iterator[None]:
    """A second Ray node (1 CPU) joined to the head, from the first test that asks for it to the end
    of the module: the tests that use it come last in this file, after those of the head alone.
    Each test makes an executor of its own, with pools of its own on both nodes (the pools a test
    kills are not the node's processes), so one node serves them all."""
    temp_dir = tempfile.mkdtemp(prefix="vray2-", dir="/tmp")
    RayExecutor(address=head).close()  # this process joins the cluster (to count its nodes)
    before = _alive_nodes()
    node = _Node(["--address", head, "--node-ip-address", "127.0.0.1", "--num-cpus", "1"], temp_dir)
    try:
        _wait_for("the second node joins", lambda: _alive_nodes() > before)
        yield
    finally:
        node.stop()
        _wait_for("the second node leaves", lambda: _alive_nodes() == before)
        subprocess.run(["rm", "-rf", temp_dir], check=False)


@pytest.fixture(scope="module")
def task_dir() -> Iterator[Path]:
    """Real tasks: 2 HumanEval (verifiers call the candidate through env.call) and 3 BFCL."""
    root = scratch_root() / f"ray-tasks-{os.getpid()}"
    for source, limit in (("humaneval", "2"), ("bfcl", "3")):
        proc = subprocess.run(
            [*VOUCH, "data", "build", source, "--out", str(root / source), "--limit", limit, "--no-check"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    try:
        yield root
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)


def _decisions(executor: Any, tasks: list[Any]) -> list[tuple[str, str, str, str | None]]:
    items = [(t, c, (t.root / "reference" / "verifier.py").read_text()) for t in tasks for c in t.cases]
    return [
        (t.id, c.id, d.decision.value, d.reason)
        for (t, c, _), d in zip(items, decide_cases(executor, items), strict=True)
    ]


def _observed(result: RunResult) -> dict[str, Any]:
    """What a run's result says, less what differs from pool to pool and run to run: pids, the uid
    block, times, and the address-space limit (the pool's own size plus the headroom: two pools
    of the same options differ by a MB now and then, local or not)."""
    isolation = result.isolation.to_dict()
    del isolation["host_uid"], isolation["address_space_mb"]
    return {
        "status": result.status,
        "reason": result.reason and re.sub(r"\d+\.\d+ s\b", "N s", result.reason),
        "exit_code": result.exit_code,
        "value": result.value,
        "exception": result.exception and (result.exception.type, result.exception.message),
        "stdout": result.stdout_tail,
        "isolation": isolation,
    }


SPECS = [
    RunSpec(entry=Call("v.py:f", args=(3,)), files={"v.py": "def f(x):\n    print('hi')\n    return (x, {x}, b'x')\n"}),
    RunSpec(entry=Call("v.py:f"), files={"v.py": "def f():\n    raise KeyError('nope')\n"}),
    RunSpec(
        entry=Call("v.py:f"),
        files={"v.py": "import time\ndef f():\n    time.sleep(30)\n"},
        limits=Limits(timeout_s=1),
    ),
    RunSpec(entry=Call("v.py:f"), files={"v.py": "def f():\n    return object()\n"}),
]


def test_an_address_that_does_not_answer_is_one_line_and_exit_3(tmp_path: Path) -> None:
    address = f"127.0.0.1:{_free_port()}"  # nothing listens there
    for args in (
        ["v4v", "--tasks", str(tmp_path)],
        ["audit", "humaneval", "--samples", str(tmp_path / "none.jsonl")],
    ):
        proc = subprocess.run(
            [*VOUCH, *args, "--executor", "ray", "--address", address],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,  # a guard against a hang, not a target
        )
        assert proc.returncode == 3, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("vouch: error: no Ray cluster answers at " + address)
        assert not list(tmp_path.iterdir())  # nothing ran, nothing was written


def test_without_ray_installed_the_command_says_how_to_get_it(tmp_path: Path) -> None:
    hide_ray = "import sys; sys.modules['ray'] = None; from vouch.cli import main; main()"  # import ray fails
    proc = subprocess.run(
        [sys.executable, "-c", hide_ray, "v4v", "--tasks", str(tmp_path), "--executor", "ray"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "vouch: error: --executor ray needs Ray; install it with: pip install 'vouch[ray]'"
    ]


@pytest.mark.parametrize(
    ("args", "code", "mentions"),
    [
        (["--executor", "local", "--address", "127.0.0.1:1"], 2, "--address"),
        (["--executor", "ray", "--address", "no-port-here"], 2, "HOST:PORT"),
        (["--executor", "slurm"], 2, "'slurm' is not one of 'local', 'ray'"),
    ],
)
def test_bad_executor_options_are_one_line(tmp_path: Path, args: list[str], code: int, mentions: str) -> None:
    proc = subprocess.run([*VOUCH, "v4v", "--tasks", str(tmp_path), *args], capture_output=True, text=True)
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and mentions in proc.stderr, proc.stderr


def test_runs_and_decisions_match_the_local_executor(head: str, task_dir: Path) -> None:
    tasks = load_tasks(task_dir)
    assert {t.spec.kind for t in tasks} >= {"code", "tool_call"}
    preload = preload_for(tasks)
    with LocalExecutor(preload=preload) as local:
        expected = _decisions(local, tasks)
        expected_runs = [_observed(r) for r in local.run_batch(SPECS)]
    with make_executor("ray", head, preload=preload) as remote:
        assert isinstance(remote, RayExecutor) and len(remote.nodes) == 1
        got = _decisions(remote, tasks)
        got_runs = [_observed(r) for r in remote.run_batch(SPECS)]
    assert got == expected
    assert {d for _, _, d, _ in got} >= {"PASS", "FAIL"}
    for got_run, expected_run in zip(got_runs, expected_runs, strict=True):
        differ = {k: (got_run[k], expected_run[k]) for k in got_run if got_run[k] != expected_run[k]}
        if "isolation" in differ:
            ours, theirs = differ.pop("isolation")
            differ |= {f"isolation.{k}": (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
        assert not differ, differ
    assert [r["status"] for r in got_runs] == [Status.OK, Status.ERROR, Status.TIMEOUT, Status.ERROR]


SERVICE = (
    "from vouch.exec._service import request\n"
    "def f(x):\n"
    "    try:\n"
    "        return request({'x': x})\n"
    "    except Exception as exc:\n"
    "        return 'refused: ' + str(exc)\n"
)


TIMES_TEN = "def g(x):\n    return x * 10\n"


def test_service_requests_reach_the_handler_here_and_nested_runs_do_not_deadlock(head: str) -> None:
    """Every lane busy with a run waiting on its handler, each handler waiting on a nested run."""
    with make_executor("ray", head, workers=1) as remote:

        def handler(request: dict[str, int]) -> dict[str, Any]:
            if request["x"] == 3:
                raise ValueError("not three")
            nested = RunSpec(
                entry=Call("c.py:g", args=(request["x"],)), files={"c.py": "def g(x):\n    return x * 10\n"}
            )
            result = remote.run(RunSpec(entry=nested.entry, files=nested.files, nested=True))
            return {"x": result.value, "set": {request["x"]}}

        specs = [RunSpec(entry=Call("v.py:f", args=(i,)), files={"v.py": SERVICE}, service=True) for i in range(12)]
        results = remote.run_batch(specs, services=[handler] * len(specs))
    assert all(r.ok for r in results), [r.reason for r in results]
    assert results[3].value == "refused: ValueError: not three"
    assert [r.value for i, r in enumerate(results) if i != 3] == [
        {"x": 10 * i, "set": {i}} for i in range(12) if i != 3
    ]


def _audit_rows() -> list[tuple[str, str]]:
    problems = load_problems()
    return [
        ("HumanEval/0", problems["HumanEval/0"].canonical_solution),
        (
            "HumanEval/0",
            "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
            "            if abs(a - b) <= threshold:\n                return True\n    return False\n",
        ),
        ("HumanEval/13", "    if a == 3 and b == 7:\n        return 1\n    return 5\n"),
        ("HumanEval/13", problems["HumanEval/13"].canonical_solution),
    ]


def _cli(args: list[str], cwd: Path) -> dict[str, Any]:
    out = cwd / "out.json"
    proc = subprocess.run(
        [*VOUCH, *args, "--json", str(out), "--store", str(cwd / "store.sqlite"), "--progress", "none"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=900,  # a guard against a hang, not a target
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return dict(json.loads(out.read_text()))


def test_v4v_and_audit_commands_give_the_local_verdicts(head: str, task_dir: Path) -> None:
    runs = scratch_root() / f"ray-cli-{os.getpid()}"
    samples = write_samples(scratch_root() / f"ray-samples-{os.getpid()}.jsonl", _audit_rows())
    v4v = ["v4v", "--tasks", str(task_dir), "--checks", "replay,repeatability,mutation", "--max-mutants", "4"]
    audit = ["audit", "humaneval", "--samples", str(samples)]
    outputs: dict[str, dict[str, Any]] = {}
    try:
        for name, args in (("v4v", v4v), ("audit", audit)):
            for kind in ("local", "ray"):
                cwd = runs / f"{name}-{kind}"
                cwd.mkdir(parents=True)
                extra = ["--executor", "ray", "--address", head] if kind == "ray" else []
                outputs[f"{name}-{kind}"] = _cli([*args, *extra], cwd)
    finally:
        subprocess.run(["rm", "-rf", str(runs), str(samples)], check=False)
    local, remote = outputs["v4v-local"], outputs["v4v-ray"]
    assert remote["tasks"] == local["tasks"] and remote["totals"] == local["totals"]
    assert remote["config"] == local["config"]
    assert remote["stats"]["mutants"] == local["stats"]["mutants"] > 0
    local, remote = outputs["audit-local"], outputs["audit-ray"]

    def verdicts(body: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
        return [(t["trial_id"], t["verdict"], [Path(w["file"]).name for w in t["witnesses"]]) for t in body["trials"]]

    assert verdicts(remote) == verdicts(local)
    assert {v for _, v, _ in verdicts(local)} >= {"sound", "refuted"}
    counts = ("trials", "passing", "refuted", "reward_hack", "sound", "not_passing", "error", "executions")
    assert {k: remote["summary"][k] for k in counts} == {k: local["summary"][k] for k in counts}


def test_two_nodes_each_with_its_pool_give_the_same_decisions(head: str, second_node: None, task_dir: Path) -> None:
    tasks = load_tasks(task_dir)
    preload = preload_for(tasks)
    with LocalExecutor(preload=preload) as local:
        expected = _decisions(local, tasks)
    with make_executor("ray", head, preload=preload) as remote:
        assert isinstance(remote, RayExecutor)
        nodes = remote.nodes
        assert len(nodes) == 2 and sorted(n.pool.workers for n in nodes) == [1, 2]
        assert len({n.pool.pid for n in nodes}) == 2  # a zygote of its own on each node
        got = _decisions(remote, tasks)
        sent = remote.sent_per_node()
    assert got == expected
    assert all(count > 0 for count in sent.values()), sent  # both nodes ran some


SLOW = "import time\ndef f(x):\n    time.sleep(0.4)\n    return x\n"


def test_a_node_lost_mid_batch_costs_only_its_runs_in_flight(head: str, second_node: None) -> None:
    with make_executor("ray", head) as remote:
        assert isinstance(remote, RayExecutor)
        nodes = {n.node_id: n for n in remote.nodes}
        assert len(nodes) == 2
        victim = next(n for n in nodes.values() if n.pool.workers == 1)
        specs = [RunSpec(entry=Call("v.py:f", args=(i,)), files={"v.py": SLOW}) for i in range(40)]
        futures = [remote.submit(spec) for spec in specs]

        def finished_some_and_holds_more() -> bool:
            held = remote.in_flight_per_node().get(victim.node_id, 0)
            return held > 0 and remote.sent_per_node()[victim.node_id] > held

        _wait_for("the second node finished runs and holds more", finished_some_and_holds_more)
        os.kill(victim.actor_pid, signal.SIGKILL)  # the node's pool and every run it had die
        results = [f.result(timeout=600) for f in futures]
        assert [r.value for r in results] == list(range(40))
        assert all(r.ok for r in results), [r.reason for r in results if not r.ok]
        assert [n.node_id for n in remote.nodes] == [n for n in nodes if n != victim.node_id]
        sent = remote.sent_per_node()
    # Runs sent again: those the lost node held when it died, neither none nor all it was sent.
    resent = sum(sent.values()) - len(specs)
    assert 1 <= resent < sent[victim.node_id], sent


SLOWER = "import time\ndef f(x):\n    time.sleep(2)\n    return x\n"


def test_a_run_lost_twice_ends_as_an_error_with_the_reason(head: str, second_node: None) -> None:
    with make_executor("ray", head) as remote:
        assert isinstance(remote, RayExecutor)
        first, second = sorted(remote.nodes, key=lambda n: n.pool.workers)  # the 1-CPU node first
        specs = [RunSpec(entry=Call("v.py:f", args=(i,)), files={"v.py": SLOWER}) for i in range(12)]
        futures = [remote.submit(spec) for spec in specs]
        _wait_for("runs in flight on both nodes", lambda: min(remote.in_flight_per_node().values()) > 0)
        os.kill(first.actor_pid, signal.SIGKILL)
        _wait_for("the lost runs sent to the other node", lambda: sum(remote.sent_per_node().values()) > len(specs))
        os.kill(second.actor_pid, signal.SIGKILL)  # now with runs that were lost once already
        outcomes: list[RunResult | BaseException] = []
        for future in futures:
            try:
                outcomes.append(future.result(timeout=600))
            except Exception as exc:
                outcomes.append(exc)
    twice = [o for o in outcomes if isinstance(o, RunResult) and not o.ok]
    assert twice, outcomes
    for result in twice:
        assert result.status is Status.ERROR and result.reason is not None
        assert "was lost" in result.reason and "retried once already" in result.reason
    stranded = [o for o in outcomes if isinstance(o, BaseException)]
    assert all("no Ray node's pool is left" in str(exc) for exc in stranded), stranded
    assert all(o.value == i for i, o in enumerate(outcomes) if isinstance(o, RunResult) and o.ok)
