"""Entries that run INSIDE an engine run: pytest with branch coverage, call recording, calls.

Called through the engine, never in the judge's process, e.g.
``Call("vouch.worlds._inrun:run_tests", args=(argv,), kwargs={"cover": [...], "root": world})``.
Everything returned is JSON data; the code under test shares this process, so what comes back
is the run's claim (docs/design.md, "What a run can forge"), read by trusted code outside.

A world directory is read-only inside a run: nothing here writes into it (no bytecode, no
pytest cache, coverage data kept in memory).
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

_MAX_MESSAGE = 400
_MAX_CALLS_PER_FUNCTION = 25
_MAX_REPR = 2000
_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def _enter(root: str | None, on_path: bool = True) -> str:
    """chdir into ``root`` (default: the run's workdir) and put it first on sys.path."""
    sys.dont_write_bytecode = True
    where = os.path.abspath(root) if root else os.getcwd()
    os.chdir(where)
    if not on_path:
        return where
    if where in sys.path:
        sys.path.remove(where)
    sys.path.insert(0, where)
    return where


class _OverlayLoader(importlib.abc.SourceLoader):
    """Serves replacement source for one module file (a mutant), without touching the disk."""

    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.source = source

    def get_filename(self, fullname: str) -> str:
        return self.path

    def get_data(self, path: str) -> bytes:
        if os.path.realpath(path) == os.path.realpath(self.path):
            return self.source.encode("utf-8")
        with open(path, "rb") as handle:
            return handle.read()


class _OverlayFinder(importlib.abc.MetaPathFinder):
    """Finds modules as usual, then swaps in an overlay's source for the files it replaces."""

    def __init__(self, overlay: dict[str, str]) -> None:
        self.overlay = overlay

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin:
            return None
        source = self.overlay.get(os.path.realpath(spec.origin))
        if source is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            spec.origin,
            loader=_OverlayLoader(spec.origin, source),
            submodule_search_locations=spec.submodule_search_locations,
        )


def _literal(value: Any) -> str | None:
    """``repr(value)`` when it reads back as an equal value of the same type, else None."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ of the code under test
        return None
    if len(text) > _MAX_REPR:
        return None
    try:
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return text if type(back) is type(value) and back == value else None


class _Recorder:
    """A profile hook recording the literal arguments of calls to chosen functions."""

    def __init__(self, targets: Sequence[str], root: str) -> None:
        self.wanted: dict[tuple[str, str], str] = {}
        for target in targets:
            file, _, qualname = target.partition("::")
            self.wanted[(os.path.realpath(os.path.join(root, file)), qualname)] = target
        self.calls: dict[str, list[dict[str, Any]]] = {t: [] for t in targets}
        self.seen: set[tuple[str, str]] = set()
        self.skipped: dict[str, int] = {t: 0 for t in targets}
        self.real: dict[str, str] = {}
        self.files = {file for file, _ in self.wanted}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        real = self.real.get(code.co_filename)
        if real is None:  # realpath costs syscalls, and this runs on every call of the process
            real = self.real[code.co_filename] = os.path.realpath(code.co_filename)
        if real not in self.files:
            return
        # co_qualname is new in 3.11; an environment's older interpreter has only co_name.
        key = (real, getattr(code, "co_qualname", code.co_name))
        target = self.wanted.get(key)
        if target is None:
            return
        self._record(target, frame)

    def _record(self, target: str, frame: FrameType) -> None:
        code = frame.f_code
        names = code.co_varnames
        positional = code.co_argcount
        kwonly = code.co_kwonlyargcount
        local = frame.f_locals
        args: list[str] = []
        kwargs: dict[str, str] = {}
        for index, name in enumerate(names[: positional + kwonly]):
            text = _literal(local.get(name))
            if text is None:
                self.skipped[target] += 1
                return
            if index < positional:
                args.append(text)
            else:
                kwargs[name] = text
        if code.co_flags & 0x04:  # CO_VARARGS
            extra = local.get(names[positional + kwonly], ())
            for value in extra:
                text = _literal(value)
                if text is None:
                    self.skipped[target] += 1
                    return
                args.append(text)
        record = {"args": args, "kwargs": kwargs}
        fingerprint = (target, repr(record))
        if fingerprint in self.seen or len(self.calls[target]) >= _MAX_CALLS_PER_FUNCTION:
            return
        self.seen.add(fingerprint)
        self.calls[target].append(record)


def _make_collector() -> Any:
    """The engine's pytest collector (``vouch/exec/_pytest.py``), loaded by path: under an
    environment's own Python this module runs without vouch installed."""
    module = sys.modules.get("vouch.exec._pytest") or sys.modules.get("vouch_pytest_collector")
    if module is None:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(os.path.dirname(here), "exec", "_pytest.py")
        spec = importlib.util.spec_from_file_location("vouch_pytest_collector", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["vouch_pytest_collector"] = module
        spec.loader.exec_module(module)
    return module.make_collector()


def _coverage_of(cov: Any, files: Sequence[str]) -> dict[str, Any]:
    """Executed lines and arcs, plus every possible branch arc, of each measured file."""
    data = cov.get_data()
    out: dict[str, Any] = {}
    for file in files:
        measured = data.lines(file) or []
        arcs = data.arcs(file) or []
        entry: dict[str, Any] = {
            "executed_lines": sorted(measured),
            "executed_arcs": sorted([a, b] for a, b in arcs),
            "branch_arcs": {},
            "statements": [],
        }
        try:
            analysis = cov._analyze(file)
            entry["statements"] = sorted(analysis.statements)
            entry["branch_arcs"] = _branch_arcs(analysis)
        except Exception as exc:  # noqa: BLE001 - a file that is not Python: say so, keep the rest
            entry["analysis_error"] = f"{type(exc).__name__}: {exc}"[:_MAX_MESSAGE]
        out[file] = entry
    return out


def _branch_arcs(analysis: Any) -> dict[str, list[int]]:
    """Line of each branching statement -> every line it can jump to (negative: function exit)."""
    found: dict[str, list[int]] = {}
    branch_lines = {line for line, count in analysis.exit_counts.items() if count > 1}
    for a, b in analysis.arc_possibilities_set:
        if a in branch_lines:
            found.setdefault(str(a), []).append(b)
    return {k: sorted(v) for k, v in found.items()}


def _pytest_major(pytest: Any) -> int:
    try:
        return int(str(pytest.__version__).split(".", 1)[0])
    except ValueError:
        return 0


def run_tests(
    argv: list[str],
    cover: list[str] | None = None,
    *,
    root: str | None = None,
    overlay: dict[str, str] | None = None,
    record: list[str] | None = None,
    noconftest: bool = False,
    workdir_tests: list[str] | None = None,
    harness: list[str] | None = None,
) -> dict[str, Any]:
    """Run pytest on ``argv`` and return per-test outcomes, optionally with branch coverage.

    Args:
        argv: pytest arguments (test paths or node ids, relative to ``root``).
        cover: Files (relative to ``root`` or absolute) whose branch coverage to measure.
        root: Directory to run in and import from first (a world); default the run's workdir.
        overlay: Relative path -> replacement source, imported instead of the file (mutants).
        record: ``"relpath::qualname"`` functions whose calls to record with literal arguments.
        noconftest: Load no conftest.py (a trial may have tampered with them).
        workdir_tests: Test files in the run's own working directory (e.g. witnesses passed in
            ``RunSpec.files``), run with ``argv`` while importing from ``root``.
        harness: Run as a benchmark harness would: these options (the spec's ``test_cmd``,
            e.g. ``-rA``) instead of vouch's own, pytest's own rootdir and config discovery,
            and ``root`` not put on sys.path (the environment's PYTHONPATH decides imports).

    Returns:
        ``{"exit_code", "outcomes": {nodeid: passed|failed|skipped|error}, "failures":
        {nodeid: {exception, message, when}}, "counts", "coverage": {file: {...}} | None,
        "calls": {target: [{"args": [repr...], "kwargs": {name: repr}}]} | None}``.
    """
    import pytest

    workdir = os.getcwd()
    extra = [os.path.join(workdir, path) for path in workdir_tests or []]
    where = _enter(root, on_path=harness is None)
    if overlay:
        sys.meta_path.insert(
            0, _OverlayFinder({os.path.realpath(os.path.join(where, k)): v for k, v in overlay.items()})
        )
    # Tests brought into the run (witnesses) are rooted in the run's workdir, so that their node
    # ids name their files; the world's own tests are rooted in the world.
    rootdir = workdir if extra and not argv else where
    if harness is not None:
        # The world is read-only in a run: no cache plugin (it would warn, and -W error fails).
        args = ["-p", "no:cacheprovider", *harness]
    else:
        args = ["-p", "no:cacheprovider", "-q", "--continue-on-collection-errors", f"--rootdir={rootdir}"]
        if _pytest_major(pytest) >= 6:
            args.insert(3, "--no-header")
        if rootdir != where or not any(os.path.exists(os.path.join(where, name)) for name in _CONFIG_FILES):
            # Without a config of its own, pytest would adopt one from a directory above the world.
            args.extend(["-c", os.devnull])
    if noconftest:
        args.append("--noconftest")
    args.extend(argv)
    args.extend(extra)
    collector = _make_collector()
    files = [os.path.realpath(os.path.join(where, f)) for f in cover or []]
    cov = None
    if files:
        import coverage

        cov = coverage.Coverage(data_file=None, branch=True, include=files, config_file=False)
        cov.start()
    recorder = _Recorder(record, where) if record else None
    if recorder is not None:
        sys.setprofile(recorder)
    try:
        exit_code = pytest.main(args, plugins=[collector])
    finally:
        if recorder is not None:
            sys.setprofile(None)
        if cov is not None:
            cov.stop()
    counts: dict[str, int] = {}
    for outcome in collector.outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    coverage_data = None
    if cov is not None:
        by_real = _coverage_of(cov, files)
        # No zip(strict=True): this module also runs under an environment's Python 3.9.
        coverage_data = {rel: by_real[real] for rel, real in zip(cover or [], files)}  # noqa: B905
    return {
        "exit_code": int(exit_code),
        "outcomes": collector.outcomes,
        "failures": collector.failures,
        "counts": counts,
        "coverage": coverage_data,
        "calls": recorder.calls if recorder is not None else None,
    }


def canon(value: Any, depth: int = 0) -> str:
    """A hash-seed-independent text of a value, for comparing results across two worlds."""
    if depth > 8:
        return "..."
    if isinstance(value, dict):
        items = sorted((canon(k, depth + 1), canon(v, depth + 1)) for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__}(" + ", ".join(sorted(canon(v, depth + 1) for v in value)) + ")"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(canon(v, depth + 1) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, float):
        # 12 significant digits: 5280 * 12 * 0.0254 and 1609.344 are the same mile.
        return repr(float(format(value, ".12g")))
    if isinstance(value, (str, bytes, int, bool, complex)) or value is None:
        return repr(value)
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return f"{type(value).__qualname__}({canon(fields, depth + 1)})"
    return f"<{type(value).__qualname__}>"


class _CallTimeout(BaseException):
    """Raised by the alarm in one call that runs too long (a BaseException: code under test
    that catches Exception cannot swallow it)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _CallTimeout


def call_functions(
    calls: list[dict[str, Any]], root: str | None = None, per_call_s: float = 5.0
) -> list[dict[str, Any]]:
    """Call ``module:qualname`` functions on literal arguments; each outcome as data.

    Args:
        calls: ``{"module", "qualname", "args": [repr...], "kwargs": {name: repr}}`` each.
        root: The world to import from (default: the run's workdir).
        per_call_s: A call running longer is stopped and recorded as ``CallTimeout``, so one
            input that hangs does not take the others' outcomes with it.

    Returns:
        One ``{"ok", "value" (canon text), "literal" (repr or None), "exception"}`` per call.
    """
    import importlib
    import signal

    _enter(root)
    signal.signal(signal.SIGALRM, _alarm)
    results: list[dict[str, Any]] = []
    for spec in calls:
        signal.setitimer(signal.ITIMER_REAL, per_call_s)
        try:
            target: Any = importlib.import_module(spec["module"])
            for part in spec["qualname"].split("."):
                target = getattr(target, part)
            args = [ast.literal_eval(a) for a in spec.get("args", [])]
            kwargs = {k: ast.literal_eval(v) for k, v in spec.get("kwargs", {}).items()}
            value = target(*args, **kwargs)
        except _CallTimeout:
            results.append({"ok": False, "value": None, "literal": None, "exception": "CallTimeout"})
            continue
        except Exception as exc:  # noqa: BLE001 - the code under test's failure is the outcome
            results.append({"ok": False, "value": None, "literal": None, "exception": type(exc).__name__})
            continue
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        results.append({"ok": True, "value": canon(value), "literal": _literal(value), "exception": None})
    return results
