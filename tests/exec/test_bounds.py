"""What one run can cost the host, and what it can leave for the next run of its slot.

Host memory is measured as the peak RSS (``ru_maxrss``) of a child process that holds the
pool, with bounds far from both the figure measured and the figure without the bound.
"""

from __future__ import annotations

from conftest import run_script
from vouch.exec import Limits, LocalExecutor

# --- the network namespace of a slot --------------------------------------------------------

_LEAVE_TIME_WAIT = """
import socket
server = socket.create_server(("127.0.0.1", 0))
client = socket.create_connection(server.getsockname())
accepted, _ = server.accept()
client.close()  # the side that closes first keeps the connection in TIME_WAIT for a minute
accepted.close()
print("closed")
"""

_LIST_TCP = """
rows = []
for name in ("tcp", "tcp6"):
    with open(f"/proc/net/{name}") as f:
        rows += f.read().splitlines()[1:]
print(len(rows))
"""


def test_no_run_finds_the_connections_an_earlier_run_of_its_slot_left() -> None:
    """A connection a run closed stays in the kernel (TIME_WAIT) after the run's processes are
    gone; every later run of the slot starts in a network namespace without it."""
    with LocalExecutor(workers=1, warm_pytest=False) as pool:
        results = [
            run_script(pool, source, limits=Limits(timeout_s=10))
            for source in (_LEAVE_TIME_WAIT, _LIST_TCP, _LIST_TCP, _LIST_TCP, _LEAVE_TIME_WAIT, _LIST_TCP, _LIST_TCP)
        ]
    for result in results:
        assert result.ok, (result.reason, result.stderr_tail)
    seen = [r.stdout_tail.strip() for r in results]
    assert seen == ["closed", "0", "0", "0", "closed", "0", "0"], seen
