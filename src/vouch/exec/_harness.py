"""Runs the entry of one run inside its sandbox and writes the result frame.

This is the last trusted code a run executes before the code under test. Everything after
``entry`` starts runs in an interpreter the code under test may have tampered with; that
only lets it misreport its *own* result, which it could do by returning a different value
anyway. Judge and judged never share this process: a verifier that needs to execute a
candidate asks for a separate run.

Before any code but vouch's own runs, the harness tells the pool so on a pipe only it holds
(``judged_code_starts``), then closes it: what the run says afterwards about vouch's own
failure (an import error naming one of vouch's modules) is the judged code's word, and the
pool does not take it as vouch's (``RunResult.judged``, ``vouch.exec.vouch_failure``).
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

from vouch.exec import _frame, _values
from vouch.exec._spec import Call, Script

RESULT_FD = 1000
REPORT_FD = RESULT_FD + 1
"""The write end of the run's report pipe to the pool: a setup failure (``E`` and why) or, once
the sandbox is set up, the mark that judged code may run from now on (``JUDGED``)."""
JUDGED = b"J"
_TRACEBACK_TAIL = 4000
_OWN_PACKAGE = "vouch"

# Bound before the code under test runs, so that rebinding ``os._exit`` or ``os.pwrite``
# from that code does not reach the harness's last steps.
_exit = os._exit
_monotonic = time.monotonic
_pwrite = os.pwrite
_write = os.write
_close = os.close
_ftruncate = os.ftruncate
_encode = _frame.encode
_refusal = _frame.json_refusal
_HEADER_BYTES = _frame.HEADER_BYTES
_MAX_FRAME_BYTES = _frame.MAX_FRAME_BYTES
_to_data = _values.to_data
_BUILTINS = dict(builtins.__dict__)
"""A copy of the builtins as the zygote had them, put back before the frame is written."""


_marked = False


def judged_code_starts() -> None:
    """Tell the pool that code vouch does not vouch for may run in this run from now on.

    The harness says it before anything but vouch's own code runs: before a script, before
    importing a call's target that is not one of vouch's modules, and before calling the
    function of one that is (vouch's in-run entries load the judged program). The pipe it
    writes on is closed at once, so code that runs after cannot take the mark back, nor give
    it: the pool reads it as a fact about the run (``RunResult.judged``), not as the run's word.
    Calling it again is harmless.
    """
    global _marked  # once per process: the pipe is gone after the first call
    if _marked:
        return
    _marked = True
    try:
        _write(REPORT_FD, JUDGED)
        _close(REPORT_FD)
    except OSError:
        pass  # not a run the harness started (no pipe): nobody to tell


def _is_own(target: str) -> bool:
    """Whether a call's target is one of vouch's modules (not a file of the run's)."""
    module = target.rpartition(":")[0]
    return module == _OWN_PACKAGE or module.startswith(_OWN_PACKAGE + ".")


def load_module_file(path: str, name: str | None = None) -> ModuleType:
    """Import a Python file of the run's working directory as a module (``sys.modules[name]``)."""
    path = os.path.abspath(path)
    name = name or os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _load_callable(target: str) -> Callable[..., Any]:
    module_part, sep, function = target.rpartition(":")
    if not sep or not module_part or not function:
        raise ValueError(f"call target {target!r} is not 'file.py:function' or 'package.module:function'")
    is_file = module_part.endswith(".py")
    module = load_module_file(module_part) if is_file else importlib.import_module(module_part)
    fn = getattr(module, function, None)
    if fn is None:
        raise AttributeError(f"{module_part!r} has no attribute {function!r}")
    if not callable(fn):
        raise TypeError(f"{target!r} is not callable")
    return fn  # type: ignore[no-any-return]


def describe_exception(exc: BaseException) -> dict[str, str]:
    """``exc`` as the engine records a run's exception: its type's name, its message and the
    tail of its traceback (a ``SystemExit`` by its exit code)."""
    tail = "".join(traceback.format_exception(exc))[-_TRACEBACK_TAIL:]
    message = str(exc)
    if isinstance(exc, SystemExit):
        message = f"exit code {exc.code!r}"
    return {"type": type(exc).__name__, "message": message[:_TRACEBACK_TAIL], "traceback_tail": tail}


def _exit_status(exc: BaseException) -> int:
    """The status ``python FILE`` would exit with after ``exc``: a SystemExit's own code."""
    if not isinstance(exc, SystemExit):
        return 1
    try:
        code = exc.code
    except BaseException:  # noqa: BLE001 - a SystemExit subclass may make .code raise
        return 1
    if code is None:
        return 0
    if type(code) in (int, bool):
        return int(code) & 0xFF
    return 1


def run_entry(entry: Script | Call, nonce: bytes) -> NoReturn:
    """Run ``entry``, record how it ended, and leave the process."""
    payload: dict[str, Any]
    status = 0
    entered = _monotonic()
    try:
        if isinstance(entry, Script):
            path = os.path.abspath(entry.path)
            sys.argv = [path, *entry.argv]
            sys.path[0:0] = [os.path.dirname(path)]
            judged_code_starts()
            runpy.run_path(path, run_name="__main__")
            payload = {"outcome": "completed", "value": None, "exception": None}
        else:
            sys.argv = [entry.target]
            sys.path[0:0] = [os.getcwd()]
            if not _is_own(entry.target):
                judged_code_starts()
            fn = _load_callable(entry.target)
            # vouch's own entry loaded: what it fails to import from here on may be the judged
            # code's doing (it runs or loads the judged program), so the mark comes first.
            judged_code_starts()
            value = fn(*entry.args, **dict(entry.kwargs))
            payload = {"outcome": "returned", "value": value, "exception": None}
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are outcomes here
        payload = {"outcome": "raised", "value": None, "exception": describe_exception(exc)}
        status = _exit_status(exc)
    ended = _monotonic()
    builtins.__dict__.clear()
    builtins.__dict__.update(_BUILTINS)
    try:
        payload["value"] = _to_data(payload["value"])
        payload["clock"] = [entered, ended]
        frame = _encode(nonce, payload)
    except (TypeError, ValueError, RecursionError) as exc:
        kind = type(payload.get("value")).__name__
        payload = {
            "outcome": "raised",
            "value": None,
            "exception": {
                "type": "ResultNotJSON",
                "message": f"return value of type {kind} is not JSON data: {exc}",
                "traceback_tail": "",
            },
        }
        frame = _encode(nonce, payload)
        status = 1
    size = len(frame) - _HEADER_BYTES
    too_large = (
        f"{size} bytes of JSON, over the {_MAX_FRAME_BYTES} byte cap"
        if size > _MAX_FRAME_BYTES
        else _refusal(frame[_HEADER_BYTES:])
    )
    if too_large is not None:
        # The pool would refuse the record: say why here, where the value is known.
        kind = type(payload.get("value")).__name__
        payload = {
            "outcome": "raised",
            "value": None,
            "exception": {"type": "ResultTooLarge", "message": f"return value of type {kind}: {too_large}"},
        }
        frame = _encode(nonce, payload)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed or broken stream loses only output
            pass
    _ftruncate(RESULT_FD, 0)
    _pwrite(RESULT_FD, frame, 0)
    # A SystemExit exits with its own code, as under ``python FILE``; exit 0 with a raised
    # record (``sys.exit(0)``) is still an error (see _outcome).
    _exit(status)
