"""What vouch itself ships or writes that holds labels, answers or gold: hidden from every run.

A run reads the host read-only, so anything world-readable is readable to untrusted code unless
it is hidden. vouch's own files with answers are hidden from every run of every pool, whatever
the caller's ``RunSpec`` says:

* the package's data directory (``vouch/data``: bundled completions with their pass/fail labels);
* vouch's default output locations, resolved when a run is submitted: the store
  (``$VOUCH_STORE`` or ``.vouch/store.sqlite``, with its ``-wal`` and ``-shm`` files) and the
  witness directories (``.vouch/witnesses``, ``.vouch/swe-witnesses``) under the working
  directory;
* every path registered with ``hide_in_runs``: code that writes labels, gold or witnesses
  somewhere else (a ``--json`` file, a task set, ``--witness-dir``) registers it before runs
  start, and every pool of the process hides it from then on.

A path that does not exist when a run starts cannot be covered (it is nothing yet); one made
later is hidden from the runs that start after it.
"""

from __future__ import annotations

import os
import threading

import vouch

_lock = threading.Lock()
_registered: dict[str, None] = {}
_exposed: dict[str, None] = {}
_STORE_FILES = ("", "-wal", "-shm", "-journal")
_DEFAULT_DIRS = (".vouch/witnesses", ".vouch/swe-witnesses")


def package_data_dir() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(vouch.__file__)), "data")


def hide_in_runs(*paths: str | os.PathLike[str]) -> None:
    """Hide ``paths`` (files or directories) from every run this process submits from now on."""
    with _lock:
        for path in paths:
            _registered[os.path.abspath(path)] = None


def hidden_in_every_run() -> tuple[str, ...]:
    """The absolute paths every run is given hidden, in a stable order, without duplicates."""
    store = os.path.abspath(os.environ.get("VOUCH_STORE", ".vouch/store.sqlite"))
    paths = [package_data_dir(), *(store + suffix for suffix in _STORE_FILES)]
    paths += [os.path.abspath(d) for d in _DEFAULT_DIRS]
    with _lock:
        paths += list(_registered)
    return tuple(dict.fromkeys(paths))


def expose_to_runs(*paths: str | os.PathLike[str]) -> None:
    """Let every run this process submits from now on read ``paths`` (read-only), where a pool
    without root would otherwise cover them: a world cache or an environment directory in the
    caller's home. Hidden paths inside them stay hidden. As root this changes nothing: runs
    read what their own uid may read."""
    with _lock:
        for path in paths:
            _exposed[os.path.realpath(path)] = None


def exposed_to_every_run() -> tuple[str, ...]:
    """The paths registered with ``expose_to_runs``, in the order they were registered."""
    with _lock:
        return tuple(_exposed)
