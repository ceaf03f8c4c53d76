"""What one hostile run costs the host's memory, against a trivial run measured in the same way.

Each scenario runs in a fresh interpreter that holds a one-worker pool and runs one spec; it
reports its own peak RSS (the pool's process, where result records and service requests are
decoded) and the zygote's (``VmHWM``, where they are relayed).

- ``control``: a call that returns a short list.
- ``frame``: a call that forges its own result record (this run's nonce, taken from the
  harness's stack) of ``--mb`` MiB of ``[[],[],...]``.
- ``service``: a run that writes ``--requests`` service requests of ``--mb`` MiB each (one
  JSON string) without waiting for the answers; ``service-lists`` the same with requests of
  ``[[],[],...]``.

    python benchmarks/bench_host_memory.py [--mb 8] [--requests 24] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

_SCENARIO = r"""
import json, resource, sys
from vouch.exec import Call, Limits, LocalExecutor, RunSpec

MB, REQUESTS, KIND = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
SOURCE = '''
import os, struct, sys, time

def control():
    return [1, 2, 3]

def _nonce():
    frame = sys._getframe(0)
    while frame is not None:
        value = frame.f_locals.get("nonce")
        if isinstance(value, bytes) and len(value) == 16:
            return value
        frame = frame.f_back
    raise RuntimeError("no nonce on the stack")

def frame(mb):
    items = (mb << 20) // 3
    body = b'{"outcome":"returned","value":[' + b"[]," * items + b'[]],"exception":null}'
    record = b"VOUCH-FRAME-1\\n" + _nonce() + struct.pack("<Q", len(body)) + body
    os.ftruncate(1000, 0)
    os.pwrite(1000, record, 0)
    os._exit(0)

def service(mb, requests, lists):
    if lists:
        request = b"[" + b"[]," * (((mb << 20) - 4) // 3) + b"[]]"
    else:
        request = b'"' + b"x" * ((mb << 20) - 2) + b'"'
    message = struct.pack("<I", len(request)) + request
    for _ in range(requests):
        os.write(1002, message)
    time.sleep(0.5)
    return requests
'''
entries = {
    "control": Call("v.py:control"),
    "frame": Call("v.py:frame", args=(MB,)),
    "service": Call("v.py:service", args=(MB, REQUESTS, False)),
    "service-lists": Call("v.py:service", args=(MB, REQUESTS, True)),
}
def _own_peak_kb():
    # VmHWM is this address space's peak; ru_maxrss would carry the parent's over the exec.
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])


limits = Limits(timeout_s=60, memory_mb=1024)
with LocalExecutor(workers=1, warm_pytest=False) as pool:
    spec = RunSpec(entry=entries[KIND], files={"v.py": SOURCE}, limits=limits, service=KIND.startswith("service"))
    handler = (lambda request: len(request)) if spec.service else None
    result = pool.run(spec, service=handler)
    with open(f"/proc/{pool.info.pid}/status") as f:
        zygote = int(next(line for line in f if line.startswith("VmHWM:")).split()[1])
print(json.dumps({
    "status": result.status.value,
    "reason": result.reason,
    "pool_mb": round(_own_peak_kb() / 1024, 1),
    "zygote_mb": round(zygote / 1024, 1),
}))
"""


def scenario(kind: str, mb: int, requests: int) -> dict[str, Any]:
    """Run one scenario in a fresh interpreter; its peak figures and the run's outcome."""
    proc = subprocess.run(
        [sys.executable, "-c", _SCENARIO, str(mb), str(requests), kind],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"scenario {kind} failed: {proc.stderr[-2000:]}")
    outcome: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=8, help="size of the forged record and of each request")
    parser.add_argument("--requests", type=int, default=24, help="requests the service scenario writes")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    kinds = ("control", "frame", "service", "service-lists")
    figures = {kind: scenario(kind, args.mb, args.requests) for kind in kinds}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    control = figures["control"]["pool_mb"]
    for kind, figure in figures.items():
        print(
            f"{kind:13} pool peak {figure['pool_mb']:8.1f} MB ({figure['pool_mb'] / control:5.1f}x control)"
            f"   zygote peak {figure['zygote_mb']:8.1f} MB   run: {figure['status']} {figure['reason'] or ''}"[:200]
        )


if __name__ == "__main__":
    main()
