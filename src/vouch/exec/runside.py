"""What code inside a run imports: the engine's run side, under public names.

A run's entry (``Call("package.module:function")``) is vouch's own harness code running in the
sandbox, before and around the code under test. Whatever that harness needs of the engine comes
from here, and nothing outside ``vouch.exec`` reaches into the engine's private modules for it:

- loading the run's files: ``load_module_file``; describing an exception the way the engine
  records a run's (``describe_exception``); ``judged_code_starts``, the mark that code vouch
  does not vouch for may run from now on (the harness gives it before an entry's function
  runs; calling it again is harmless);
- values across a boundary: ``to_data`` and ``from_data`` (``decode`` refuses what is not
  encoded data, ``DataError``), the one encoding every run, answer and request uses;
- the run's service channel to its caller: ``request`` (``ServiceError``; a message is at most
  ``MAX_MESSAGE_BYTES``);
- a program judged apart from its judge: ``Program`` starts it in a process of its own and calls
  it with data (``NotData``, ``ProgramGone``, ``NoAnswer``, ``NotLoaded``; ``ChildSetupError``
  when vouch could not set its process up); a caller that builds
  the program's side itself (``Serve``) answers on the channel with ``send_answer`` and reads the
  judge's requests with ``receive_request``;
- many cases in one run, each in a child process of its own: ``CaseRelay`` (each case's
  ``CaseEnd``), ``isolate_parent`` and ``outside_state``;
- pytest inside a run: ``make_collector`` (the engine's one collector plugin), ``run_pytest``
  and ``POOL_ARGS``.

The caller's side of runs (``Executor``, ``RunSpec``, pools) is ``vouch.exec``'s.
"""

from __future__ import annotations

from vouch.exec._apart import ChildSetupError, NoAnswer, NotData, NotLoaded, Program, ProgramGone, Serve
from vouch.exec._apart import receive as receive_request
from vouch.exec._apart import send as send_answer
from vouch.exec._harness import describe_exception, judged_code_starts, load_module_file
from vouch.exec._per_case import CaseEnd, CaseRelay, isolate_parent, outside_state
from vouch.exec._pytest import POOL_ARGS, make_collector, run_pytest
from vouch.exec._service import MAX_MESSAGE_BYTES, ServiceError, request
from vouch.exec._values import DataError, decode, from_data, to_data

__all__ = [
    "MAX_MESSAGE_BYTES",
    "POOL_ARGS",
    "CaseEnd",
    "CaseRelay",
    "ChildSetupError",
    "DataError",
    "NoAnswer",
    "NotData",
    "NotLoaded",
    "Program",
    "ProgramGone",
    "Serve",
    "ServiceError",
    "decode",
    "describe_exception",
    "from_data",
    "isolate_parent",
    "judged_code_starts",
    "load_module_file",
    "make_collector",
    "outside_state",
    "receive_request",
    "request",
    "run_pytest",
    "send_answer",
    "to_data",
]
