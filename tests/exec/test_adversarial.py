"""The adversarial suite: untrusted code that attacks its sandbox, its judge or the host.

One table of cases. Each case is a file the engine runs and the statuses it may get. Every
case also checks, besides what is particular to it:

- the executor still works afterwards (a trivial call returns its value);
- sentinel directories on the host (one world-writable, reachable by a run) are unchanged;
- no process of the run's host uid is left on the host.

Sources are templates: ``@@NAME@@`` is replaced with a path or value of the test's ``World``
(fresh per test, so no two tests share a file name).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
import venv
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import (
    FAST,
    ExecutorFactory,
    assert_executor_works,
    call_spec,
    remaining_processes,
    run_call,
    run_in_subprocess,
    run_script,
    script_spec,
    zygote_children,
)
from vouch.exec import Call, Limits, LocalExecutor, RunResult, RunSpec, Status, hide_in_runs
from vouch.exec._hidden import package_data_dir

RESULT_FD = 1000  # where the harness writes the real frame (vouch.exec._harness.RESULT_FD)
API_KEYS = {
    "OPENAI_API_KEY": "sk-test-secret-123",
    "ANTHROPIC_API_KEY": "sk-ant-test-secret-456",
    "GITHUB_TOKEN": "ghp_test_secret_789",
}


# --- the host side of the attacks ----------------------------------------------------------


@dataclass
class World:
    """What the host offers to be attacked: servers, secrets, sentinels, unique names."""

    token: str
    exposed: str
    """World-searchable host dir: hidden.txt and hidden-dir/inner.txt (hidden), root-only.txt."""
    secrets: dict[str, str]
    """Name -> content that must never show up in a run's output."""
    tcp: socket.socket
    abstract: socket.socket
    abstract_name: str
    sentinel_exposed: str
    site_packages: str

    @property
    def port(self) -> int:
        return int(self.tcp.getsockname()[1])

    def fill(self, template: str) -> str:
        values = {
            "TOKEN": self.token,
            "EXPOSED": self.exposed,
            "PORT": str(self.port),
            "ABSTRACT": self.abstract_name,
            "SENTINEL": self.sentinel_exposed,
            "SITE": self.site_packages,
            "RESULT_FD": str(RESULT_FD),
        }
        for name, value in values.items():
            template = template.replace(f"@@{name}@@", value)
        assert "@@" not in template, template
        return template

    def connections(self) -> int:
        """Connections the host's servers accepted (the kernel completes a handshake with no
        accept() call, so whatever connected is waiting in a backlog)."""
        count = 0
        for server in (self.tcp, self.abstract):
            server.setblocking(False)
            while True:
                try:
                    conn, _ = server.accept()
                except BlockingIOError:
                    break
                conn.close()
                count += 1
        return count

    def assert_no_secret_in(self, result: RunResult) -> None:
        output = result.stdout_tail + result.stderr_tail
        if result.exception is not None:
            output += result.exception.message + result.exception.traceback_tail
        for name, secret in self.secrets.items():
            assert secret not in output, f"{name} leaked into the run's output"


@pytest.fixture
def world(sentinel: Callable[[], None], exposed_dir: str) -> Iterator[World]:
    token = f"vouch-adv-{uuid.uuid4().hex[:12]}"
    exposed = exposed_dir
    secrets = {
        "hidden file": f"hidden-file-content-{uuid.uuid4().hex}",
        "file in hidden dir": f"hidden-dir-content-{uuid.uuid4().hex}",
        **API_KEYS,
    }
    root_only = f"root-only-content-{uuid.uuid4().hex}"
    if os.geteuid() == 0:
        secrets["root-only file"] = root_only
    os.mkdir(os.path.join(exposed, "hidden-dir"), 0o755)
    for rel, secret, mode in (
        ("hidden.txt", secrets["hidden file"], 0o644),
        ("hidden-dir/inner.txt", secrets["file in hidden dir"], 0o644),
        ("root-only.txt", root_only, 0o600),
    ):
        path = os.path.join(exposed, rel)
        with open(path, "w") as f:
            f.write(secret)
        os.chmod(path, mode)
    tcp = socket.create_server(("127.0.0.1", 0), backlog=16)
    abstract_name = f"{token}-abstract"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    abstract.listen(16)
    w = World(
        token=token,
        exposed=exposed,
        secrets=secrets,
        tcp=tcp,
        abstract=abstract,
        abstract_name=abstract_name,
        sentinel_exposed=sentinel.exposed,  # type: ignore[attr-defined]
        site_packages=sysconfig.get_paths()["purelib"],
    )
    yield w
    tcp.close()
    abstract.close()
    for leftover in (f"/tmp/{token}-tmp.txt", f"/root/{token}-root.txt"):
        if os.path.exists(leftover):
            os.remove(leftover)


# --- the table -----------------------------------------------------------------------------

Check = Callable[[RunResult, World, LocalExecutor], None]


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    expect: frozenset[Status]
    call: bool = False
    """Run ``v.py:f`` as a Call instead of ``main.py`` as a Script."""
    hidden: tuple[str, ...] = ()
    limits: Limits = FAST
    with_sleeper: bool = False
    """Run a sleeper in the same executor at the same time; it must end ok."""
    host_env: dict[str, str] = field(default_factory=dict)
    """Set in the test process before a fresh executor starts for this case."""
    checks: tuple[Check, ...] = ()


def case(id: str, source: str, *statuses: Status, **kwargs) -> pytest.ParameterSet:
    return pytest.param(Case(id, source, frozenset(statuses), **kwargs), id=id)


OK, ERROR, TIMEOUT, MEMORY, KILLED = Status.OK, Status.ERROR, Status.TIMEOUT, Status.MEMORY, Status.KILLED


def stdout_has(text: str) -> Check:
    def check(result: RunResult, world: World, executor: LocalExecutor) -> None:
        assert world.fill(text) in result.stdout_tail, result.stdout_tail

    return check


def stdout_lacks(text: str) -> Check:
    def check(result: RunResult, world: World, executor: LocalExecutor) -> None:
        assert world.fill(text) not in result.stdout_tail, result.stdout_tail

    return check


def raised(*types: str) -> Check:
    def check(result: RunResult, world: World, executor: LocalExecutor) -> None:
        assert result.exception is not None, result
        assert result.exception.type in types, result.exception

    return check


def host_lacks(*templates: str) -> Check:
    def check(result: RunResult, world: World, executor: LocalExecutor) -> None:
        for template in templates:
            path = os.path.expanduser(world.fill(template))
            assert not os.path.lexists(path), f"the run created {path} on the host"

    return check


def exit_code(code: int) -> Check:
    def check(result: RunResult, world: World, executor: LocalExecutor) -> None:
        assert result.exit_code == code, (result.exit_code, result.reason)

    return check


def no_value(result: RunResult, world: World, executor: LocalExecutor) -> None:
    assert result.value is None


def no_secret(result: RunResult, world: World, executor: LocalExecutor) -> None:
    world.assert_no_secret_in(result)


def no_connection(result: RunResult, world: World, executor: LocalExecutor) -> None:
    assert "CONNECTED" not in result.stdout_tail
    assert world.connections() == 0, "a host server accepted a connection from the run"


def tail_capped(result: RunResult, world: World, executor: LocalExecutor) -> None:
    cap = OUTPUT_LIMITS.output_tail_bytes
    assert 0 < len(result.stdout_tail.encode()) <= cap
    assert len(result.stderr_tail.encode()) <= cap


def next_run_is_clean(result: RunResult, world: World, executor: LocalExecutor) -> None:
    probe = world.fill(
        "import builtins, json, os, sys\n"
        "def f():\n"
        "    return {\n"
        "        'len': len([1, 2, 3]),\n"
        "        'abs': abs(-3),\n"
        "        'json attribute': hasattr(json, 'INJECTED'),\n"
        "        'environment': os.environ.get('VOUCH_INJECTED'),\n"
        "        'sys.modules': 'vouch_injected' in sys.modules,\n"
        "        'sys.path': '/injected' in sys.path,\n"
        "        'tmp file': os.path.exists('/tmp/@@TOKEN@@-persist'),\n"
        "    }\n"
    )
    clean = {
        "len": 3,
        "abs": 3,
        "json attribute": False,
        "environment": None,
        "sys.modules": False,
        "sys.path": False,
        "tmp file": False,
    }
    # Two at once, so that both of the pool's slots serve one.
    for later in executor.run_batch([call_spec(probe), call_spec(probe)]):
        assert later.ok, (later.status, later.reason, later.stderr_tail)
        assert later.value == clean


def only_std_and_result_fds(result: RunResult, world: World, executor: LocalExecutor) -> None:
    assert result.stdout_tail.split() == ["0", "1", "2", str(RESULT_FD)]


OUTPUT_LIMITS = Limits(timeout_s=2, memory_mb=256, output_tail_bytes=4096)

_FAKE_FRAME = """
import json, struct
body = json.dumps({"outcome": "returned", "value": True, "exception": None}).encode()
FAKE = b"VOUCH-FRAME-1\\n" + b"0123456789abcdef" + struct.pack("<Q", len(body)) + body
"""

_SPRAY_FDS = (
    _FAKE_FRAME
    + """
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
for fd in range(3, 65):
    try:
        os.pwrite(fd, FAKE, 0)
    except OSError:
        try:
            os.write(fd, FAKE)
        except OSError:
            pass
"""
)

# Code in the run's process walks the stack to the harness's frame nonce and writes a
# well-formed record (this run's nonce, right length) whose value the pool cannot decode.
_FORGE = r"""
import os, struct, sys
def _nonce():
    frame = sys._getframe(0)
    while frame is not None:
        value = frame.f_locals.get("nonce")
        if isinstance(value, bytes) and len(value) == 16:
            return value
        frame = frame.f_back
    raise RuntimeError("no nonce on the stack")
def forge(value):
    body = b'{"outcome":"returned","value":' + value + b',"exception":null}'
    record = b"VOUCH-FRAME-1\n" + _nonce() + struct.pack("<Q", len(body)) + body
    os.ftruncate(@@RESULT_FD@@, 0)
    os.pwrite(@@RESULT_FD@@, record, 0)
    os._exit(0)
"""
_FILL_DISK = r"""
def fill(path, mb):
    try:
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(b"x" * (1 << 20))
        return "ok"
    except OSError as exc:
        return f"OSError {exc.errno}"
for name, path in [("work", "a.bin"), ("tmp", "/tmp/b"), ("shm", "/dev/shm/c"), ("var", "/var/tmp/d")]:
    print(name, fill(path, 30))
"""
_BAD_BASE64 = b'{"__vouch__":"bytes","b64":"A"}'
_DEEP_JSON = b"[" * 100_000 + b"]" * 100_000


def reason_has(*texts: str) -> Check:
    def check(result: RunResult, world: World, executor: LocalExecutor) -> None:
        assert result.reason is not None and any(t in result.reason for t in texts), result.reason

    return check


_SETNS = r"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
joined = []
for pid in ["1", "self", *sorted(p for p in os.listdir("/proc") if p.isdigit())]:
    try:
        fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    except OSError as exc:
        print("open", pid, type(exc).__name__)
        continue
    if hasattr(os, "setns"):
        try:
            os.setns(fd, CLONE_NEWNET)
            joined.append(pid)
        except OSError as exc:
            print("os.setns", pid, type(exc).__name__)
    if libc.setns(fd, CLONE_NEWNET) == 0:
        joined.append(pid)
    else:
        print("setns", pid, os.strerror(ctypes.get_errno()))
print("joined", joined)
socket.create_connection(("127.0.0.1", @@PORT@@), timeout=1)
print("CONNECTED")
"""

_NESTED_USERNS = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_DUMPABLE, CLONE_NEWUSER, CLONE_NEWNS, MNT_DETACH = 4, 0x10000000, 0x20000, 2
libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
print("unshare", libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), os.strerror(ctypes.get_errno()))
for name, text in (("setgroups", "deny"), ("uid_map", "0 1000 1"), ("gid_map", "0 1000 1")):
    try:
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    except OSError as exc:
        print(name, type(exc).__name__)
for path in ("@@EXPOSED@@/hidden.txt", "@@EXPOSED@@/hidden-dir", "@@EXPOSED@@"):
    print("umount", path, libc.umount2(path.encode(), MNT_DETACH), os.strerror(ctypes.get_errno()))
for path in ("@@EXPOSED@@/hidden.txt", "@@EXPOSED@@/hidden-dir/inner.txt"):
    try:
        print(path, open(path).read())
    except OSError as exc:
        print(path, type(exc).__name__)
"""

_GRANDCHILD = """
import os, shutil, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"x")
        sleep = shutil.which("sleep")
        if sleep:
            os.execv(sleep, ["sleep", "1000"])
        time.sleep(1000)
    os._exit(0)
assert os.read(r, 1) == b"x"  # the grandchild is up
print("parent done")
"""

_KILL_ALL = """
import os, signal, time
child = os.fork()
if child == 0:
    time.sleep(100)
    os._exit(0)
time.sleep(0.3)  # let the pool finish what it does after starting this run
os.kill(-1, signal.SIGKILL)
_, status = os.waitpid(child, 0)
print("child killed by", os.WTERMSIG(status) if os.WIFSIGNALED(status) else None)
"""

_KILL_PARENT = """
import os, signal, time
time.sleep(0.3)  # let the pool finish what it does after starting this run
ppid = os.getppid()
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGSTOP, signal.SIGKILL):
    try:
        os.kill(ppid, number)
    except OSError as exc:
        print("kill", ppid, type(exc).__name__)
time.sleep(0.2)
print("still here", flush=True)
os.killpg(os.getpgrp(), signal.SIGKILL)  # its own group: the run itself, as outside vouch
print("survived its own group's kill", flush=True)
"""

_DIRTY = """
import builtins, json, os, sys
builtins.abs = lambda x: 42
json.INJECTED = "dirty"
os.environ["VOUCH_INJECTED"] = "dirty"
sys.modules["vouch_injected"] = json
sys.path.append("/injected")
with open("/tmp/@@TOKEN@@-persist", "w") as f:
    f.write("x")
assert abs(-3) == 42
"""

_DELETE_OWN = """
import os, shutil
os.remove("main.py")
for name in os.listdir("."):
    shutil.rmtree(name) if os.path.isdir(name) else os.remove(name)
try:
    os.rmdir(os.getcwd())
except OSError as exc:
    print("rmdir cwd", type(exc).__name__)
print("left", os.listdir("."))
"""

_REMOUNT_RW = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT, MS_BIND = 32, 4096
for target in (b"/", b"@@SENTINEL@@"):
    rc = libc.mount(None, target, None, MS_REMOUNT | MS_BIND, None)
    print("remount", target, rc, os.strerror(ctypes.get_errno()))
with open("@@SENTINEL@@/keep.txt", "w") as f:
    f.write("clobbered")
"""

_WRITE_HOME = """
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
home = os.path.expanduser("~")
with open(os.path.join(home, "@@TOKEN@@-home.txt"), "w") as f:
    f.write("x")
print("wrote into", home)
"""

_WRITE_TMP = """
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
for d in ("/tmp", "/var/tmp", "/dev/shm"):
    if os.path.isdir(d):
        with open(os.path.join(d, "@@TOKEN@@-tmp.txt"), "w") as f:
            f.write("x")
print("wrote")
"""

_READ_HIDDEN = """
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
for p in ("@@EXPOSED@@/hidden.txt", "@@EXPOSED@@/hidden-dir/inner.txt"):
    try:
        print(p, repr(open(p).read()))
    except OSError as exc:
        print(p, type(exc).__name__)
print("listing", os.listdir("@@EXPOSED@@/hidden-dir"))
"""

_PRINT_ENV = """
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
print(dict(os.environ))
for p in ("/proc/self/environ", "/proc/1/environ"):
    try:
        print(p, open(p, "rb").read())
    except OSError as exc:
        print(p, type(exc).__name__)
"""

_FORK_BOMB_RETRYING = """
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
"""

CASES = [
    # --- resources ---
    case("infinite-loop", "while True:\n    pass\n", TIMEOUT),
    case(
        "sleeps-forever-ignoring-SIGTERM",
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(1000)\n",
        TIMEOUT,
    ),
    case("memory-bomb-one-allocation", "x = bytearray(1 << 40)\n", MEMORY),
    # 30 s: on a loaded machine touching 256 MB can outlast the 2 s timeout, and the case is
    # about the memory limit, not the clock.
    case(
        "memory-bomb-gradual",
        "chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))\n",
        MEMORY,
        limits=Limits(timeout_s=30, memory_mb=256),
    ),
    case("fork-bomb", "import os\nwhile True:\n    os.fork()\n", TIMEOUT, ERROR),
    case(
        "fork-bomb-that-retries",
        _FORK_BOMB_RETRYING,
        TIMEOUT,
        ERROR,
    ),
    case(
        "gigabyte-of-stdout",
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n",
        ERROR,
        Status.KILLED,
        TIMEOUT,
        limits=OUTPUT_LIMITS,
        checks=(tail_capped,),
    ),
    case(
        "gigabyte-of-stderr-raw-writes",
        "import os\nos.write(1, b'start')\nchunk = b'e' * (1 << 20)\nfor _ in range(1024):\n    os.write(2, chunk)\n",
        ERROR,
        Status.KILLED,
        TIMEOUT,
        limits=OUTPUT_LIMITS,
        checks=(tail_capped,),
    ),
    # --- writes to the host ---
    case(
        "writes-home-directory",
        _WRITE_HOME,
        OK,
        checks=(host_lacks("~/@@TOKEN@@-home.txt"),),
    ),
    case(
        "writes-root-home",
        "with open('/root/@@TOKEN@@-root.txt', 'w') as f:\n    f.write('x')\n",
        ERROR,
        checks=(host_lacks("/root/@@TOKEN@@-root.txt"), raised("PermissionError", "OSError", "FileNotFoundError")),
    ),
    case(
        "writes-tmp",
        _WRITE_TMP,
        OK,
        checks=(host_lacks("/tmp/@@TOKEN@@-tmp.txt", "/var/tmp/@@TOKEN@@-tmp.txt", "/dev/shm/@@TOKEN@@-tmp.txt"),),
    ),
    case(
        "writes-world-writable-host-dir",
        "with open('@@SENTINEL@@/keep.txt', 'w') as f:\n    f.write('clobbered')\n",
        ERROR,
        checks=(raised("OSError"),),
    ),
    case(
        "creates-file-in-world-writable-host-dir",
        "with open('@@SENTINEL@@/new-@@TOKEN@@.txt', 'w') as f:\n    f.write('x')\n",
        ERROR,
        checks=(host_lacks("@@SENTINEL@@/new-@@TOKEN@@.txt"),),
    ),
    case(
        "plants-pth-in-site-packages",
        "with open('@@SITE@@/@@TOKEN@@.pth', 'w') as f:\n    f.write('import os\\n')\n",
        ERROR,
        checks=(host_lacks("@@SITE@@/@@TOKEN@@.pth"),),
    ),
    case("remounts-root-read-write", _REMOUNT_RW, ERROR),
    case(
        "becomes-root",
        "import os\nos.setuid(0)\nprint('root')\n",
        ERROR,
        checks=(raised("PermissionError", "OSError"),),
    ),
    # --- reads what it must not ---
    case(
        "reads-hidden-paths",
        _READ_HIDDEN,
        OK,
        hidden=("@@EXPOSED@@/hidden.txt", "@@EXPOSED@@/hidden-dir"),
        checks=(no_secret, stdout_has("listing []")),
    ),
    case(
        "uncovers-hidden-paths-from-nested-user-namespace",
        _NESTED_USERNS,
        OK,
        hidden=("@@EXPOSED@@/hidden.txt", "@@EXPOSED@@/hidden-dir"),
        checks=(no_secret,),
    ),
    # As root the caller's 0600 file is another uid's to the run. Without root the run has the
    # caller's uid: a file the caller owns outside its home, its temp dirs and vouch's outputs is
    # readable (docs/design.md, "Without root"); the caller's home is covered (test_rootless.py).
    case(
        "reads-root-only-file",
        "print(open('@@EXPOSED@@/root-only.txt').read())\n",
        *((ERROR,) if os.geteuid() == 0 else (OK,)),
        checks=(no_secret, raised("PermissionError")) if os.geteuid() == 0 else (),
    ),
    case(
        "prints-api-key-env-vars",
        _PRINT_ENV,
        OK,
        host_env=API_KEYS,
        checks=(no_secret, stdout_lacks("API_KEY"), stdout_lacks("GITHUB_TOKEN")),
    ),
    # --- network ---
    case(
        "connects-to-host-loopback-tcp",
        "import socket\nsocket.create_connection(('127.0.0.1', @@PORT@@), timeout=1)\nprint('CONNECTED')\n",
        ERROR,
        checks=(no_connection,),
    ),
    case(
        "connects-to-host-abstract-unix-socket",
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0@@ABSTRACT@@')\nprint('CONNECTED')\n",
        ERROR,
        checks=(no_connection,),
    ),
    case("joins-host-network-namespace-via-proc", _SETNS, ERROR, checks=(no_connection, stdout_has("joined []"))),
    # --- signals and processes ---
    case("kills-everything-it-can", _KILL_ALL, OK, with_sleeper=True, checks=(stdout_has("child killed by 9"),)),
    case(
        "kills-its-parent-then-its-own-group",
        _KILL_PARENT,
        KILLED,
        with_sleeper=True,
        checks=(stdout_has("still here"), stdout_lacks("survived")),
    ),
    case("leaves-detached-grandchild", _GRANDCHILD, OK, checks=(stdout_has("parent done"),)),
    # --- forged outcomes ---
    case(
        "prints-fake-result-record",
        _FAKE_FRAME + "import os, sys\nsys.stdout.buffer.write(FAKE)\nprint('PASS')\nsys.stdout.flush()\nos._exit(0)\n",
        ERROR,
    ),
    case("fake-records-to-fds-3-64-then-os-exit", _SPRAY_FDS + "os._exit(0)\n", ERROR),
    case(
        "call-fake-records-to-fds-3-64-then-raise",
        _SPRAY_FDS + "def f():\n    raise RuntimeError('after spraying')\n",
        ERROR,
        call=True,
        checks=(no_value,),
    ),
    case(
        "call-fake-records-to-fds-3-64-then-os-exit",
        _SPRAY_FDS + "def f():\n    os._exit(0)\n",
        ERROR,
        call=True,
        checks=(no_value,),
    ),
    case(
        "call-fake-record-on-result-fd-then-os-exit",
        _FAKE_FRAME + "import os\ndef f():\n    os.pwrite(@@RESULT_FD@@, FAKE, 0)\n    os._exit(0)\n",
        ERROR,
        call=True,
        checks=(no_value,),
    ),
    case(
        "call-exits-0-at-import",
        "import sys\nsys.exit(0)\ndef f():\n    return True\n",
        ERROR,
        call=True,
        checks=(no_value, raised("SystemExit")),
    ),
    case("call-sys-exit-0", "import sys\ndef f():\n    sys.exit(0)\n", ERROR, call=True, checks=(no_value,)),
    case("call-os-exit-0", "import os\ndef f():\n    os._exit(0)\n", ERROR, call=True, checks=(no_value,)),
    case("raises-SystemExit-0", "print('PASS')\nraise SystemExit(0)\n", ERROR, checks=(raised("SystemExit"),)),
    case("raises-KeyboardInterrupt", "raise KeyboardInterrupt\n", ERROR, checks=(raised("KeyboardInterrupt"),)),
    case("calls-os-exit-0", "import os\nprint('PASS')\nos._exit(0)\n", ERROR),
    # A forged record the pool cannot decode is that run's error, never the pool's.
    case(
        "call-forges-record-with-invalid-base64",
        _FORGE + f"def f():\n    forge({_BAD_BASE64!r})\n",
        ERROR,
        call=True,
        checks=(no_value, reason_has("not valid data")),
    ),
    case(
        "call-forges-record-nested-100000-deep",
        _FORGE + f"def f():\n    forge({_DEEP_JSON!r})\n",
        ERROR,
        call=True,
        checks=(no_value, reason_has("not JSON")),
    ),
    case(
        "forges-record-with-unknown-tag-at-import",
        _FORGE + 'forge(b\'{"__vouch__":"object","name":"os.system"}\')\n',
        ERROR,
        checks=(no_value, reason_has("not valid data")),
    ),
    # One disk budget for the working directory and the private temp dirs together.
    case(
        "fills-workdir-then-tmp-past-one-disk-budget",
        _FILL_DISK,
        OK,
        limits=Limits(timeout_s=10, memory_mb=256, disk_mb=48, file_size_mb=64),
        checks=(stdout_has("work ok\ntmp OSError 28\nshm OSError 28\nvar OSError 28\n"),),
    ),
    case("script-sys-exit-3", "import sys\nsys.exit(3)\n", ERROR, checks=(raised("SystemExit"), exit_code(3))),
    # --- state ---
    case("monkeypatches-builtins-and-modules", _DIRTY, OK, checks=(next_run_is_clean,)),
    # The harness encodes its record with builtins the code can rebind: a run that rebinds
    # len() and then completes must still be ok, and the next run must see the real len().
    case(
        "rebinds-builtin-len",
        "import builtins\nbuiltins.len = lambda x: 42\nprint('done')\n",
        OK,
        checks=(next_run_is_clean,),
    ),
    case("deletes-its-own-files", _DELETE_OWN, OK, checks=(stdout_has("left []"),)),
    case(
        "lists-inherited-descriptors",
        "import os\nfor fd in range(4096):\n    try:\n        os.fstat(fd)\n    except OSError:\n        continue\n"
        "    print(fd)\n",
        OK,
        checks=(only_std_and_result_fds,),
    ),
]

SLEEPER = "import time\ntime.sleep(1.0)\nprint('slept')\n"


@pytest.mark.parametrize("case", CASES)
def test_adversarial(
    case: Case,
    world: World,
    executor: LocalExecutor,
    make_executor: ExecutorFactory,
    sentinel: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if case.host_env:
        for name, value in case.host_env.items():
            monkeypatch.setenv(name, value)
        executor = make_executor(workers=1)  # started now, from this environment

    source = world.fill(case.source)
    hidden = tuple(world.fill(path) for path in case.hidden)
    if case.call:
        spec = call_spec(source, limits=case.limits, hidden=hidden, name=case.id)
    else:
        spec = script_spec(source, limits=case.limits, hidden=hidden, name=case.id)

    sleeper = executor.submit(script_spec(SLEEPER, limits=Limits(timeout_s=30))) if case.with_sleeper else None
    result = executor.run(spec)

    assert result.status in case.expect, (
        result.status,
        result.reason,
        result.stdout_tail[-2000:],
        result.stderr_tail[-2000:],
    )
    if result.status is not Status.OK:
        assert result.value is None
    for check in case.checks:
        check(result, world, executor)
    if sleeper is not None:
        slept = sleeper.result()
        assert slept.ok, ("a concurrent run was hurt", slept.status, slept.reason)
        assert slept.stdout_tail == "slept\n"

    assert remaining_processes(result) == [], "the run left processes behind"
    assert_executor_works(executor)
    sentinel()


# --- around the table ----------------------------------------------------------------------


def test_exposed_file_is_readable_when_not_hidden(world: World, executor: LocalExecutor) -> None:
    """The control for 'reads-hidden-paths': without ``hidden`` the same files are readable."""
    result = run_script(
        executor,
        world.fill(
            "print(open('@@EXPOSED@@/hidden.txt').read())\nprint(open('@@EXPOSED@@/hidden-dir/inner.txt').read())\n"
        ),
    )
    assert result.ok, result
    assert world.secrets["hidden file"] in result.stdout_tail
    assert world.secrets["file in hidden dir"] in result.stdout_tail


def test_hidden_tmp_path_is_not_readable(tmp_path, executor: LocalExecutor) -> None:
    """A hidden directory under the test's temp dir, world-readable: the run reads nothing."""
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "s.txt").write_text("tmp-path-secret-content")
    for path in (tmp_path, secret_dir):
        path.chmod(0o755)
    (secret_dir / "s.txt").chmod(0o644)
    result = run_script(
        executor,
        f"try:\n    print(open({str(secret_dir / 's.txt')!r}).read())\nexcept OSError as exc:\n"
        "    print(type(exc).__name__)\n",
        hidden=(str(secret_dir),),
    )
    assert result.ok, result
    assert "tmp-path-secret-content" not in result.stdout_tail


_TWO_POOLS = """
import json, time
from vouch.exec import LocalExecutor, Limits, RunSpec, Script
def spec(source):
    return RunSpec(entry=Script("main.py"), files={"main.py": source}, limits=Limits(timeout_s=30))
victim_pool, attacker_pool = LocalExecutor(workers=1), LocalExecutor(workers=1)
victim_pool.start(); attacker_pool.start()
victim = victim_pool.submit(spec("import time\\ntime.sleep(1.5)\\nprint('slept')\\n"))
time.sleep(0.3)
attacker = attacker_pool.run(spec(ATTACK))
victim = victim.result()
print(json.dumps({"victim": victim.status.value, "victim_reason": victim.reason, "attacker": attacker.stdout_tail,
                  "attacker_status": attacker.status.value,
                  "uids": [victim.isolation.host_uid, attacker.isolation.host_uid]}))
"""


@pytest.mark.parametrize(
    "signal_call",
    ["os.kill(-1, signal.SIGKILL)", "os.kill(0, signal.SIGKILL)"],
    ids=["kill-minus-1", "kill-process-group"],
)
def test_signals_do_not_reach_a_run_of_another_executor(signal_call: str) -> None:
    """Two pools in one process: a run of one must not be able to kill a run of the other.

    Runs in a subprocess, so that if the signal gets through it hurts nothing of this session.
    """
    attack = (
        f"import os, signal\ntry:\n    {signal_call}\nexcept OSError as exc:\n"
        "    print(type(exc).__name__)\nprint('sent')\n"
    )
    outcome = run_in_subprocess(_TWO_POOLS.replace("ATTACK", repr(attack)))
    # kill(0) reaches the run's own process group, the run included, as it would outside vouch.
    assert outcome["attacker"].endswith("sent\n") or outcome["attacker_status"] == "killed", outcome
    assert outcome["victim"] == "ok", f"the other pool's run was killed: {outcome}"


def test_a_run_never_shares_its_host_uid_with_another_live_child(make_executor: ExecutorFactory) -> None:
    """While a run goes on, no other child of the zygote (a run or a spare) has its host uid.

    A process of the same host uid in the same process group can be signalled by the run
    (``kill(0, SIGKILL)`` reaches across PID namespaces), so uids must not be shared.
    """
    fresh = make_executor(workers=2)
    future = fresh.submit(script_spec(SLEEPER, limits=Limits(timeout_s=30)))
    seen = []
    while not future.done():
        seen.append(zygote_children(fresh))
        time.sleep(0.05)
    result = future.result()
    assert result.ok
    if result.isolation.rootless:
        # Without root every child has the caller's uid; each has user and PID namespaces of its own.
        assert {uid for children in seen for _, uid in children} <= {os.geteuid()}
        shared = [c for c in seen if len({_namespaces(pid) for pid, _ in c} - {None}) < len(_alive(c))]
        assert shared == [], f"children of the zygote sharing a user or PID namespace: {shared[0]}"
        return
    shared = [children for children in seen if len({uid for _, uid in children}) < len(children)]
    assert shared == [], f"children of the zygote sharing a host uid (pid, uid): {shared[0]}"


def _namespaces(pid: int) -> tuple[str, str] | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/user"), os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None  # gone meanwhile


def _alive(children: list[tuple[int, int]]) -> list[int]:
    return [pid for pid, _ in children if _namespaces(pid) is not None]


_BREAK_NEXT = """
import json
from vouch.exec import LocalExecutor, Limits, RunSpec, Script
def spec(source):
    return RunSpec(entry=Script("main.py"), files={"main.py": source}, limits=Limits(timeout_s=30))
pool = LocalExecutor(workers=2)
attacker = pool.run(spec("import os, signal, time\\ntime.sleep(0.5)\\nos.kill(0, signal.SIGKILL)\\nprint('sent')\\n"))
later = []
for _ in range(3):
    try:
        result = pool.run(spec("print('innocent')\\n"))
        later.append(result.status.value)
    except Exception as exc:
        later.append(f"{type(exc).__name__}: {exc}")
print(json.dumps({"attacker": attacker.status.value, "later": later}))
"""


def test_a_run_cannot_break_the_next_run() -> None:
    """A run that signals its process group must not take the next runs down with it.

    Runs in a subprocess, so that a spare sandbox killed there is not one of this session's.
    """
    outcome = run_in_subprocess(_BREAK_NEXT)
    assert outcome["attacker"] == "killed", outcome  # its own group: itself, as outside vouch
    assert outcome["later"] == ["ok", "ok", "ok"], outcome


def test_two_pools_in_one_process_use_distinct_host_uids(make_executor: ExecutorFactory) -> None:
    """docs/design.md: "two pools on one machine do not collide" (host uids of runs and spares)."""
    first, second = make_executor(workers=1), make_executor(workers=1)
    for pool in (first, second):
        assert run_call(pool, "def f():\n    return 1\n").ok
    uids_first = {uid for _, uid in zygote_children(first)}
    uids_second = {uid for _, uid in zygote_children(second)}
    assert uids_first and uids_second
    if os.geteuid() != 0:
        # Without root both pools give their runs the caller's uid; the namespaces keep them apart.
        assert uids_first == uids_second == {os.geteuid()}
        spaces = [{_namespaces(pid) for pid, _ in zygote_children(pool)} - {None} for pool in (first, second)]
        assert spaces[0].isdisjoint(spaces[1]), spaces
        return
    assert uids_first.isdisjoint(uids_second), (uids_first, uids_second)


_READ_SIBLINGS = """
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
runs = os.path.dirname(os.getcwd())
for i in range(1, 10):
    path = os.path.join(runs, f"run-{i}", "secret.txt")
    try:
        print(path, open(path).read())
    except OSError as exc:
        print(path, type(exc).__name__)
"""


def test_a_run_cannot_read_an_earlier_runs_kept_workdir(visible_tmp) -> None:
    """With a runs_dir the runs can see (LocalExecutor(runs_dir=...)), a kept working directory
    must not be readable by later runs of the pool (they share the slot's host uids)."""
    runs_dir = visible_tmp / "runs"
    runs_dir.mkdir()
    secret = f"kept-workdir-secret-{uuid.uuid4().hex}"
    with LocalExecutor(workers=1, runs_dir=str(runs_dir)) as pool:
        kept = run_script(pool, "print('done')\n", files={"secret.txt": secret}, keep_workdir=True)
        assert kept.ok and kept.workdir, kept
        later = [run_script(pool, _READ_SIBLINGS) for _ in range(3)]  # both host uids of the slot
    for result in later:
        assert result.ok, result
        assert "run-1/secret.txt" in result.stdout_tail  # it did try
        assert secret not in result.stdout_tail, f"run with host uid {result.isolation.host_uid} read it"


def test_call_value_comes_from_the_return_not_from_output(executor: LocalExecutor) -> None:
    """A call that prints a fake record and then returns False gets False."""
    result = run_call(
        executor,
        _FAKE_FRAME + "import sys\ndef f():\n    sys.stdout.buffer.write(FAKE)\n    print('PASS')\n    return False\n",
    )
    assert result.ok
    assert result.value is False


_LEAVE_LISTENER = """
import os, socket, time
if os.fork() == 0:
    os.setsid()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\\0vouch-slot-leak")
    s.listen(1)
    t = socket.create_server(("127.0.0.1", 47613))
    time.sleep(60)
    os._exit(0)
time.sleep(0.3)
print("left a listener")
"""

_FIND_LISTENER = """
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\\0vouch-slot-leak")
    print("CONNECTED")
except OSError as exc:
    print("refused", exc.errno)
try:
    socket.create_connection(("127.0.0.1", 47613), timeout=2)
    print("TCP CONNECTED")
except OSError as exc:
    print("tcp refused", exc.errno)
"""

_SERVE_ITSELF = """
import socket, threading
server = socket.create_server(("127.0.0.1", 0))
port = server.getsockname()[1]
threading.Thread(target=lambda: server.accept()[0].sendall(b"hello"), daemon=True).start()
with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
    print("got", client.recv(5).decode())
"""


def test_the_next_run_of_a_slot_finds_nothing_the_last_one_left_in_its_network_namespace() -> None:
    """Runs of one slot share its network namespace one after the other: a listener the first
    leaves behind dies with it, so the second cannot reach it."""
    with LocalExecutor(workers=1, warm_pytest=False) as pool:
        first = run_script(pool, _LEAVE_LISTENER)
        second = run_script(pool, _FIND_LISTENER)
    assert first.ok and "left a listener" in first.stdout_tail
    assert second.ok and "refused" in second.stdout_tail, second.stdout_tail
    assert "tcp refused" in second.stdout_tail and "TCP CONNECTED" not in second.stdout_tail, second.stdout_tail


def test_a_run_may_serve_and_connect_on_its_own_loopback() -> None:
    """A run's network namespace has its own loopback, up (as a container's): a repository's
    tests may start a local server and reach it (the host's loopback stays out of reach:
    ``connects-to-host-loopback-tcp``)."""
    with LocalExecutor(workers=1, warm_pytest=False) as pool:
        served = run_script(pool, _SERVE_ITSELF)
    assert served.ok and "got hello" in served.stdout_tail, (served.reason, served.stdout_tail, served.stderr_tail)


# --- what a run may see of vouch and its caller --------------------------------


def test_the_callers_working_directory_is_neither_importable_nor_readable_in_a_run(
    tmp_path, make_executor: ExecutorFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool started from a directory under /tmp (where earlier results may lie) gives runs
    nothing of it: it is not on sys.path, not bound back, and its modules do not import."""
    caller = tmp_path / "caller"
    caller.mkdir()
    (caller / "results.json").write_text('{"label": "positive"}')
    (caller / "callers_module.py").write_text("X = 1\n")
    monkeypatch.chdir(caller)
    executor = make_executor(workers=1)
    probe = (
        "import importlib.util, os, sys\n"
        "def f(caller):\n"
        "    return [[p for p in sys.path if p and os.path.realpath(p) == caller],\n"
        "            os.path.exists(os.path.join(caller, 'results.json')),\n"
        "            importlib.util.find_spec('callers_module') is not None]\n"
    )
    result = executor.run(call_spec(probe, args=(str(caller.resolve()),)))
    assert result.ok, (result.status, result.reason, result.stderr_tail)
    assert result.value == [[], False, False]


SHIPPED = "swe/predictions.jsonl"  # the SWE fixtures' trials, with the verdict each should get


def test_vouchs_own_package_data_is_hidden_from_every_run(executor: LocalExecutor) -> None:
    """The package ships labelled fixtures; a verifier under test must not read them, even
    when the spec hides nothing."""
    data = package_data_dir()
    assert os.path.getsize(os.path.join(data, SHIPPED)) > 0  # the control: it is there on the host
    probe = (
        "import os\n"
        "def f(data, name):\n"
        "    path = os.path.join(data, name)\n"
        "    try:\n"
        "        content = open(path).read()\n"
        "    except OSError as exc:\n"
        "        content = type(exc).__name__\n"
        "    return [os.listdir(data) if os.path.isdir(data) else None, content]\n"
    )
    result = executor.run(call_spec(probe, args=(data, SHIPPED)))
    assert result.ok, (result.status, result.reason, result.stderr_tail)
    assert result.value == [[], "FileNotFoundError"]
    assert data in result.isolation.hidden_paths


def test_paths_vouch_registers_and_its_default_outputs_are_hidden_from_every_run(
    visible_tmp, make_executor: ExecutorFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A results file registered with ``hide_in_runs`` and the default store under the
    caller's working directory read as empty in a run started after them."""
    home = visible_tmp / "project"
    (home / ".vouch").mkdir(parents=True)
    (home / ".vouch" / "store.sqlite").write_text("labels in the default store")
    results = visible_tmp / "results.json"
    results.write_text('{"labels": "in a results file"}')
    monkeypatch.chdir(home)
    monkeypatch.delenv("VOUCH_STORE", raising=False)
    hide_in_runs(results)
    executor = make_executor(workers=1)
    probe = "def f(*paths):\n    return [open(p).read() for p in paths]\n"
    store = str(home / ".vouch" / "store.sqlite")
    result = executor.run(call_spec(probe, args=(str(results), store)))
    assert result.ok, (result.status, result.reason, result.stderr_tail)
    assert result.value == ["", ""]


_UNDER_TMP = """
import json, os, sys
from vouch.exec import LocalExecutor, Limits, RunSpec, Script, hide_in_runs
site = sys.prefix  # an interpreter under /tmp: its paths are bound back over the run's private /tmp
os.makedirs(os.path.join(site, "data"), mode=0o755)
for name, text in (("visible.txt", "installed code"), ("data/answers.txt", "labelled answers")):
    with open(os.path.join(site, name), "w") as f:
        f.write(text)
    os.chmod(os.path.join(site, name), 0o644)
hide_in_runs(os.path.join(site, "data"))
probe = (
    "import sys\\n"
    "for name in ('visible.txt', 'data/answers.txt'):\\n"
    "    try:\\n"
    "        print(open(sys.argv[1] + '/' + name).read())\\n"
    "    except OSError as exc:\\n"
    "        print(type(exc).__name__)\\n"
)
with LocalExecutor(workers=1) as pool:
    spec = RunSpec(entry=Script("main.py", argv=(site,)), files={"main.py": probe}, limits=Limits(timeout_s=30))
    result = pool.run(spec)
print(json.dumps({"status": result.status.value, "stdout": result.stdout_tail}))
"""


def test_hidden_data_of_an_install_under_tmp_stays_hidden() -> None:
    """A virtual environment under /tmp is bound back over the run's private /tmp; what vouch
    hides inside it (its package data, a benchmark's answers) must be covered after that."""
    home = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        home.chmod(0o755)
        venv.EnvBuilder(system_site_packages=False, with_pip=False).create(home)
        site_dirs = [p for p in sys.path if p.endswith("site-packages")]
        pth = next((home / "lib").glob("python*/site-packages")) / "outer.pth"
        pth.write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in site_dirs))
        proc = subprocess.run(
            [str(home / "bin" / "python"), "-c", _UNDER_TMP], capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert outcome["status"] == "ok", outcome
    assert outcome["stdout"].splitlines()[0] == "installed code", outcome  # the control: bound back
    assert "labelled answers" not in outcome["stdout"], outcome


_JUDGE = """
from vouch.exec.runside import Program

def test_the_judge_outlives_the_program():
    program = Program("solution.py", "solution", answer_s=5, answers_s=10)
    try:
        outcome = program.module().attack()
    finally:
        program.close()
    assert outcome in ("denied", "sent"), outcome
"""
_ATTACKS_ITS_JUDGE = """
import os, signal, time

def attack():
    me, sent = os.getpid(), []
    others = [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in (me, 1)]
    for target in [*others, *(-pid for pid in others), -1]:
        for number in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(target, number)
                sent.append(target)
            except ProcessLookupError:
                pass
    time.sleep(0.3)
    return "sent" if sent else "denied"
"""


def test_a_program_judged_apart_cannot_stop_or_kill_its_judge(executor: LocalExecutor) -> None:
    """The judge of a program called apart (``runside.Program``) is no namespace's init, which
    would drop such signals: the program's signals to it, its group or every process fail, and
    the judge reports the test."""
    spec = RunSpec(
        Call("vouch.exec._pytest:run_pytest", args=(["-q", "-p", "no:cacheprovider", "test_judge.py"],)),
        files={"test_judge.py": _JUDGE, "solution.py": _ATTACKS_ITS_JUDGE},
        limits=Limits(timeout_s=30, memory_mb=256),
    )
    result = executor.run(spec)
    assert result.ok, (result.status, result.reason, result.stdout_tail, result.stderr_tail)
    assert result.value["outcomes"] == {"test_judge.py::test_the_judge_outlives_the_program": "passed"}, result.value
