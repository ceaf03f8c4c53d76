"""Code that runs *inside* a sandbox while a task set is built: record inputs, compute outputs.

Called through the engine, never in the builder's process:

* ``record_inputs`` runs HumanEval's official ``check`` on the program in ``candidate.py``
  with a recording wrapper around the entry point, and returns every argument tuple the
  official test passed (the test's inputs are valid by construction);
* ``outputs`` calls the entry point of ``candidate.py`` on given inputs, each under its own
  timer, and returns what each call gave.
"""

from __future__ import annotations

import copy
import signal
from types import ModuleType
from typing import Any

from vouch.exec.runside import load_module_file, to_data


class _CallTimeout(Exception):
    pass


def _on_alarm(_signum: int, _frame: Any) -> None:
    raise _CallTimeout


def _load(path: str = "candidate.py") -> ModuleType:
    return load_module_file(path, "candidate")


def _is_data(value: Any) -> bool:
    try:
        to_data(value)
    except (TypeError, RecursionError):
        return False
    return True


def record_inputs(entry_point: str, test_source: str, limit: int = 200) -> list[Any]:
    """Run the official ``check`` on the candidate; return the argument tuples it used."""
    module = _load()
    fn = getattr(module, entry_point)
    recorded: list[Any] = []

    def recorder(*args: Any) -> Any:
        if len(recorded) < limit and _is_data(args):
            recorded.append(copy.deepcopy(list(args)))
        return fn(*args)

    # As HumanEval's own harness does: the test runs in the program's namespace, so helpers the
    # prompt defines (encode_cyclic, poly, ...) are there.
    namespace: dict[str, Any] = dict(vars(module))
    exec(compile(test_source, "test.py", "exec", dont_inherit=True), namespace)  # noqa: S102 - the benchmark's own test, in a sandbox
    namespace["check"](recorder)
    return recorded


def outputs(entry_point: str, inputs: list[list[Any]], per_call_s: float = 1.0) -> list[dict[str, Any]]:
    """Call the entry point on each input (a fresh deep copy), each under its own timer."""
    try:
        module = _load()
        fn = getattr(module, entry_point)
    except BaseException as exc:  # noqa: BLE001 - a program that does not load answers nothing
        return [{"ok": False, "error": f"load: {type(exc).__name__}: {exc}"[:200]} for _ in inputs]
    signal.signal(signal.SIGALRM, _on_alarm)
    results: list[dict[str, Any]] = []
    for index, args in enumerate(inputs):
        if results and results[-1].get("error") == "timeout":
            # One runaway call says enough; the rest would each cost the full timer.
            results.extend({"ok": False, "error": "not run: an earlier call timed out"} for _ in inputs[index:])
            break
        signal.setitimer(signal.ITIMER_REAL, per_call_s)
        try:
            value = fn(*copy.deepcopy(args))
            signal.setitimer(signal.ITIMER_REAL, 0)
            if _is_data(value):
                results.append({"ok": True, "value": value})
            else:
                results.append({"ok": False, "error": f"returned {type(value).__name__}, not data"})
        except _CallTimeout:
            results.append({"ok": False, "error": "timeout"})
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: any failure is an answer
            signal.setitimer(signal.ITIMER_REAL, 0)
            results.append({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:200]})
    return results
