"""A judged program cannot tell T0's run from a witness's: what it observes of its process is the
same in both, and when it is asked apart (a vote, a confirmation), in the function form.

The program below (HumanEval/0, right on every input) records, on its first call in a process,
everything it can observe there: argv, the descriptors and where they lead, the environment, the
working directory and what it holds, /proc, its limits, the seccomp filter and what it refuses,
its standard streams, the namespace it was defined in, the stack it is called from (each frame's
function and file), its signal dispositions, ids, threads and loaded modules. It writes the
record to its standard error, which vouch passes on as the run's. The same program is then run
as T0's deciding run (``t0_spec``), as a witness run in R[s] (``validation_spec``, the test a
generated witness of the task), and asked apart (``apart_spec``): the three records must be
identical, but for what every process has of its own: the run's directory name (``run-<n>``), a
temporary directory's random name, and process ids (the record keeps how many processes it sees
and whether it leads them, not their numbers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest

from vouch.audit import PRELOAD
from vouch.audit.function import _offline, _witness
from vouch.audit.function._runs import t0_spec
from vouch.exec import LocalExecutor, RunResult
from vouch.sources.trials import load_problems

MARK = "OBSERVED "

OBSERVER = """
    import json, os, resource, signal, socket, sys, threading
    if not getattr(has_close_elements, "seen", False):
        has_close_elements.seen = True

        def link(fd):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError as exc:
                return type(exc).__name__
            return target.split(":[")[0]

        def memfd():
            try:
                os.close(os.memfd_create("probe"))
                return "made"
            except OSError as exc:
                return exc.errno

        frames, frame = [], sys._getframe(1)
        while frame is not None:
            frames.append([frame.f_code.co_name, os.path.basename(frame.f_code.co_filename)])
            frame = frame.f_back
        status = {}
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("Seccomp", "Seccomp_filters", "NoNewPrivs", "CapEff", "CapBnd", "Threads"):
                    status[key] = value.strip()
        limits = {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n.startswith("RLIMIT_")}
        handlers = {}
        for signum in signal.valid_signals():
            try:
                handler = signal.getsignal(signum)
            except (OSError, ValueError):
                continue
            handlers[int(signum)] = getattr(handler, "__name__", str(handler))
        record = {
            "argv": sys.argv, "orig_argv": sys.orig_argv, "executable": sys.executable,
            "fds": {fd: link(fd) for fd in sorted(os.listdir("/proc/self/fd"), key=int)},
            "env": dict(os.environ),
            "cwd": os.getcwd(), "listing": sorted(os.listdir(".")),
            "proc": len([p for p in os.listdir("/proc") if p.isdigit()]),
            "limits": limits, "status": status, "memfd": memfd(),
            "stdio": [type(s).__name__ for s in (sys.stdin, sys.stdout, sys.stderr)],
            "stdio_fds": [os.path.exists(f"/proc/self/fd/{fd}") and link(fd) for fd in (0, 1, 2)],
            "name": eval("__name__"), "namespace": sorted(globals()),
            "module": has_close_elements.__module__, "file": has_close_elements.__code__.co_filename,
            "stack": frames, "signals": handlers,
            "ids": [os.getuid(), os.getgid(), os.geteuid(), os.getpid() == 1, os.getppid()],
            "leads": os.getpgrp() == os.getpid(),
            "host": socket.gethostname(), "threads": threading.active_count(),
            "modules": sorted(sys.modules), "path": sys.path, "flags": list(sys.flags),
            "umask": os.umask(0o22),
        }
        os.write(2, ("\\n" + "OBSERVED " + json.dumps(record, sort_keys=True, default=repr) + "\\n").encode())
    for i, a in enumerate(numbers):
        for b in numbers[i + 1:]:
            if abs(a - b) < threshold:
                return True
    return False
"""


@pytest.fixture(scope="module")
def executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(workers=1, preload=PRELOAD) as pool:
        yield pool


def _observed(result: RunResult) -> dict[str, object]:
    lines = [line for line in result.stderr_tail.splitlines() if line.startswith(MARK)]
    assert lines, (result.status, result.reason, result.exception, result.stderr_tail[-2000:])
    # A run's own directory, and a temporary directory's random name, are each process's own.
    text = re.sub(r"run-\d+", "run-<n>", lines[-1].removeprefix(MARK))
    text = re.sub(r"/tmp[a-z0-9_]{8}\b", "/tmp<random>", text)
    record: dict[str, object] = json.loads(text)
    return record


def test_a_program_sees_the_same_process_in_t0s_run_a_witness_run_and_apart(executor: LocalExecutor) -> None:
    problem = load_problems()["HumanEval/0"]
    program = problem.prompt + OBSERVER
    witness = _witness.render(
        trial_id="HumanEval/0#observer",
        task_id=problem.task_id,
        entry_point=problem.entry_point,
        clause="closer to each other than given threshold",
        args=[[1.0, 2.5], 1.0],
        expected=False,
        index=1,
    )
    specs = [
        t0_spec(program, problem, "T0 in R[s]"),
        _witness.validation_spec(witness, program, "R[s]", 0, problem),
        _offline.apart_spec(program, problem, [[[1.0, 2.5], 1.0]], "asked apart"),
    ]
    # The record is longer than a run's usual tail of its output.
    specs = [replace(s, limits=replace(s.limits, output_tail_bytes=1 << 18)) for s in specs]
    t0, witness_run, apart = executor.run_batch(specs)
    assert t0.ok and t0.value["passed"] and not t0.value["failed"], t0.value  # type: ignore[index]
    records = {"T0": _observed(t0), "witness": _observed(witness_run), "apart": _observed(apart)}
    # What a benchmark's harness gives a program: the module it shares with the test.
    assert records["T0"]["name"] == "builtins"
    assert "check" in records["T0"]["namespace"]  # type: ignore[operator]
    assert records["T0"]["stack"][0][0] == "check"  # type: ignore[index]
    assert records["T0"]["listing"] == []
    assert records["T0"]["argv"] == [""]
    for name in ("witness", "apart"):
        differing = sorted(k for k in records["T0"] if records["T0"][k] != records[name].get(k))
        assert not differing, {k: (records["T0"][k], records[name].get(k)) for k in differing}


def test_the_program_is_compiled_as_the_benchmark_compiles_it(executor: LocalExecutor) -> None:
    """No compiler flag of vouch's own reaches the program: an annotation naming what the program
    never imported fails as it fails in plain Python (vouch's modules postpone annotations)."""
    problem = load_problems()["HumanEval/0"]
    body = problem.reference.removeprefix(problem.prompt)
    program = "def has_close_elements(numbers: Lizt[float], threshold: float) -> bool:\n" + body
    result = executor.run(t0_spec(program, problem, "T0 in R[s]"))
    assert result.ok and result.value == {"loaded": False, "load_error": "NameError: name 'Lizt' is not defined"}, (
        result.value
    )
