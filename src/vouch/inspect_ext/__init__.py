"""vouch as an Inspect extension: the scorer ``vouch/audit``.

Inspect loads this package through the ``inspect_ai`` entry point vouch declares (pyproject's
``[project.entry-points.inspect_ai]``), so that ``inspect score LOG --scorer vouch/audit`` finds
the scorer by name. It needs the inspect extra (``pip install 'vouch[inspect]'``); nothing else in
vouch imports it.
"""

from vouch.inspect_ext._scorer import audit

__all__ = ["audit"]
