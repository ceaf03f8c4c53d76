"""Run-side helper: another interpreter (an environment's venv) started INSIDE an engine run.

The engine's pool runs vouch's own Python; a world of a real repository needs the Python and
packages of its environment. A run whose entry is ``vouch.worlds._foreign:run_inrun`` starts
that interpreter as a child of the run, so it inherits everything the engine gave the run
(namespaces with no network, the unprivileged uid, rlimits, the read-only root, the private
/tmp, the kill of the whole tree on timeout) and adds nothing. In it, one function of
``vouch/worlds/_inrun.py`` runs (loaded by path: the venv has no vouch installed), and its JSON
result comes back through a file in the run's private working directory, with the child's
output (the test log the harness would read).

Nothing here runs in the judge's process; what it returns is the run's claim, read outside.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from typing import Any

from vouch.worlds._services import running

_BOOT = """
import importlib.util, json, os, sys
sys.path[1:1] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
spec = importlib.util.spec_from_file_location("vouch_inrun", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with open(sys.argv[3]) as handle:
    kwargs = json.load(handle)
result = getattr(module, sys.argv[2])(**kwargs)
with open(sys.argv[4], "w") as handle:
    json.dump(result, handle)
"""
_MAX_LOG = 4 * 2**20
"""The most of the child's output carried back (its end: pytest's summary is last)."""
_INRUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_inrun.py")


def run_inrun(
    python: str,
    function: str,
    kwargs: dict[str, Any],
    env: dict[str, str],
    timeout_s: float,
    writable: bool = False,
    services: list[str] | None = None,
) -> dict[str, Any]:
    """Call ``_inrun.<function>(**kwargs)`` under ``python``; return its result and output.

    Args:
        python: The environment's interpreter.
        function: ``run_tests`` or ``call_functions``.
        kwargs: Its keyword arguments (JSON data).
        env: The environment's variables (``Environment.run_env``), added to the run's own.
        timeout_s: The child is killed (its whole group) after this; the run's own limit is
            longer, so the outcome still comes back.
        writable: Run in a copy of the world (``kwargs["root"]``) inside the run's private
            working directory, as the harness's container gives its tests a writable checkout
            (pylint's tests write modules and ``.dot`` files into the repository). Paths in the
            result and the log name the world, not the copy.
        services: Local services started on the run's loopback for the child's lifetime, the
            child pointed at them (``vouch.worlds._services``: ``httpbin``).

    Returns:
        ``{"exit_code", "log", "duration_s", "result" (the function's value or None),
        "timed_out"}``.
    """
    workdir = os.getcwd()
    root = kwargs.get("root")
    copy = None
    if writable and isinstance(root, str) and os.path.isdir(root):
        copy = os.path.join(workdir, "world")
        shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        kwargs = kwargs | {"root": copy}
        env = {k: v.replace(root, copy) for k, v in env.items()}
    args_file = os.path.join(workdir, ".vouch-foreign-args.json")
    result_file = os.path.join(workdir, ".vouch-foreign-result.json")
    with open(args_file, "w") as handle:
        json.dump(kwargs, handle)
    if os.path.exists(result_file):
        os.unlink(result_file)
    child_env = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TZ")}
    child_env.update({"HOME": workdir, "TMPDIR": "/tmp", "LANG": child_env.get("LANG", "C.UTF-8")})  # noqa: S108
    child_env.update(env)
    started = time.monotonic()
    timed_out = False
    log_path = os.path.join(workdir, ".vouch-foreign-log.txt")
    with open(log_path, "wb") as log, running(services or []) as served:
        child_env.update(served)
        child = subprocess.Popen(
            # -E -s: the world's import root joins sys.path only once site has run, so a
            # sitecustomize or usercustomize a patch adds there is not imported at start-up
            # (the variables still reach the tests' own subprocesses).
            [python, "-E", "-s", "-c", _BOOT, _INRUN, function, args_file, result_file],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            cwd=workdir,
            start_new_session=True,
        )
        try:
            code = child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(child.pid, signal.SIGKILL)
            code = child.wait()
    size = os.path.getsize(log_path)
    with open(log_path, "rb") as handle:
        if size > _MAX_LOG:
            handle.seek(size - _MAX_LOG)
        text = handle.read().decode("utf-8", errors="replace")
    result = None
    if os.path.exists(result_file):
        try:
            with open(result_file) as handle:
                result = json.load(handle)
        except ValueError:
            result = None
    if copy is not None:
        text = text.replace(copy, str(root))
        if result is not None:
            result = json.loads(json.dumps(result).replace(json.dumps(copy)[1:-1], json.dumps(root)[1:-1]))
    return {
        "exit_code": code,
        "log": text,
        "duration_s": round(time.monotonic() - started, 3),
        "result": result,
        "timed_out": timed_out,
    }
