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
import io
import os
import sys
import time
from collections.abc import Iterator, Sequence
from types import FrameType, FunctionType
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


def _install_overlay(where: str, overlay: dict[str, str] | None) -> None:
    """Import ``overlay``'s sources (relative path under ``where`` -> source) in place of those files."""
    if overlay:
        sys.meta_path.insert(
            0, _OverlayFinder({os.path.realpath(os.path.join(where, k)): v for k, v in overlay.items()})
        )


_PLAIN = (str, bytes, int, float, complex, bool, type(None))
_CO_GENERATOR, _CO_COROUTINE, _CO_ASYNC_GENERATOR = 0x20, 0x80, 0x200
_MAX_SKIPPED_PER_FUNCTION = 400
"""Calls of one function whose arguments could not be rebuilt, after which it is no longer tried."""
_MAX_ATTEMPTS_PER_FUNCTION = 5000
"""Calls of one function looked at (most repeat an input already kept): recording stays cheap."""
_MAX_RECIPE = 4000
_MAX_MADE = 20000
_RECIPE_DEPTH = 4


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether a value is built of literal types only, checked by type before any ``repr``:
    the repr of a large object of the code under test (an array, a frame) is costly."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if depth > 6:
        return False
    if kind in (list, tuple, set, frozenset):
        return len(value) <= 200 and all(_plain(v, depth + 1) for v in value)
    if kind is dict:
        return len(value) <= 200 and all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _literal(value: Any) -> str | None:
    """``repr(value)`` when it reads back as an equal value of the same type, else None."""
    if not _plain(value):
        return None
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


# --- recipes: values rebuilt from literals -------------------------------------------------
#
# A value that is not a literal can still be an input when it can be rebuilt from literals. Its
# recipe is the text of a Python expression over literals and three forms only:
#   _ref('module', 'qualname')                 an importable class (or function) of the world
#   _ref('module', 'Class')(arg, ..., k=arg)   a call of that class: a recorded constructor call
#                                              (or of a factory: threading.Lock() for a lock)
#   _rebuild(_ref('module', 'Class'), {...})   an instance made without __init__, its __dict__ set
# and list, tuple, set and dict displays of recipes. Recipes are never passed to eval: ``build``
# walks their syntax tree and does nothing else.


def _resolve(module: str, qualname: str) -> Any:
    """The object ``qualname`` of ``module`` (imported), or raise."""
    import importlib

    if "<" in qualname or module == "__main__":
        raise ValueError(f"{module}:{qualname} cannot be imported")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _ref_of(value: Any) -> str | None:
    """``_ref(module, qualname)`` naming ``value`` (a class or function), when importing that
    name gives this very object; test modules are not referred to (a witness never imports them)."""
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname or module == "__main__":
        return None
    leaf = module.rsplit(".", 1)[-1]
    if leaf.startswith("test_") or leaf.endswith("_test") or leaf == "conftest":
        return None
    held = sys.modules.get(module)
    target: Any = held
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if held is None or target is not value:
        return None
    return f"_ref({module!r}, {qualname!r})"


_FRESH: dict[type, str] = {}


def _fresh_factories() -> dict[type, str]:
    """Types whose instances carry no value of their own, and the ``_ref`` making a new one."""
    if not _FRESH:
        import threading

        for factory in (threading.Lock, threading.RLock):
            ref = _ref_of(factory)
            if ref is not None:
                _FRESH[type(factory())] = ref
    return _FRESH


def rebuild(cls: Any, state: dict[str, Any]) -> Any:
    """An instance of ``cls`` made without ``__init__``, its ``__dict__`` set to ``state``."""
    made = cls.__new__(cls)
    made.__dict__.update(state)
    return made


def build(text: str) -> Any:
    """The value a recipe (or a literal) describes, built in this process.

    Raises:
        ValueError: Text that is neither a literal nor a recipe.
    """
    return _build(ast.parse(text, mode="eval").body)


def _build(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        pass
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "_ref":
            parts = [ast.literal_eval(a) for a in node.args]
            if len(parts) != 2 or node.keywords or not all(isinstance(p, str) for p in parts):
                raise ValueError("_ref takes a module and a qualname")
            return _resolve(parts[0], parts[1])
        if isinstance(func, ast.Name) and func.id == "_rebuild":
            if len(node.args) != 2 or node.keywords:
                raise ValueError("_rebuild takes a class and a state")
            cls, state = _build(node.args[0]), _build(node.args[1])
            if not isinstance(cls, type) or not isinstance(state, dict):
                raise ValueError("_rebuild takes a class and a dict")
            return rebuild(cls, state)
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "_ref":
            made = _build(func)  # a class (a constructor call), or a factory such as threading.Lock
            args = [_build(a) for a in node.args]
            kwargs = {k.arg: _build(k.value) for k in node.keywords if k.arg is not None}
            return made(*args, **kwargs)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_build(e) for e in node.elts]
        return (
            list(items) if isinstance(node, ast.List) else tuple(items) if isinstance(node, ast.Tuple) else set(items)
        )
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("no ** in a recipe's dict")
        return {_build(k): _build(v) for k, v in zip(node.keys, node.values) if k is not None}  # noqa: B905
    raise ValueError(f"not a literal or a recipe: {type(node).__name__}")


def member_kind(owner: Any, name: str) -> str | None:
    """How a class member is called: ``method`` (a function: the receiver is its first argument),
    ``static``, ``class``, ``property`` (read on a receiver), or None (not probed)."""
    raw = None
    for klass in getattr(owner, "__mro__", ()):
        if name in vars(klass):
            raw = vars(klass)[name]
            break
    if isinstance(raw, staticmethod):
        return "static"
    if isinstance(raw, classmethod):
        return "class"
    if isinstance(raw, FunctionType):
        return "method"
    if raw is not None and hasattr(type(raw), "__get__") and not callable(raw):
        return "property"  # property, functools.cached_property and their kin
    return None


def _def_lines(path: str) -> dict[str, list[int]]:
    """Qualname -> first lines (the def's and its first decorator's) of each function and method
    of a source file; a property's setter and deleter are left out (only the getter is probed)."""
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    found: dict[str, list[int]] = {}

    def walk(body: Sequence[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in node.decorator_list):
                    continue
                lines = [node.lineno, *(d.lineno for d in node.decorator_list[:1])]
                found.setdefault(prefix + node.name, []).extend(lines)

    walk(tree.body, "")
    return found


def _state_outside_dict(kind: type) -> bool:
    """Whether instances keep state their ``__dict__`` does not hold: in slots (the empty
    ``__slots__`` of the abstract base classes do not count), or in a C base class (one with a
    ``__new__`` of its own that is not Python's: a file, a StringIO, an exception)."""
    for klass in kind.__mro__[:-1]:
        slots = vars(klass).get("__slots__", ())
        names = [slots] if isinstance(slots, str) else list(slots)
        if any(n not in ("__dict__", "__weakref__") for n in names):
            return True
        new = vars(klass).get("__new__")
        if new is not None and not isinstance(new, staticmethod):
            return True
    return False


def _is_literal_text(text: str) -> bool:
    """Whether an argument's text is a literal (not a recipe)."""
    try:
        ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _rebuilds(text: str, value: Any) -> bool:
    """Whether building the recipe gives a value with ``value``'s canonical text."""
    try:
        return canon(build(text)) == canon(value)
    except Exception:  # noqa: BLE001 - a constructor that fails again, a __new__ that refuses
        return False


class _RecordingOrder:
    """A pytest plugin for a recording run: the chosen tests first, and the profile hook taken
    off once the budget is spent (outcomes are the tests' own either way)."""

    def __init__(self, first: Sequence[str], budget_s: float | None) -> None:
        self.first = set(first)
        self.deadline = None if budget_s is None else time.monotonic() + budget_s

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        items.sort(key=lambda item: item.nodeid not in self.first)  # stable: the rest keep their order

    def pytest_runtest_teardown(self, item: Any) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            sys.setprofile(None)
            self.deadline = None


class _Recorder:
    """A profile hook recording calls into chosen functions and methods from outside their
    module, each argument as a literal or a recipe (the receiver of a method is its first).

    Calls are matched by their code's file and first line (``co_qualname`` is new in 3.11, and
    an environment's older interpreter has only ``co_name``). ``__init__`` calls of the classes
    whose members are recorded are remembered too, so that a receiver can be rebuilt by the
    constructor call that made it. A call whose arguments cannot be rebuilt is counted, not kept.
    """

    def __init__(self, targets: Sequence[str], root: str) -> None:
        self.wanted: dict[tuple[str, int], str] = {}
        self.inits: dict[tuple[str, int], str] = {}
        lines_of: dict[str, dict[str, list[int]]] = {}
        for target in targets:
            file, _, qualname = target.partition("::")
            real = os.path.realpath(os.path.join(root, file))
            lines = lines_of.setdefault(real, _def_lines(real))
            for line in lines.get(qualname, ()):
                self.wanted[(real, line)] = target
            if "." in qualname:
                owner = qualname.rsplit(".", 1)[0]
                for line in lines.get(f"{owner}.__init__", ()):
                    self.inits[(real, line)] = owner
        self.calls: dict[str, list[dict[str, Any]]] = {t: [] for t in targets}
        self.seen: set[tuple[str, str]] = set()
        self.skipped: dict[str, int] = {t: 0 for t in targets}
        self.attempts: dict[str, int] = {t: 0 for t in targets}
        self.kinds: dict[str, str | None] = {}
        self.owners: dict[str, Any] = {}
        self.kept: dict[str, list[int]] = {}
        self.made: dict[int, tuple[Any, str]] = {}
        self.init_attempts: dict[str, int] = {}
        self.real: dict[str, str] = {}
        self.files = set(lines_of)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        real = self.real.get(code.co_filename)
        if real is None:  # realpath costs syscalls, and this runs on every call of the process
            real = self.real[code.co_filename] = os.path.realpath(code.co_filename)
        if real not in self.files:
            return
        key = (real, code.co_firstlineno)
        try:
            # The name too: a module's own code starts on line 1, as a def on line 1 does.
            target = self.wanted.get(key)
            if (
                target is not None
                and target.partition("::")[2].rpartition(".")[2] == code.co_name
                and self._entered(frame, real)
            ):
                self._record(target, frame)
            owner = self.inits.get(key)
            if owner is not None and code.co_name == "__init__":
                self._remember(owner, frame)
        except Exception:  # noqa: BLE001 - recording never changes what the code under test does
            return

    def _entered(self, frame: FrameType, real: str) -> bool:
        """Whether the call comes into the module from outside it (T0's tests, another module).

        A call from the module's own code is its implementation talking to itself: its inputs
        and results are internal representations (pytest-7324: the parser's AST names), which a
        correct patch may build otherwise. What T0 calls from outside is the module's interface.
        """
        caller = frame.f_back
        if caller is None:
            return True
        name = caller.f_code.co_filename
        where = self.real.get(name)
        if where is None:
            where = self.real[name] = os.path.realpath(name)
        return where != real

    def _kind(self, target: str, frame: FrameType) -> str | None:
        """``function``, or the member kind of a method target (resolved once, on the live class)."""
        qualname = target.partition("::")[2]
        if "." not in qualname:
            return "function"
        if target not in self.kinds:
            owner_name, _, name = qualname.rpartition(".")
            module = frame.f_globals.get("__name__")
            try:
                owner = _resolve(str(module), owner_name)
                kind = member_kind(owner, name) if isinstance(owner, type) else None
            except Exception:  # noqa: BLE001 - a class that cannot be imported by name: not probed
                owner, kind = None, None
            self.kinds[target] = kind
            self.owners[target] = owner
        return self.kinds[target]

    def _record(self, target: str, frame: FrameType) -> None:
        kept = self.kept.setdefault(target, [0, 0])  # calls kept with literal arguments only, and with rebuilt ones
        if (
            min(kept) >= _MAX_CALLS_PER_FUNCTION
            or self.skipped[target] >= _MAX_SKIPPED_PER_FUNCTION
            or self.attempts[target] >= _MAX_ATTEMPTS_PER_FUNCTION
        ):
            return
        self.attempts[target] += 1
        kind = self._kind(target, frame)
        code = frame.f_code
        # A generator's or coroutine's result is an iterator or awaitable whose values come later:
        # no canonical text tells two of them apart.
        lazy = code.co_flags & (_CO_GENERATOR | _CO_COROUTINE | _CO_ASYNC_GENERATOR)
        if kind is None or lazy or (kind == "property" and code.co_argcount != 1):
            self.skipped[target] += 1
            return
        skip_first = False
        if kind == "class":
            if frame.f_locals.get(code.co_varnames[0]) is not self.owners.get(target):
                self.skipped[target] += 1  # called on a subclass: not the same call through the class
                return
            skip_first = True
        arguments = self._arguments(frame, skip_first)
        if arguments is None:
            self.skipped[target] += 1
            return
        args, kwargs = arguments
        # Calls on literals alone and calls with rebuilt arguments fill places of their own, so
        # that the many calls on, say, functions do not crowd out the calls on plain values.
        rebuilt = int(not all(_is_literal_text(t) for t in [*args, *kwargs.values()]))
        record = {"args": args, "kwargs": kwargs}
        fingerprint = (target, repr(record))
        if fingerprint in self.seen or kept[rebuilt] >= _MAX_CALLS_PER_FUNCTION:
            return
        self.seen.add(fingerprint)
        kept[rebuilt] += 1
        self.calls[target].append(record)

    def _arguments(self, frame: FrameType, skip_first: bool) -> tuple[list[str], dict[str, str]] | None:
        """The call's arguments as literals or recipes (None: one cannot be rebuilt)."""
        code = frame.f_code
        names = code.co_varnames
        positional = code.co_argcount
        kwonly = code.co_kwonlyargcount
        local = frame.f_locals
        args: list[str] = []
        kwargs: dict[str, str] = {}
        for index, name in enumerate(names[: positional + kwonly]):
            if index == 0 and skip_first:
                continue
            text = self.recipe(local.get(name))
            if text is None:
                return None
            if index < positional:
                args.append(text)
            else:
                kwargs[name] = text
        extra_at = positional + kwonly
        if code.co_flags & 0x04:  # CO_VARARGS
            for value in local.get(names[extra_at], ()):
                text = self.recipe(value)
                if text is None:
                    return None
                args.append(text)
            extra_at += 1
        if code.co_flags & 0x08:  # CO_VARKEYWORDS
            for key, value in dict(local.get(names[extra_at], {})).items():
                text = self.recipe(value)
                if text is None or not str(key).isidentifier():
                    return None
                kwargs[str(key)] = text
        return args, kwargs

    def _remember(self, owner: str, frame: FrameType) -> None:
        """A constructor call of a recorded class: how its object can be made again."""
        code = frame.f_code
        made = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
        if made is None or type(made).__qualname__ != owner or type(made).__module__ != frame.f_globals.get("__name__"):
            return  # a subclass's __init__ calling this one: the recipe would make the base class
        tries = self.init_attempts.get(owner, 0)
        if tries >= _MAX_ATTEMPTS_PER_FUNCTION:
            return
        self.init_attempts[owner] = tries + 1
        ref = _ref_of(type(made))
        arguments = self._arguments(frame, True) if ref is not None else None
        if ref is None or arguments is None:
            return
        parts = [*arguments[0], *(f"{k}={v}" for k, v in arguments[1].items())]
        text = f"{ref}({', '.join(parts)})"
        if len(text) > _MAX_RECIPE:
            return
        if len(self.made) >= _MAX_MADE:
            self.made.pop(next(iter(self.made)))
        self.made[id(made)] = (type(made), text)

    def recipe(self, value: Any, depth: int = 0) -> str | None:
        """A literal or a recipe that rebuilds ``value``, or None.

        A recipe is kept only when building it gives a value with the same canonical text: the
        constructor call that made an object first (the object may have changed since), then its
        state.
        """
        text = _literal(value)
        if text is not None:
            return text
        if depth >= _RECIPE_DEPTH:
            return None
        return next((t for t in self._recipes(value, depth) if len(t) <= _MAX_RECIPE and _rebuilds(t, value)), None)

    def _recipes(self, value: Any, depth: int) -> Iterator[str]:
        """Candidate recipes of a value that is not a literal, most readable first."""
        kind = type(value)
        if isinstance(value, (type, FunctionType)):
            ref = _ref_of(value)
            if ref is not None:
                yield ref
            return
        if kind in (list, tuple, set):
            text = self._display(value, kind, depth)
            if text is not None:
                yield text
            return
        if kind is dict:
            text = self._dict_display(value, depth)
            if text is not None:
                yield text
            return
        made = self.made.get(id(value))
        if made is not None and made[0] is kind:
            yield made[1]
        fresh = _fresh_factories().get(kind)
        if fresh is not None:  # a lock carries no value: a new one is as good, when it is not held
            if not getattr(value, "locked", lambda: False)():
                yield f"{fresh}()"
            return
        if kind in (io.StringIO, io.BytesIO):  # its text and position are all its state
            text = _literal(value.getvalue()) if value.tell() == 0 else None
            ref = _ref_of(kind)
            if text is not None and ref is not None:
                yield f"{ref}({text})"
            return
        ref = _ref_of(kind)
        if ref is None:
            return
        fields = getattr(value, "__dict__", None)
        if isinstance(value, dict):  # a dict subclass (OrderedDict, ...): made from its items
            inner = self._dict_display(dict(value), depth)
            if inner is not None and not fields:
                yield f"{ref}({inner})"
            return
        if isinstance(value, (list, tuple, set)):
            return
        if not isinstance(fields, dict) or _state_outside_dict(kind):
            return
        state = self._dict_display(fields, depth)
        if state is not None:
            yield f"_rebuild({ref}, {state})"

    def _display(self, value: Any, kind: type, depth: int) -> str | None:
        """A list, tuple or set display of recipes."""
        if len(value) > 50:
            return None
        items: list[str] = []
        for item in value:
            text = self.recipe(item, depth + 1)
            if text is None:
                return None
            items.append(text)
        if kind is tuple:
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if kind is list:
            return f"[{', '.join(items)}]"
        return "{" + ", ".join(items) + "}" if items else None

    def _dict_display(self, value: dict[Any, Any], depth: int) -> str | None:
        if len(value) > 50:
            return None
        parts = []
        for key, item in value.items():
            key_text, item_text = _literal(key), self.recipe(item, depth + 1)
            if key_text is None or item_text is None:
                return None
            parts.append(f"{key_text}: {item_text}")
        return "{" + ", ".join(parts) + "}"


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


def warm() -> None:
    """Run pytest once, with the interpreter's plugins, on a throw-away test (a pool's preload,
    ``vouch.worlds._inrun:warm``).

    A repository's tests run with the plugins of the interpreter they run in, found by entry
    point and imported (their modules assertion-rewritten) inside ``pytest.main``: about 1.5 s of
    every run in vouch's own interpreter, whose dependencies bring several. A pool warmed here has
    them in ``sys.modules`` before it forks a run.
    """
    import contextlib
    import tempfile

    import pytest

    with tempfile.TemporaryDirectory(prefix="vouch-warm-") as tmp:
        with open(os.path.join(tmp, "test_warm_plugins.py"), "w") as f:
            f.write("def test_warm():\n    assert [1] == [1]\n")
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                pytest.main(["-q", "-p", "no:cacheprovider", "test_warm_plugins.py"])
        finally:
            os.chdir(cwd)
    sys.modules.pop("test_warm_plugins", None)


_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


def _installed_plugins() -> list[tuple[str, str]] | None:
    """``(name, value)`` of the ``pytest11`` entry points of the distributions installed in this
    interpreter's environment (its prefix's site-packages), as the environment was built: a
    world's own directories are not searched, so a plugin a patch ships is not among them.
    None when the interpreter cannot list them (pytest then loads plugins as it would)."""
    dirs = [
        p for p in sys.path if p and "-packages" in p and os.path.realpath(p).startswith(os.path.realpath(sys.prefix))
    ]
    try:
        from importlib import metadata
    except ImportError:
        return None
    found: dict[str, str] = {}
    for dist in metadata.distributions(path=dirs):
        for ep in dist.entry_points:
            if ep.group == "pytest11":
                found.setdefault(ep.name, ep.value)
    return sorted(found.items())


def _plugins_by_name(pytest: Any, installed: list[tuple[str, str]]) -> Any:
    """A plugin that loads the environment's own plugins under their entry point names, where
    pytest would have autoloaded them (after ``-p`` and before the conftests), and takes the
    switch that turned autoload off out of the environment the tests see."""

    class EnvironmentPlugins:
        @pytest.hookimpl(tryfirst=True)  # type: ignore[untyped-decorator]
        def pytest_load_initial_conftests(self, early_config: Any) -> None:
            os.environ.pop(_AUTOLOAD, None)
            manager = early_config.pluginmanager
            for name, value in installed:
                if manager.is_blocked(name) or manager.get_plugin(name) is not None:
                    continue
                module, _, attr = value.partition(":")
                plugin: Any = importlib.import_module(module.strip())
                for part in attr.strip().split(".") if attr.strip() else []:
                    plugin = getattr(plugin, part)
                if manager.is_registered(plugin):
                    continue
                manager.register(plugin, name=name)

    return EnvironmentPlugins()


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
    record_first: list[str] | None = None,
    record_budget_s: float | None = None,
) -> dict[str, Any]:
    """Run pytest on ``argv`` and return per-test outcomes, optionally with branch coverage.

    Args:
        argv: pytest arguments (test paths or node ids, relative to ``root``).
        cover: Files (relative to ``root`` or absolute) whose branch coverage to measure.
        root: Directory to run in and import from first (a world); default the run's workdir.
        overlay: Relative path -> replacement source, imported instead of the file (mutants).
        record: ``"relpath::qualname"`` functions and methods (``Class.name``) whose calls to
            record, each argument a literal or a recipe (a method's receiver is its first).
        noconftest: Load no conftest.py (a trial may have tampered with them).
        workdir_tests: Test files in the run's own working directory (e.g. witnesses passed in
            ``RunSpec.files``), run with ``argv`` while importing from ``root``.
        harness: Run as a benchmark harness would: these options (the spec's ``test_cmd``,
            e.g. ``-rA``) instead of vouch's own, pytest's own rootdir and config discovery,
            and ``root`` not put on sys.path (the environment's PYTHONPATH decides imports).
        record_first: With ``record``: these node ids run first (the issue's own tests), so
            their calls are recorded within the budget.
        record_budget_s: With ``record``: recording stops after the test during which this many
            seconds have passed (a profile hook slows every call; the tests run on unhooked).

    Returns:
        ``{"exit_code", "outcomes": {nodeid: passed|failed|skipped|error}, "failures":
        {nodeid: {exception, message, when}}, "counts", "coverage": {file: {...}} | None,
        "calls": {target: [{"args": [text...], "kwargs": {name: text}}]} | None,
        "calls_skipped": {target: calls whose arguments could not be rebuilt} | None}``.
    """
    workdir = os.getcwd()
    extra = [os.path.join(workdir, path) for path in workdir_tests or []]
    where = _enter(root, on_path=harness is None)
    _install_overlay(where, overlay)
    # After the overlay: in pytest's own repository, a mutant of a module ``import pytest`` loads
    # (``_pytest/compat.py``) must be the one imported.
    import pytest

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
    plugins: list[Any] = [collector]
    if record and (record_first or record_budget_s is not None):
        plugins.append(_RecordingOrder(record_first or [], record_budget_s))
    files = [os.path.realpath(os.path.join(where, f)) for f in cover or []]
    cov = None
    if files:
        import coverage

        cov = coverage.Coverage(data_file=None, branch=True, include=files, config_file=False)
        cov.start()
    recorder = _Recorder(record, where) if record else None
    if recorder is not None:
        sys.setprofile(recorder)
    # Plugins load by name, from the environment as it was built; a patch's own entry point
    # (a ``*.dist-info`` in the world) is never loaded, with or without its conftest.
    installed = _installed_plugins()
    autoload = os.environ.get(_AUTOLOAD)
    if installed is not None:
        os.environ[_AUTOLOAD] = "1"
        plugins.append(_plugins_by_name(pytest, installed))
    try:
        exit_code = pytest.main(args, plugins=plugins)
    finally:
        if autoload is None:
            os.environ.pop(_AUTOLOAD, None)
        else:
            os.environ[_AUTOLOAD] = autoload
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
        "calls_skipped": recorder.skipped if recorder is not None else None,
    }


def canon(value: Any, depth: int = 0, public: bool = False) -> str:
    """A hash-seed-independent text of a value, for comparing results across two worlds.

    ``public``: an object shows only its public attributes (its private ones are the patch's own
    business), and a mapping that is not a dict shows its items.
    """
    if depth > 8:
        return "..."
    if isinstance(value, dict):
        items = sorted((canon(k, depth + 1, public), canon(v, depth + 1, public)) for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__}(" + ", ".join(sorted(canon(v, depth + 1, public) for v in value)) + ")"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(canon(v, depth + 1, public) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, float):
        # 12 significant digits: 5280 * 12 * 0.0254 and 1609.344 are the same mile.
        return repr(float(format(value, ".12g")))
    if isinstance(value, (str, bytes, int, bool, complex)) or value is None:
        return repr(value)
    if public:
        from collections.abc import Mapping

        if isinstance(value, Mapping):
            return f"{type(value).__qualname__}({canon(dict(value.items()), depth + 1, public)})"
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        if public:
            fields = {k: v for k, v in fields.items() if not str(k).startswith("_")}
        return f"{type(value).__qualname__}({canon(fields, depth + 1, public)})"
    return f"<{type(value).__qualname__}>"


class _CallTimeout(BaseException):
    """Raised by the alarm in one call that runs too long (a BaseException: code under test
    that catches Exception cannot swallow it)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _CallTimeout


def call_functions(
    calls: list[dict[str, Any]],
    root: str | None = None,
    per_call_s: float = 5.0,
    overlay: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Call functions and methods of the world on literal or rebuilt arguments; each outcome as data.

    Args:
        calls: ``{"module", "qualname", "args": [text...], "kwargs": {name: text}, "public"}``
            each; a text is a literal or a recipe (``build``). A qualname ``Class.name`` is called
            as the member is: a method or property on its receiver (the first argument), a
            static or class method through the class.
        root: The world to import from (default: the run's workdir).
        per_call_s: A call running longer is stopped and recorded as ``CallTimeout``, so one
            input that hangs does not take the others' outcomes with it.
        overlay: Relative path -> replacement source, imported instead of the file (mutants).

    Returns:
        One ``{"ok", "value" (canon text), "literal" (repr or None), "exception"}`` per call, and
        ``state``, the receiver's canonical text after the call, for a method or property that
        returned. ``public`` compares public attributes only (``canon``).
    """
    import signal

    _install_overlay(_enter(root), overlay)
    signal.signal(signal.SIGALRM, _alarm)
    results: list[dict[str, Any]] = []
    for spec in calls:
        public = bool(spec.get("public"))
        receiver: Any = _NO_RECEIVER
        signal.setitimer(signal.ITIMER_REAL, per_call_s)
        try:
            module, qualname = spec["module"], spec["qualname"]
            args = [build(a) for a in spec.get("args", [])]
            kwargs = {k: build(v) for k, v in spec.get("kwargs", {}).items()}
            if "." not in qualname:
                value = _resolve(module, qualname)(*args, **kwargs)
            else:
                owner_name, _, name = qualname.rpartition(".")
                owner = _resolve(module, owner_name)
                kind = member_kind(owner, name)
                if kind in ("static", "class"):
                    value = getattr(owner, name)(*args, **kwargs)
                elif kind in ("method", "property") and args:
                    receiver, rest = args[0], args[1:]
                    if kind == "method":
                        value = getattr(owner, name)(receiver, *rest, **kwargs)
                    elif rest or kwargs:
                        raise TypeError(f"property {qualname} takes no arguments")
                    else:
                        value = getattr(receiver, name)
                else:  # a member the world lacks raises AttributeError here, as a call of it would
                    getattr(owner, name)
                    raise TypeError(f"{qualname} is not a function, method or property of {module}")
            outcome = {"ok": True, "value": canon(value, public=public), "literal": _literal(value), "exception": None}
            if receiver is not _NO_RECEIVER:
                outcome["state"] = canon(receiver, public=public)
        except _CallTimeout:
            outcome = {"ok": False, "value": None, "literal": None, "exception": "CallTimeout"}
        except Exception as exc:  # noqa: BLE001 - the code under test's failure is the outcome
            outcome = {"ok": False, "value": None, "literal": None, "exception": type(exc).__name__}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        results.append(outcome)
    return results


_NO_RECEIVER = object()
