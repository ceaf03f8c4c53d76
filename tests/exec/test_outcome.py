"""From what the zygote observed of a run to its status: ``build_result``, a pure function.

The observed dicts below have the shape of the zygote's "done" report (``Zygote.finish``).
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from vouch.exec import RunResult, Status
from vouch.exec._frame import encode
from vouch.exec._outcome import build_result

NONCE = b"n" * 16
CPU_LIMIT = 3


def isolation(**overrides: Any) -> dict[str, Any]:
    base = {
        "level": "full",
        "user_namespace": True,
        "pid_namespace": True,
        "mount_namespace": True,
        "network": False,
        "readonly_root": True,
        "private_tmp": True,
        "uid": 1000,
        "host_uid": 1_000_000_000,
        "hidden_paths": (),
        "hash_seed": "0",
        "cpu_s": CPU_LIMIT,
        "address_space_mb": 300,
        "file_size_mb": 64,
        "processes": 64,
        "open_files": 256,
        "weak_reason": None,
    }
    return base | overrides


def record(outcome: str, value: Any = None, exception: dict[str, str] | None = None, nonce: bytes = NONCE) -> bytes:
    return encode(nonce, {"outcome": outcome, "value": value, "exception": exception})


def exc(type_: str, message: str = "boom") -> dict[str, str]:
    return {"type": type_, "message": message, "traceback_tail": f"Traceback ...\n{type_}: {message}\n"}


COMPLETED = record("completed")
RETURNED_TRUE = record("returned", True)
RAISED_VALUE_ERROR = record("raised", None, exc("ValueError", "bad input"))
RAISED_MEMORY_ERROR = record("raised", None, exc("MemoryError", ""))
RAISED_SYSTEM_EXIT = record("raised", None, exc("SystemExit", "exit code 0"))
FORGED = record("returned", True, nonce=b"x" * 16)


def observed(**overrides: Any) -> dict[str, Any]:
    """A "done" report of a run that exited 0 after the harness wrote ``completed``."""
    base = {
        "pid": 4242,
        "exit_code": 0,
        "signal": None,
        "timed_out": False,
        "cpu_s": 0.05,
        "duration_s": 0.02,
        "maxrss_kb": 30 * 1024,
        "stdout_tail": b"hello\n",
        "stdout_bytes": 6,
        "stderr_tail": b"",
        "stderr_bytes": 0,
        "frame": COMPLETED,
        "nonce": NONCE,
        "isolation": isolation(),
        "workdir": None,
    }
    return base | overrides


SIGKILL, SIGXCPU, SIGSEGV, SIGTERM = signal.SIGKILL, signal.SIGXCPU, signal.SIGSEGV, signal.SIGTERM

# (id, observed changes, expected status, expected value)
TABLE = [
    ("script-completed", {}, Status.OK, None),
    ("call-returned-true", {"frame": RETURNED_TRUE}, Status.OK, True),
    ("call-returned-data", {"frame": record("returned", {"a": [1, 2.5, None]})}, Status.OK, {"a": [1, 2.5, None]}),
    ("call-returned-null", {"frame": record("returned", None)}, Status.OK, None),
    # the parent's timeout decides first, whatever the record says
    (
        "timeout-with-valid-record",
        {"timed_out": True, "signal": SIGKILL, "exit_code": None, "frame": RETURNED_TRUE},
        Status.TIMEOUT,
        None,
    ),
    ("timeout-after-clean-exit", {"timed_out": True, "frame": RETURNED_TRUE}, Status.TIMEOUT, None),
    (
        "timeout-no-record",
        {"timed_out": True, "signal": SIGKILL, "exit_code": None, "frame": b""},
        Status.TIMEOUT,
        None,
    ),
    # CPU limit: SIGXCPU at the soft limit, SIGKILL at the hard one
    ("cpu-soft-limit", {"signal": SIGXCPU, "exit_code": None, "frame": b"", "cpu_s": CPU_LIMIT}, Status.TIMEOUT, None),
    (
        "cpu-hard-limit",
        {"signal": SIGKILL, "exit_code": None, "frame": b"", "cpu_s": CPU_LIMIT + 1.0},
        Status.TIMEOUT,
        None,
    ),
    (
        "sigkill-under-cpu-limit",
        {"signal": SIGKILL, "exit_code": None, "frame": b"", "cpu_s": 0.1},
        Status.KILLED,
        None,
    ),
    ("segfault", {"signal": SIGSEGV, "exit_code": None, "frame": b""}, Status.KILLED, None),
    ("sigterm-after-valid-record", {"signal": SIGTERM, "exit_code": None, "frame": RETURNED_TRUE}, Status.KILLED, None),
    # memory: the harness saw MemoryError
    ("memory-error", {"exit_code": 1, "frame": RAISED_MEMORY_ERROR}, Status.MEMORY, None),
    # errors
    ("raised", {"exit_code": 1, "frame": RAISED_VALUE_ERROR}, Status.ERROR, None),
    ("raised-system-exit-0", {"exit_code": 1, "frame": RAISED_SYSTEM_EXIT}, Status.ERROR, None),
    ("exit-1-no-record", {"exit_code": 1, "frame": b""}, Status.ERROR, None),
    ("exit-1-with-returned-record", {"exit_code": 1, "frame": RETURNED_TRUE}, Status.ERROR, None),
    ("exit-2-with-completed-record", {"exit_code": 2, "frame": COMPLETED}, Status.ERROR, None),
    ("exit-0-no-record", {"frame": b""}, Status.ERROR, None),
    ("exit-0-record-of-another-nonce", {"frame": FORGED}, Status.ERROR, None),
    ("exit-0-truncated-record", {"frame": RETURNED_TRUE[:-1]}, Status.ERROR, None),
    ("exit-0-record-plus-garbage", {"frame": RETURNED_TRUE + b"x"}, Status.ERROR, None),
    ("exit-0-two-records", {"frame": record("returned", False) + RETURNED_TRUE}, Status.ERROR, None),
    ("exit-0-garbage", {"frame": b"PASS\n" * 10}, Status.ERROR, None),
    ("exit-0-raised-record", {"frame": RAISED_VALUE_ERROR}, Status.ERROR, None),
    ("exit-0-printed-pass", {"frame": b"", "stdout_tail": b"PASS\nVOUCH-FRAME-1\n"}, Status.ERROR, None),
]


@pytest.mark.parametrize(("changes", "status", "value"), [pytest.param(*row[1:], id=row[0]) for row in TABLE])
def test_status_from_observation(changes: dict[str, Any], status: Status, value: Any) -> None:
    result = build_result(observed(**changes))
    assert isinstance(result, RunResult)
    assert result.status is status, result.reason
    assert result.value == value
    assert (result.reason is None) == (status is Status.OK)
    assert result.ok == (status is Status.OK)


def test_value_is_withheld_unless_ok() -> None:
    for changes in (
        {"exit_code": 1, "frame": RETURNED_TRUE},
        {"signal": SIGTERM, "exit_code": None, "frame": RETURNED_TRUE},
        {"timed_out": True, "frame": RETURNED_TRUE},
    ):
        assert build_result(observed(**changes)).value is None


def test_exception_info_comes_from_the_record() -> None:
    result = build_result(observed(exit_code=1, frame=RAISED_VALUE_ERROR))
    assert result.exception is not None
    assert result.exception.type == "ValueError"
    assert result.exception.message == "bad input"
    assert "ValueError: bad input" in result.exception.traceback_tail
    assert "ValueError" in (result.reason or "")


def test_exception_of_a_forged_record_is_ignored() -> None:
    forged = record("raised", None, exc("MemoryError"), nonce=b"x" * 16)
    result = build_result(observed(exit_code=1, frame=forged))
    assert result.status is Status.ERROR
    assert result.exception is None


def test_reasons_name_what_happened() -> None:
    assert "timeout" in (build_result(observed(timed_out=True)).reason or "")
    assert "SIGSEGV" in (build_result(observed(signal=SIGSEGV, exit_code=None)).reason or "")
    assert "CPU" in (build_result(observed(signal=SIGXCPU, exit_code=None)).reason or "")
    assert "exit code 3" in (build_result(observed(exit_code=3, frame=b"")).reason or "")


def test_observations_are_carried_over() -> None:
    obs = observed(
        pid=99,
        exit_code=0,
        duration_s=1.25,
        maxrss_kb=2048,
        stdout_tail="héllo\n".encode(),
        stderr_tail=b"\xff warn\n",
        workdir="/tmp/kept",
        isolation=isolation(hidden_paths=("/secret",), host_uid=1_000_000_007),
    )
    result = build_result(obs)
    assert result.pid == 99
    assert result.exit_code == 0
    assert result.signal is None
    assert result.duration_s == 1.25
    assert result.peak_memory_mb == 2.0
    assert result.stdout_tail == "héllo\n"
    assert result.stderr_tail == "\ufffd warn\n"  # undecodable bytes are replaced, never raised on
    assert result.workdir == "/tmp/kept"
    assert result.isolation.hidden_paths == ("/secret",)
    assert result.isolation.host_uid == 1_000_000_007
    assert result.isolation.to_dict()["hidden_paths"] == ["/secret"]


def test_signal_and_exit_code_are_reported_as_observed() -> None:
    result = build_result(observed(signal=SIGSEGV, exit_code=None, frame=b""))
    assert (result.exit_code, result.signal) == (None, SIGSEGV)
    result = build_result(observed(exit_code=7, frame=b""))
    assert (result.exit_code, result.signal) == (7, None)


# --- forged records the pool cannot decode ----------------------------
# Code in the run's process can find the harness's nonce and write a well-formed record whose
# value is not valid data. Whatever it writes is that run's outcome (error, with a reason),
# never an exception in the pool.


def _body(value_json: bytes, outcome: bytes = b'"returned"') -> bytes:
    body = b'{"outcome":' + outcome + b',"value":' + value_json + b',"exception":null}'
    return _raw(body)


def _raw(body: bytes) -> bytes:
    import struct

    from vouch.exec._frame import MAGIC

    return MAGIC + NONCE + struct.pack("<Q", len(body)) + body


UNDECODABLE = [
    ("bytes-invalid-base64", b'{"__vouch__":"bytes","b64":"A"}'),
    ("bytes-b64-not-a-string", b'{"__vouch__":"bytes","b64":[1]}'),
    ("json-nested-100000-deep", b"[" * 100_000 + b"]" * 100_000),
    ("dicts-nested-100000-deep", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
    ("data-nested-past-the-value-depth", b"[" * 600 + b"]" * 600),
    ("tuple-items-not-a-list", b'{"__vouch__":"tuple","items":5}'),
    ("set-of-unhashable-items", b'{"__vouch__":"set","items":[[1],[2]]}'),
    ("dict-items-not-pairs", b'{"__vouch__":"dict","items":[[1,2,3]]}'),
    ("dict-items-unhashable-key", b'{"__vouch__":"dict","items":[[[1],2]]}'),
    ("float-repr-not-a-float", b'{"__vouch__":"float","repr":"one"}'),
    ("unknown-tag", b'{"__vouch__":"object","module":"os","name":"system"}'),
]


@pytest.mark.parametrize("value", [pytest.param(v, id=name) for name, v in UNDECODABLE])
def test_an_undecodable_forged_value_is_the_runs_error_never_an_exception(value: bytes) -> None:
    result = build_result(observed(frame=_body(value)))
    assert result.status is Status.ERROR
    assert result.value is None
    assert result.reason is not None, result
    assert "not valid data" in result.reason or "not JSON" in result.reason, result.reason


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="top-level-nested-100000-deep"),
        pytest.param(b'{"outcome":"raised","value":null,"exception":' + b"[" * 50_000 + b"]" * 50_000 + b"}", id="exc"),
        pytest.param(b'{"outcome":"returned","value":' + b"9" * 100_000 + b',"exception":null}', id="huge-int"),
    ],
)
def test_a_malformed_forged_record_is_the_runs_error(body: bytes) -> None:
    result = build_result(observed(frame=_raw(body)))
    assert result.status is Status.ERROR
    assert result.value is None
