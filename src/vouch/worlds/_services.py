"""Run-side helper: local stand-ins for the network services a repository's tests call.

SWE-bench's harness runs tests with the network on; vouch's runs have none beyond their own
loopback. Where a repository's suite can be pointed at a local copy of the service it calls,
the run starts one on its loopback and points the tests at it, as the repository itself later
did (requests' suite moved to pytest-httpbin). The service runs inside the run (a forked child
of the run's process), so it has the run's sandbox and dies with it.

Known services:

- ``httpbin``: the ``httpbin`` package's WSGI app (the code behind httpbin.org), served by
  werkzeug with threads; the tests read ``HTTPBIN_URL`` (requests' ``test_requests.py``).
  HTTPS and other hosts stay out of reach.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SERVICES", "available", "running"]

SERVICES = {"httpbin": "HTTPBIN_URL"}
"""Service name -> the variable that points the tests at it."""


def available(name: str) -> bool:
    """Whether ``name`` can be served here (its package is installed: ``vouch[swebench]``)."""
    return name in SERVICES and importlib.util.find_spec(name) is not None


def _serve_httpbin(sock: socket.socket) -> None:
    from httpbin import app  # type: ignore[import-untyped]
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", sock.getsockname()[1], app, threaded=True, fd=sock.fileno())
    server.serve_forever()


@contextmanager
def running(names: list[str] | tuple[str, ...]) -> Iterator[dict[str, str]]:
    """Start the named services on the loopback; yield the variables that point tests at them.

    Each listens before this yields (the socket is made here, then served by a forked child),
    so a test's first request waits in the backlog, never finds the port closed. An unknown or
    uninstalled service is left out.
    """
    children: list[int] = []
    env: dict[str, str] = {}
    try:
        for name in names:
            if not available(name):
                continue
            sock = socket.create_server(("127.0.0.1", 0), backlog=64)
            port = sock.getsockname()[1]
            pid = os.fork()
            if pid == 0:  # the service: never returns
                try:
                    os.setpgid(0, 0)
                    quiet = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(quiet, 1)
                    os.dup2(quiet, 2)  # its request log is no part of the tests' output
                    _serve_httpbin(sock)
                finally:
                    os._exit(1)
            sock.close()
            children.append(pid)
            env[SERVICES[name]] = f"http://127.0.0.1:{port}/"
        yield env
    finally:
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
