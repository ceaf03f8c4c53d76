"""``vouch.audit._probes``: code that asks where it runs, by any of the names seen used."""

from __future__ import annotations

import pytest

from vouch.audit._probes import probes_in, sandbox_probes


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\nx = os.uname().nodename == 'h'\n", "reads os.uname()"),
        ("from os import uname as u\nu()\n", "reads os.uname()"),
        ("import os as o\no.getuid()\n", "reads its uid (os.getuid)"),
        ("import os\ngetattr(os, 'getpid')()\n", "reads its pid (os.getpid)"),
        ("import os\nos.getppid()\n", "reads its parent's pid (os.getppid)"),
        ("import socket\nsocket.gethostname()\n", "reads the host name (socket.gethostname)"),
        ("import platform\nplatform.node()\n", "reads the host name (platform.node)"),
        ("import sys\nsys._getframe(2)\n", "walks the stack (sys._getframe)"),
        ("import inspect\ninspect.stack()\n", "walks the stack (inspect.stack)"),
        ("import inspect as i\ni.currentframe()\n", "walks the stack (inspect.currentframe)"),
        ("def f(fr):\n    return fr.f_back\n", "walks the stack (.f_back)"),
        ("def f(e):\n    return e.__traceback__.tb_frame\n", "walks the stack (.tb_frame)"),
        ("import traceback\ntraceback.extract_stack()\n", "walks the stack (traceback.extract_stack)"),
        ("from traceback import walk_stack\nwalk_stack(None)\n", "walks the stack (traceback.walk_stack)"),
        ("x = __import__('traceback').walk_stack(None)\n", "walks the stack (traceback.walk_stack)"),
        ("import importlib\nimportlib.import_module('sys')._getframe(1)\n", "walks the stack (sys._getframe)"),
        ("import os\nos.environ.get('PYTEST_CURRENT_TEST')\n", "reads PYTEST_CURRENT_TEST"),
        ("open('/proc/self/status').read()\n", "reads '/proc/self/status'"),
        ("import sys\nx = 'conftest' in sys.modules\n", "looks for 'conftest' in sys.modules"),
        ("from sys import modules\nx = modules.get('_pytest')\n", "looks for '_pytest' in sys.modules"),
        ("import sys\nx = any('conftest' in m for m in sys.modules)\n", "looks for 'conftest' in sys.modules"),
        (
            "import sys\nx = [m for m in sys.modules.keys() if m.startswith('test_')]\n",
            "looks for 'test_' in sys.modules",
        ),
        ("import sys\nx = sys.modules['xdist']\n", "looks for 'xdist' in sys.modules"),
    ],
)
def test_each_probe_is_named(source: str, expected: str) -> None:
    assert expected in sandbox_probes(source)


def test_ordinary_code_has_no_probes() -> None:
    source = "import os\nimport sys\n\ndef f(path):\n    sys.modules.get('mock')\n    return os.path.join(path, 'x')\n"
    assert sandbox_probes(source) == []
    assert sandbox_probes("def (:\n") == []


def test_probes_carry_their_line() -> None:
    source = "import sys\n\n\ndef f():\n    return sys._getframe(1).f_back\n"
    assert [(p.line, p.detail) for p in probes_in(source)] == [
        (5, "walks the stack (.f_back)"),
        (5, "walks the stack (sys._getframe)"),
    ]
